// `flow validate` on hostile and extreme files (docs/STATUS-RULES.md, "What validate refuses"): what it
// accepts every writer can edit, and what it refuses the writers refuse too, in linear time and bounded depth;
// floods of findings are collapsed and long lines cut (their growth is measured by bench/validate-floods.ts).
import { expect, test } from "bun:test"
import { SHAPES } from "../bench/validate-floods"
import type { ValidateReport } from "../lib/model/json-shapes"
import { branchNameProblem } from "../lib/validation/branch-name"
import { flow, tempRepo } from "./helpers"

const task = (extra: string) => `tasks:\n  - id: a\n    title: A\n    status: in_progress\n${extra}`

async function both(yaml: string): Promise<{ validate: string; code: number; done: number; after: string }> {
  await using dir = await tempRepo({ "tasks.yaml": yaml })
  const v = await flow(dir.path, ["validate"])
  const done = await flow(dir.path, ["done", "a"])
  return { validate: v.stdout, code: v.code, done: done.code, after: dir.read("tasks.yaml") }
}

test.concurrent("a task with both steps and subtasks is an error at its subtasks key; done refuses the file too", async () => {
  const yaml = task(
    "    steps:\n      - id: a.1\n        instruction: one\n    subtasks:\n      - id: b\n        title: B\n        status: todo\n        instructions: x\n",
  )
  const r = await both(yaml)
  expect(r.validate).toContain("ERROR: Task 'a' has both steps and subtasks: a task has one or the other\n  at tasks.yaml:8:5")
  expect([r.code, r.done, r.after]).toEqual([1, 3, yaml])
})

test.concurrent("hostile worktree values are refused by validate with the reason, and by every writer", async () => {
  const r = await both(task("    instructions: x\n    worktree: origin/main\n"))
  expect(r.validate).toContain(
    "ERROR: Task 'a': worktree 'origin/main' is not a usable branch name: it would shadow the remote-tracking branch 'origin/main'\n  at tasks.yaml:6:15",
  )
  expect([r.code, r.done]).toEqual([1, 3])
})

test("branch names follow git's ref-name rules plus flow's narrower character set", () => {
  for (const ok of ["feature/login", "wt", "fix-1.2", "a_b/c-d", "release/2026.11"]) expect([ok, branchNameProblem(ok)]).toEqual([ok, undefined])
  for (const bad of [
    "",
    "origin/main",
    "upstream/x",
    "refs/heads/x",
    "heads/x",
    "remotes/o/x",
    "tags/v1",
    "HEAD",
    "@",
    "FETCH_HEAD",
    "-x",
    "a..b",
    "x.lock",
    "a/x.lock/b",
    "a b",
    "x/",
    "/x",
    "a//b",
    ".x",
    "a/.b",
    "x.",
    "a~1",
    "a^",
    "a:b",
    "a?",
    "a*",
    "a[b",
    "a\\b",
    "a@{1}",
    "a\u0001",
    "é",
    "x".repeat(201),
  ]) {
    expect([bad, typeof branchNameProblem(bad)]).toEqual([bad, "string"])
  }
})

test.concurrent("YAML anchors and aliases are refused at their position: flow cannot edit through them", async () => {
  const yaml =
    "tasks:\n  - id: a\n    title: A\n    status: &s in_progress\n    instructions: x\n  - id: b\n    title: B\n    status: *s\n    instructions: y\n"
  const r = await both(yaml)
  expect(r.validate).toContain("ERROR: YAML anchor '&s' (flow does not support anchors and aliases)\n  at tasks.yaml:4:16")
  expect(r.validate).toContain("ERROR: YAML alias '*s' (flow does not support anchors and aliases)\n  at tasks.yaml:8:13")
  expect([r.code, r.done, r.after]).toEqual([1, 3, yaml])
})

test.concurrent("a file with CR-only line endings is refused by validate and by done alike; CRLF is fine", async () => {
  const lf = task("    instructions: x\n")
  const cr = await both(lf.replace(/\n/g, "\r"))
  expect(cr.validate).toContain("ERROR: The file uses a lone CR (carriage return) as a line break")
  expect([cr.code, cr.done]).toEqual([1, 3])
  const crlf = await both(lf.replace(/\n/g, "\r\n"))
  expect([crlf.code, crlf.done]).toEqual([0, 0])
})

