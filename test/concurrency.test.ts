// Many flow processes changing one tasks.yaml at the same moment: every effect lands, cascades included,
// and the hand-written parts of the file survive.
import { expect, test } from "bun:test"
import { flow, tempRepo } from "./helpers"

const N = 20

function fixture(): string {
  const lines = ["# Concurrency fixture: this header must survive", "tasks:"]
  for (let i = 0; i < N; i++) {
    lines.push(`  # worker ${i}`, `  - id: work-${i}`, `    title: Work ${i}`, "    status: in_progress", "    instructions: do it")
    lines.push(`  - id: next-${i}`, `    title: Next ${i}`, "    status: todo", `    depends_on: [work-${i}]`, "    instructions: then this")
  }
  lines.push("  - id: final", "    title: Final", "    status: todo", `    depends_on: [${Array.from({ length: N }, (_, i) => `work-${i}`).join(", ")}]`)
  lines.push(
    "    instructions: after all of them   # trailing comment",
    "  - id: notes",
    "    title: Notes",
    "    status: in_progress",
    "    instructions: collects notes",
    "# end of file",
    "",
  )
  return lines.join("\n")
}

type TaskRecord = { id: string; status: string; completed_at?: string; ai_notes?: string[] }

test.concurrent(`${N} processes marking tasks done and ${N} adding notes, all at once, leave every effect and a valid file`, async () => {
  await using dir = await tempRepo({ "tasks.yaml": fixture() })
  // A generous lock timeout: 40 processes on a shared 2-core machine queue for the lock for a while.
  const env = { FLOW_LOCK_TIMEOUT: "120" }
  const runs = [
    ...Array.from({ length: N }, (_, i) => flow(dir.path, ["done", `work-${i}`], { env })),
    ...Array.from({ length: N }, (_, i) => flow(dir.path, ["note", "notes", `note ${i}`], { env })),
  ]
  const results = await Promise.all(runs)
  expect(results.filter((r) => r.code !== 0 || r.stderr !== "")).toEqual([])
  for (let i = 0; i < N; i++) {
    expect(results[i].stdout).toStartWith(`work-${i}: in_progress → done\nnext-${i}: todo → ready_for_agent (dependencies done)\n`)
  }
  // Exactly one of the done commands saw the last dependency of `final` complete.
  expect(results.filter((r) => r.stdout.includes("final: todo → ready_for_agent (dependencies done)\n")).length).toBe(1)

  const text = dir.read("tasks.yaml")
  const tasks = new Map((Bun.YAML.parse(text) as { tasks: TaskRecord[] }).tasks.map((t) => [t.id, t]))
  for (let i = 0; i < N; i++) {
    expect(tasks.get(`work-${i}`)!.status).toBe("done")
    expect(tasks.get(`work-${i}`)!.completed_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
    expect(tasks.get(`next-${i}`)!.status).toBe("ready_for_agent")
  }
  expect(tasks.get("final")!.status).toBe("ready_for_agent")
  expect(tasks.get("notes")!.ai_notes!.toSorted()).toEqual(Array.from({ length: N }, (_, i) => `note ${i}`).toSorted())

  expect(text).toStartWith("# Concurrency fixture: this header must survive\ntasks:\n  # worker 0\n")
  for (let i = 0; i < N; i++) expect(text).toContain(`  # worker ${i}\n  - id: work-${i}\n`)
  expect(text).toContain("    instructions: after all of them   # trailing comment\n")
  expect(text).toEndWith("# end of file\n")
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})
