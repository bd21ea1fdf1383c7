// A candidate that conflicts with one ahead of it waits unbuilt (docs/RUN.md, "Merge queue"), and its wait is
// written once: the queue looks again when the line changes, not at once and for as long as the check ahead runs.
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { flow, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

test.concurrent("a candidate waiting on a conflict ahead does not keep the queue's lead stepping while the check ahead runs", async () => {
  await using dir = await tempRepo({
    "x.txt": "base\n",
    // Long enough that a queue stepping at once after each step would take hundreds of steps.
    "flow.yaml": "verify: { command: sleep 3, timeout: 1m }\nqueue_depth: 4\n",
    "tasks.yaml": tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: sh("echo aaa > x.txt") },
      { id: "b", title: "B", status: "todo", instructions: sh("echo bbb > x.txt") },
    ]),
  })
  const trace = join(dir.path, ".flow", "trace.txt")
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script"], { env: { FLOW_TRACE: trace } })
  // Which one conflicts depends on which finished first; the script agent has no fix for it: blocked.
  expect(r.stdout).toMatch(/(a|b): merge of flow\/(a|b) into main failed: merge conflict in x\.txt/)
  expect(r.stdout).toContain("1 landed, 1 failed")
  const steps = readFileSync(trace, "utf8")
    .split("\n")
    .filter((l) => l.includes(" queue lead-step ")).length
  // A step per change of the line (submits, checks taken and done, the landing), not one per few milliseconds.
  expect(steps).toBeGreaterThan(0)
  expect(steps).toBeLessThan(30)
})