test.concurrent("nesting a million levels deep is one clear error, not a stack overflow; 40 levels of subtasks are too many", async () => {
  const r = await both(`tasks: ${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}\n`)
  expect(r.validate).toContain("ERROR: The file nests too deeply at this line (its brackets nest more than 400 deep; flow reads at most 400 levels)")
  expect(r.validate).not.toContain("call stack")
  let deep = "tasks:\n"
  for (let i = 0, ind = "  "; i < 40; i++, ind += "  ")
    deep += `${ind}${i === 0 ? "- " : ""}{id: t${i}, title: T, status: todo, instructions: x${i < 39 ? ", subtasks: [" : "}"}\n`
  deep += `${"]}".repeat(39)}\n`
  const d = await both(deep)
  expect(d.validate).toContain("ERROR: Task 't33' is nested 33 levels of subtasks deep; flow allows at most 32")
})

// ---- floods (issue 21 item 2): repeated findings are one with a count, long lines are cut around the caret ----

/** `flow validate` (and with --json) on `yaml`; tasks.yaml is left as it was. */
async function validateBoth(yaml: string): Promise<{ code: number; stdout: string; json: ValidateReport }> {
  await using dir = await tempRepo({ "tasks.yaml": yaml })
  const [text, json] = await Promise.all([flow(dir.path, ["validate"]), flow(dir.path, ["validate", "--json"])])
  expect([text.stderr, json.stderr, json.code, dir.read("tasks.yaml") === yaml]).toEqual(["", "", text.code, true])
  return { code: text.code, stdout: text.stdout, json: JSON.parse(json.stdout) }
}

const lineOf = (text: string, needle: string) => text.slice(0, text.indexOf(needle)).split("\n").length

test.concurrent("the issue's 0.5 MB file whose depends_on repeats one id 100,000 times on one line: one warning with the count, a cut excerpt", async () => {
  const yaml = SHAPES.find((s) => s.name === "depends_on repeats one id")!.make(100_000)
  const r = await validateBoth(yaml)
  const line = lineOf(yaml, "depends_on: [a, a")
  const [head, at, source, caret, ...rest] = r.stdout.split("\n")
  expect({ code: r.code, head, at, rest }).toEqual({
    code: 0,
    head: "WARNING: Task 'b' lists 'a' 100,000 times in depends_on",
    at: `  at tasks.yaml:${line}:21`,
    // The 100,000 mentions are one edge of the graph.
    rest: [
      "",
      "tasks.yaml: 502 tasks checked",
      "0 errors, 1 warning",
      "Parallelism:",
      "  critical path: 2 tasks (a → b)",
      "  widest level: 501 tasks can run at once",
      "  edges: 1 for 502 tasks (0 per task)",
      "",
    ],
  })
  // The line is 0.3 MB: the excerpt shows its start (the column is near it), cut with an ellipsis, caret under the second 'a'.
  expect(source).toBe(`  ${line} |     depends_on: [${"a, ".repeat(34)}a…`)
  expect(caret).toBe(`  ${" ".repeat(String(line).length)} | ${" ".repeat(20)}^`)
  expect(r.json.findings).toEqual([{ severity: "warning", message: "Task 'b' lists 'a' 100,000 times in depends_on", task_id: "b", line, column: 21 }])
})

test.concurrent("the issue's 2 MB list of 100,000 strings with no ':' is one error with the count; so is a top-level list", async () => {
  const yaml = SHAPES.find((s) => s.name === "tasks list of strings")!.make(100_000)
  const r = await validateBoth(yaml)
  expect({ code: r.code, stdout: r.stdout }).toEqual({
    code: 1,
    stdout: `ERROR: Task #1 must be a mapping of fields (was a string) (and 99,999 more like it in the file)
  at tasks.yaml:2:5
  2 |   - list item 00000
    |     ^

tasks.yaml: 0 tasks checked
1 error, 0 warnings
`,
  })
  expect(r.json.findings).toEqual([
    {
      severity: "error",
      message: "Task #1 must be a mapping of fields (was a string) (and 99,999 more like it in the file)",
      count: 100_000,
      line: 2,
      column: 5,
    },
  ])
  const top = await validateBoth(yaml.replace("tasks:\n", "").replaceAll("\n  - ", "\n- ").replace(/^ {2}/, ""))
  expect({ code: top.code, findings: top.json.findings.length }).toEqual({ code: 1, findings: 1 })
})

