// tasks.yaml's own `phases:` list of titles: shown by list, show and the view, plan.md's titles winning,
// accepted by validate and kept by every writer (a status change, generate).
import { expect, test } from "bun:test"
import { flow, tempRepo } from "./helpers"
import { startView } from "./view-helpers"

const HAND_WRITTEN = `# Written by hand, no plan.md
phases:
  - number: 1
    title: Foundations
  - number: 2
    title: API layer
tasks:
  - id: setup
    title: Set up
    status: todo
    phase: 1
    instructions: x
  - id: api
    title: API
    status: todo
    phase: 2
    depends_on: [setup]
    instructions: y
`

test.concurrent("a hand-written tasks.yaml names its phases; validate accepts it, list, show and the view show the titles", async () => {
  await using dir = await tempRepo({ "tasks.yaml": HAND_WRITTEN })
  expect(await flow(dir.path, ["validate"])).toEqual({
    code: 0,
    stdout:
      "tasks.yaml: 2 tasks checked\n0 errors, 0 warnings\nParallelism:\n  critical path: 2 tasks (setup → api)\n  widest level: 1 task can run at once\n  edges: 1 for 2 tasks (0.5 per task)\n",
    stderr: "",
  })
  expect(await flow(dir.path, ["list"])).toEqual({
    code: 0,
    stderr: "",
    stdout: "Phase 1: Foundations\n[todo] setup Set up\n\nPhase 2: API layer\n[todo] api API (depends: setup)\n",
  })
  expect(JSON.parse((await flow(dir.path, ["show", "api", "--json"])).stdout).phase_title).toBe("API layer")
  await using view = await startView(dir)
  const model = (await (await view.get("/api/tasks")).json()) as { phases: { title: string }[] }
  expect(model.phases.map((p) => p.title)).toEqual(["Phase 1: Foundations", "Phase 2: API layer"])
})

test.concurrent("plan.md's title wins over tasks.yaml's for the same phase; the others stay", async () => {
  await using dir = await tempRepo({ "tasks.yaml": HAND_WRITTEN, "plan.md": "# Implementation Plan\n\n## Phase 2: Public API\n\n### 2.1 API\n- src/api.ts\n" })
  expect((await flow(dir.path, ["list"])).stdout).toBe("Phase 1: Foundations\n[todo] setup Set up\n\nPhase 2: Public API\n[todo] api API (depends: setup)\n")
})

test.concurrent("writers keep the phases list: a status change edits in place, generate keeps it with plan.md's titles", async () => {
  await using dir = await tempRepo({ "tasks.yaml": HAND_WRITTEN })
  expect((await flow(dir.path, ["done", "setup"])).code).toBe(0)
  expect(dir.read("tasks.yaml")).toStartWith(HAND_WRITTEN.slice(0, HAND_WRITTEN.indexOf("tasks:")))
  dir.write("plan.md", "# Implementation Plan\n\n## Phase 2: Public API\n\n### 2.1 API\n- src/api.ts\n\n## Phase 3: Docs\n\n### 3.1 Docs\n- README.md\n")
  const r = await flow(dir.path, ["generate"])
  expect(r.code).toBe(0)
  expect(dir.read("tasks.yaml")).toContain(
    "phases:\n  - number: 1\n    title: Foundations\n  - number: 2\n    title: Public API\n  - number: 3\n    title: Docs\ntasks:\n",
  )
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("a malformed phases list is a validate error naming the entry and its line", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": "phases:\n  - number: one\n    title: A\n  - title: B\ntasks:\n  - {id: a, title: A, status: todo, instructions: x}\n",
  })
  const r = await flow(dir.path, ["validate"])
  expect(r.code).toBe(1)
  expect(r.stdout).toContain("ERROR: Phase entry #1: number must be a number (was a string)\n  at tasks.yaml:2:13\n")
  expect(r.stdout).toContain("ERROR: Phase entry #2 is missing required field 'number'\n  at tasks.yaml:4:5\n")
})

test.concurrent("a phase number listed twice, and an entry no task uses, are validate warnings at the number", async () => {
  const yaml = `phases:
  - number: 1
    title: Foundations
  - number: 2
    title: Unused
  - {number: 1, title: Again}
tasks:
  - {id: a, title: A, status: todo, phase: 1, instructions: x}
`
  await using dir = await tempRepo({ "tasks.yaml": yaml })
  expect(await flow(dir.path, ["validate"])).toEqual({
    code: 0,
    stderr: "",
    stdout: `WARNING: Phase entry #2 names phase 2, which no task has
  at tasks.yaml:4:13
  4 |   - number: 2
    |             ^
  hint: give a task 'phase: 2', or remove the entry
WARNING: Phase 1 is listed twice in 'phases' (entries #1 and #3)
  at tasks.yaml:6:14
  6 |   - {number: 1, title: Again}
    |              ^
  hint: only the first title is shown: remove entry #3 or give it another number

tasks.yaml: 1 task checked
0 errors, 2 warnings
Parallelism:
  critical path: 1 task (a)
  widest level: 1 task can run at once
  edges: 0 for 1 task (0 per task)
`,
  })
  // The first title is the one shown.
  expect((await flow(dir.path, ["list"])).stdout).toBe("Phase 1: Foundations\n[todo] a A\n")
})

test.concurrent("a phase a subtask has counts as used", async () => {
  const yaml =
    "phases:\n  - number: 3\n    title: Late\ntasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: x\n    subtasks:\n      - {id: b, title: B, status: todo, phase: 3, instructions: y}\n"
  await using dir = await tempRepo({ "tasks.yaml": yaml })
  expect(await flow(dir.path, ["validate"])).toEqual({
    code: 0,
    stderr: "",
    stdout:
      "tasks.yaml: 2 tasks checked\n0 errors, 0 warnings\nParallelism:\n  critical path: 1 task (b)\n  widest level: 1 task can run at once\n  edges: 0 for 2 tasks (0 per task)\n",
  })
})
