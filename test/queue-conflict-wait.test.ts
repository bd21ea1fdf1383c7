// A candidate that conflicts with one ahead of it waits unbuilt (docs/RUN.md, "Merge queue"), and its wait is
// written once: the queue looks again when the line changes, not at once and for as long as the check ahead runs.
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { flow, git, tasksYaml, tempRepo } from "./helpers"

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

test.concurrent("the candidates behind one that conflicts with a candidate ahead are built without it and checked meanwhile", async () => {
  await using dir = await tempRepo({ "x.txt": "base\n", "flow.yaml": "verify: { command: sh check.sh, timeout: 1m }\nqueue_depth: 4\n" })
  const log = join(dir.path, ".flow", "checks.log")
  // a's check waits (up to 20 s) for c's to start on top of it: c is checked while a is, not after a landed.
  dir.write(
    "check.sh",
    `L='${log}'\ns="$(cat x.txt)$(test -e c.txt && echo ' c')"\necho "start $s" >> "$L"\n` +
      `if [ "$s" = aaa ]; then i=0; while [ $i -lt 200 ] && ! grep -qx "start aaa c" "$L"; do sleep 0.1; i=$((i+1)); done; fi\necho "end $s" >> "$L"\n`,
  )
  dir.write(
    "tasks.yaml",
    tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: sh("echo aaa > x.txt") },
      // In line after a (its check has started), and conflicting with it.
      { id: "b", title: "B", status: "todo", instructions: sh(`echo bbb > x.txt\nuntil grep -qx "start aaa" '${log}' 2>/dev/null; do sleep 0.05; done`) },
      // In line after b.
      { id: "c", title: "C", status: "todo", instructions: sh(`echo c > c.txt\nuntil flow dashboard --json | grep -Eq '"task": ?"b"'; do sleep 0.1; done`) },
    ]),
  )
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["commit", "-qm", "check"])
  const r = await flow(dir.path, ["run", "--agents", "3", "--cli", "script"])
  const checks = readFileSync(log, "utf8").trim().split("\n")
  expect(r.stdout).toContain("b: merge of flow/b into main failed: merge conflict in x.txt")
  expect(checks.filter((l) => l === "start aaa c")).toHaveLength(1)
  expect(checks.indexOf("start aaa c")).toBeLessThan(checks.indexOf("end aaa"))
  expect(checks).not.toContain("start bbb")
  // Nothing starves (docs/RUN.md, "Nothing starves"): b, ahead of c, is settled before c lands.
  expect(r.stdout.indexOf("b: merge of flow/b into main failed")).toBeLessThan(r.stdout.indexOf("c: merged flow/c into main"))
  expect(r.stdout.indexOf("c: merged flow/c into main")).toBeGreaterThan(0)
  expect((await git(dir.path, ["log", "--first-parent", "--format=%s", "main"])).trim().split("\n").slice(0, 2)).toEqual(["Merge flow/c: c", "Merge flow/a: a"])
})