test.concurrent("deep in a long line the excerpt is a window around the column, with the caret under the finding", async () => {
  const deps = [...Array(50_000).fill("a"), "gone", ...Array(50_000).fill("a")]
  const yaml = `tasks:\n  - {id: a, title: A, status: todo, instructions: x}\n  - id: b\n    title: B\n    status: todo\n    instructions: y\n    depends_on: [${deps.join(", ")}]\n`
  const r = await validateBoth(yaml)
  const column = yaml.split("\n")[6].indexOf("gone") + 1
  const lines = r.stdout.split("\n")
  const at = lines.indexOf("ERROR: Task 'b' depends on 'gone' which doesn't exist")
  const [where, source, caret] = lines.slice(at + 1, at + 4)
  expect(where).toBe(`  at tasks.yaml:7:${column}`)
  // 120 characters of the 0.3 MB line, cut at both ends, the column a third of the way in.
  expect(source).toBe(`  7 | …${" a,".repeat(13)} gone,${" a,".repeat(25)}…`)
  expect(caret.indexOf("^")).toBe(source.indexOf("gone"))
  expect(lines[0]).toBe("WARNING: Task 'b' lists 'a' 100,000 times in depends_on")
})

test.concurrent("repeats of one kind in one task are one finding naming the first few; other tasks keep their own", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    depends_on: [x1, x2, x3, x4, x5]
  - id: b
    title: B
    status: todo
    instructions: y
    depends_on: [x1]
    steps:
      - {id: b.1, instruction: one, note: 1}
      - {id: b.2, instruction: two, note: 2, extra: 3}
`
  const r = await validateBoth(yaml)
  expect(r.json.findings.map((f) => [f.line, f.message, f.count])).toEqual([
    [6, "Task 'a' depends on 'x1' which doesn't exist (and 4 more like it in task 'a': 'x2', 'x3', 'x4', ...)", 5],
    [11, "Task 'b' depends on 'x1' which doesn't exist", undefined],
    [13, "Step 'b.1' of task 'b' has unknown field 'note' (kept as is; flow does not use it) (and 1 more like it in task 'b')", 2],
  ])
})

test.concurrent("n tasks closing n long cycles: the cycles listed stay linear in the file, the rest are counted", async () => {
  const yaml = SHAPES.find((s) => s.name === "cycles back to the first task")!.make(2_000)
  const r = await validateBoth(yaml)
  const cycles = r.json.findings.filter((f) => f.message.startsWith("Circular dependency detected"))
  const listed = cycles.reduce((n, f) => n + f.message.split(" → ").length, 0)
  const counted = cycles.filter((f) => / \(and [\d,]+ more circular dependencies, not listed\)$/.test(f.message))
  expect({ code: r.code, linear: listed <= 4 * 2_000 + 1_000, counted: counted.length, more: (counted[0]?.count ?? 0) > 1 }).toEqual({
    code: 1,
    linear: true,
    counted: 1,
    more: true,
  })
})

test.concurrent("a parent task whose own instructions hold a ```sh block is warned: flow runs its subtasks, never the parent", async () => {
  const sub =
    "    subtasks:\n      - id: c\n        title: C\n        status: todo\n        instructions: |\n          ```sh\n          echo child\n          ```\n"
  const parent = (instructions: string) => `tasks:\n  - id: p\n    title: P\n    status: todo\n    instructions: |\n${instructions}${sub}`
  const warned = await validateBoth(parent("      Set up first.\n      ```sh fix\n      npm init -y\n      ```\n"))
  expect({ code: warned.code, findings: warned.json.findings }).toEqual({
    code: 0,
    findings: [
      {
        severity: "warning",
        message: "Task 'p' has subtasks, so flow never runs it: the ```sh block in its instructions never runs",
        task_id: "p",
        hint: "move the block into the instructions of the subtask that should run it (or of a new subtask)",
        line: 5,
        column: 19,
      },
    ],
  })
  // Prose and other code blocks in a parent are context, not work: no warning; nor for the child's own block.
  const quiet = await validateBoth(parent("      Set up first.\n      ```ts\n      const x = 1\n      ```\n"))
  expect({ code: quiet.code, findings: quiet.json.findings }).toEqual({ code: 0, findings: [] })
})
