// The merge queue's batches (docs/RUN.md, "Batches"), in files: `queue: { batch: 4 }` checks four candidates as
// one merge, and bisects a batch that fails until its failing candidate is alone. The checks here say a verdict on
// the tree (bad.txt fails it: what the history is checked with). In a run, z's check (the first candidate's, alone)
// lasts until the four tasks a to d have committed their work, and then a second: behind a check not over, a batch
// not full waits for more candidates, so the four are handed over behind it and checked as one.
import { expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { flow, git, tasksYaml, tempRepo } from "./helpers"
import { firstParents, uncheckedCommits } from "./queue-helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const VERDICT = "if [ -f bad.txt ]; then echo 'error: bad.txt breaks the build'; exit 1; fi"
const CHECK = `${VERDICT}
if [ "$FLOW_TASK_ID" = z ]; then
  touch "$GATE/checking-z"
  for t in a b c d; do
    until [ "$(git -C "$FLOW_PROJECT" rev-list --count main..flow/$t 2>/dev/null)" = 1 ]; do sleep 0.05; done
  done
  sleep 1
fi
if [ -n "$FLOW_TASK_ID" ]; then echo "$FLOW_TASK_ID" >> "$GATE/checks"; fi`

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

/** z, then four tasks a to d once z is being checked, each finishing after the one before it; `bad` writes bad.txt too. */
function tasks(bad?: string): Record<string, unknown>[] {
  const z = { id: "z", title: "Z", status: "todo", instructions: sh("echo z > z.txt") }
  return [
    z,
    ...["a", "b", "c", "d"].map((id, i) => {
      const after = `until [ -e "$GATE/${i === 0 ? "checking-z" : `done-${"abcd"[i - 1]}`}" ]; do sleep 0.05; done\n`
      const files = `echo ${id} > ${id}.txt${id === bad ? "\necho broken > bad.txt" : ""}`
      return { id, title: id.toUpperCase(), status: "todo", instructions: sh(`${after}${files}\ntouch "$GATE/done-${id}"`) }
    }),
  ]
}

/** How many times each task's own merge is in `ref`'s whole history (a batch holds its tasks' merges in its second-parent chain). */
async function mergesInHistory(repo: string, ref: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const s of (await git(repo, ["log", "--merges", "--format=%s", ref])).trim().split("\n")) {
    const id = /^Merge flow\/\S+: (\S+)$/.exec(s)?.[1]
    if (id) counts[id] = (counts[id] ?? 0) + 1
  }
  return counts
}

async function runBatch(bad?: string) {
  const dir = await tempRepo({
    "check.sh": CHECK,
    "flow.yaml": `verify: { command: sh check.sh, timeout: 1m }\nqueue: { batch: 4 }\n${bad ? "fix_attempts: 0\n" : ""}`,
    "tasks.yaml": tasksYaml(tasks(bad)),
  })
  const gate = mkdtempSync(join(tmpdir(), "flow-gate-"))
  const start = (await git(dir.path, ["rev-parse", "main"])).trim()
  const r = await flow(dir.path, ["run", "--headless", "--agents", "5", "--cli", "script"], { env: { GATE: gate } })
  const checks = readFileSync(join(gate, "checks"), "utf8").trim().split("\n")
  rmSync(gate, { recursive: true, force: true })
  return { dir, r, start, checks }
}

test.concurrent("a batch of 4 that passes: the four land with one check, as one commit on main's first parents", async () => {
  const { dir, r, start, checks } = await runBatch()
  await using _ = dir
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ z: "done", a: "done", b: "done", c: "done", d: "done" })
  // z's check and one for the four (its last candidate's, which may end first: a full batch is checked on top of
  // z while z's check still runs): no check thrown away.
  expect(checks).toHaveLength(2)
  expect(checks).toContain("z")
  expect(checks.filter((c) => c !== "z")).toHaveLength(1)
  expect(["a", "b", "c", "d"]).toContain(checks.find((c) => c !== "z")!)
  const firsts = await firstParents(dir.path, "main", start)
  expect(firsts).toHaveLength(2)
  // Its subject names the four, in the order they were handed over.
  expect((await git(dir.path, ["log", "-1", "--format=%s", firsts[0]])).trim()).toMatch(/^Merge a batch of 4 into main: [a-d], [a-d], [a-d], [a-d]$/)
  expect(await uncheckedCommits(dir.path, "main", start, VERDICT)).toEqual([])
  expect(await mergesInHistory(dir.path, "main")).toEqual({ z: 1, a: 1, b: 1, c: 1, d: 1 })
  expect(r.stdout).toMatch(/run: merge queue into main: 5 landed; .*; 0\.40 checks per merge, 0 thrown away\n/)
})

test.concurrent("a batch of 4 with one failing candidate: bisected, the failing one blocked, the other three landed, main's first parents all checked", async () => {
  const { dir, r, start, checks } = await runBatch("c")
  await using _ = dir
  expect(r.code).toBe(4)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ z: "done", a: "done", b: "done", c: "blocked", d: "done" })
  expect(dir.read("tasks.yaml")).toContain("bad.txt breaks the build")
  expect(r.stdout).toContain("failed: checked again as halves of 2 and 2")
  expect(await uncheckedCommits(dir.path, "main", start, VERDICT)).toEqual([])
  expect(await mergesInHistory(dir.path, "main")).toEqual({ z: 1, a: 1, b: 1, d: 1 })
  // z; the batch of 4; its halves (a and b pass, c and d fail); c alone (its own failure) and d on c; d on main.
  expect(checks.length).toBeLessThanOrEqual(7)
  // c's batch was split twice to find it: 4 into 2 and 2, then c and d.
  expect(r.stdout).toMatch(/run: merge queue into main: 4 landed, 1 failed;.*; the failures cost 2 bisection steps\n/)
})
