// `flow validate` on hostile and extreme files (docs/STATUS-RULES.md, "What validate refuses"): what it
// accepts every writer can edit, and what it refuses the writers refuse too, in linear time and bounded depth.
import { expect, test } from "bun:test"
import { branchNameProblem } from "../lib/store/branch-name"
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
