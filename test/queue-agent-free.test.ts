// A task waiting in the merge queue holds no agent (docs/RUN.md, "Scheduling"): its agent takes the next task
// while the check runs, and a failed check sends the task back to that same agent once it is free, never past
// `agents: N`.
import { expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { flow, git, tasksYaml, tempRepo } from "./helpers"
import { mergesPerTask } from "./queue-helpers"

const sh = (lines: string, label = "") => `\`\`\`sh${label ? ` ${label}` : ""}\n${lines}\n\`\`\``
const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

test.concurrent("one agent: the second task starts while the first task's check runs", async () => {
  const gate = mkdtempSync(join(tmpdir(), "flow-gate-"))
  // a's check waits (at most 20 s) for b's agent to have started, and says whether it saw it; b's check passes.
  const check = `if [ "$FLOW_TASK_ID" = a ]; then
  for i in $(seq 400); do if [ -e "$GATE/b-started" ]; then touch "$GATE/seen"; break; fi; sleep 0.05; done
fi
`
  await using dir = await tempRepo({
    "check.sh": check,
    "flow.yaml": "verify: { command: sh check.sh, timeout: 1m }\n",
    "tasks.yaml": tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") },
      { id: "b", title: "B", status: "todo", instructions: sh('touch "$GATE/b-started"\necho b > b.txt') },
    ]),
  })
  try {
    const r = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { env: { GATE: gate } })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(existsSync(join(gate, "seen"))).toBe(true)
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done", b: "done" })
    expect(await mergesPerTask(dir.path, "main")).toEqual({ a: 1, b: 1 })
  } finally {
    rmSync(gate, { recursive: true, force: true })
  }
})

test.concurrent("one agent: a failed check's fix round waits for the agent, which works on one task at a time", async () => {
  const gate = mkdtempSync(join(tmpdir(), "flow-gate-"))
  // Every turn of the one agent logs its start and end; b's work lasts long enough to overlap a's failed check.
  const turn = (what: string, body: string) => `echo "start ${what}" >> "$GATE/turns"\n${body}\nsleep 1\necho "end ${what}" >> "$GATE/turns"`
  await using dir = await tempRepo({
    // A tree with a.txt but no fixed.txt fails: a's first candidate fails, its fix lands.
    "check.sh": "if [ -f a.txt ] && [ ! -f fixed.txt ]; then echo 'error: a.txt needs fixed.txt'; exit 1; fi\n",
    "flow.yaml": "verify: { command: sh check.sh, timeout: 1m }\n",
    "tasks.yaml": tasksYaml([
      {
        id: "a",
        title: "A",
        status: "todo",
        instructions: `${sh(turn("a", "echo a > a.txt"))}\n${sh(turn("a-fix", `echo ok > fixed.txt\ngit add fixed.txt\ngit -c user.name=agent -c user.email=agent@flow.invalid commit -qm fix`), "fix")}`,
      },
      { id: "b", title: "B", status: "todo", instructions: sh(turn("b", "echo b > b.txt\nsleep 2")) },
    ]),
  })
  try {
    const r = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { env: { GATE: gate } })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout).toContain("a: sent back to its agent (attempt 1 of 2)")
    const turns = readFileSync(join(gate, "turns"), "utf8").trim().split("\n")
    // b started while a waited in the queue, and a's fix came only after b's turn ended: one turn at a time.
    expect(turns).toEqual(["start a", "end a", "start b", "end b", "start a-fix", "end a-fix"])
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done", b: "done" })
    expect(await mergesPerTask(dir.path, "main")).toEqual({ a: 1, b: 1 })
    expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
  } finally {
    rmSync(gate, { recursive: true, force: true })
  }
})
