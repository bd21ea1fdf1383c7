// `flow list` through the real CLI: groups by phase with plan.md titles, subtasks under their parent, every
// status filter, a bad filter, --json against its shape, empty files, invalid files, and finding the project.
import { expect, test } from "bun:test"
import { mkdirSync } from "node:fs"
import { ListReport } from "../lib/model/json-shapes"
import { PLAN, SAMPLE, strictJson, untouched } from "./fixtures/read-sample"
import { flow, tempRepo, tasksYaml } from "./helpers"

async function list(args: string[], files: Record<string, string> = { "tasks.yaml": SAMPLE, "plan.md": PLAN }) {
  await using dir = await tempRepo(files)
  return await untouched(dir.file("tasks.yaml"), () => flow(dir.path, ["list", ...args]))
}

const FULL = `Phase 1: Foundations
[done] setup Set up the repo
[in_progress] db-schema Database schema (depends: setup)

Phase 2: API layer and auth
[in_progress] api-layer API layer (depends: setup, db-schema)
[todo] auth Auth (depends: setup)
  [ready_for_agent] auth-token Auth token
    [todo] auth-token-rotation Rotation
  [blocked] auth-login Login (depends: auth-token)

Phase 3
[todo] review Review (depends: api-tests) (checkpoint)
[todo] api-tests API tests (depends: api-layer)

No phase
[assigned] docs Docs
`

test.concurrent("groups by phase in ascending order with plan.md titles, subtasks indented under their parent, no phase last", async () => {
  expect(await list([])).toEqual({ code: 0, stdout: FULL, stderr: "" })
})

test.concurrent("without plan.md every header is just the phase number", async () => {
  const result = await list([], { "tasks.yaml": SAMPLE })
  expect(result).toEqual({ code: 0, stdout: FULL.replace("Phase 1: Foundations", "Phase 1").replace("Phase 2: API layer and auth", "Phase 2"), stderr: "" })
})

const FILTERED: Record<string, string> = {
  // auth-token is not todo: its child is indented under auth, its nearest shown ancestor.
  todo: `Phase 2: API layer and auth
[todo] auth Auth (depends: setup)
  [todo] auth-token-rotation Rotation

Phase 3
[todo] review Review (depends: api-tests) (checkpoint)
[todo] api-tests API tests (depends: api-layer)
`,
  // A subtask whose ancestors are not shown sits at the top of its parent's group.
  ready_for_agent: "Phase 2: API layer and auth\n[ready_for_agent] auth-token Auth token\n",
  assigned: "No phase\n[assigned] docs Docs\n",
  in_progress: `Phase 1: Foundations
[in_progress] db-schema Database schema (depends: setup)

Phase 2: API layer and auth
[in_progress] api-layer API layer (depends: setup, db-schema)
`,
  done: "Phase 1: Foundations\n[done] setup Set up the repo\n",
  blocked: "Phase 2: API layer and auth\n[blocked] auth-login Login (depends: auth-token)\n",
}

for (const [status, expected] of Object.entries(FILTERED)) {
  test.concurrent(`list ${status} shows only ${status} tasks, omitting empty groups`, async () => {
    expect(await list([status])).toEqual({ code: 0, stdout: expected, stderr: "" })
  })
}

test.concurrent("a filter nothing matches says so and exits 0", async () => {
  const yaml = tasksYaml([{ id: "a", title: "A", status: "todo", instructions: "x" }])
  expect(await list(["blocked"], { "tasks.yaml": yaml })).toEqual({ code: 0, stdout: "No tasks with status blocked.\n", stderr: "" })
  const json = await list(["blocked", "--json"], { "tasks.yaml": yaml })
  expect(json.code).toBe(0)
  expect(strictJson(ListReport, json.stdout)).toEqual({ phases: [] })
})

test.concurrent("an empty tasks list prints No tasks.", async () => {
  expect(await list([], { "tasks.yaml": "tasks: []\n" })).toEqual({ code: 0, stdout: "No tasks.\n", stderr: "" })
  expect(await list(["todo"], { "tasks.yaml": "tasks: []\n" })).toEqual({ code: 0, stdout: "No tasks with status todo.\n", stderr: "" })
})

test.concurrent("a status that is not one of SPEC 3.1's is a usage error listing the valid ones, before the file is read", async () => {
  const hint = "valid statuses: todo, ready_for_agent, assigned, in_progress, done, blocked (usage: flow list [<status>] [--json])"
  expect(await list(["doing"])).toEqual({ code: 2, stdout: "", stderr: `error: 'doing' is not a task status\nhint: did you mean 'done'? ${hint}\n` })
  expect(await list(["waiting"])).toEqual({ code: 2, stdout: "", stderr: `error: 'waiting' is not a task status\nhint: ${hint}\n` })
  // Even with an invalid (or missing) tasks.yaml the mistake on the command line is reported first.
  expect((await list(["TODO"], { "tasks.yaml": "tasks: nope\n" })).code).toBe(2)
  expect(await list(["todo", "done"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unexpected argument 'done'\nhint: usage: flow list [<status>] [--json]\n",
  })
})

test.concurrent("--json gives every group with its header and every task as a TaskSummary, in the order printed", async () => {
  const result = await list(["--json"])
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
  const report = strictJson<ListReport>(ListReport, result.stdout)
  expect(report.phases.map((g) => [g.phase, g.title, g.tasks.map((t) => t.id)])).toEqual([
    [1, "Phase 1: Foundations", ["setup", "db-schema"]],
    [2, "Phase 2: API layer and auth", ["api-layer", "auth", "auth-token", "auth-token-rotation", "auth-login"]],
    [3, "Phase 3", ["review", "api-tests"]],
    [null, "No phase", ["docs"]],
  ])
  const byId = Object.fromEntries(report.phases.flatMap((g) => g.tasks).map((t) => [t.id, t]))
  expect(byId["auth-token"]).toEqual({
    id: "auth-token",
    title: "Auth token",
    status: "ready_for_agent",
    phase: 5,
    parent: "auth",
    depth: 1,
    depends_on: [],
    agent_name: null,
    checkpoint: false,
    worked_by: null,
  })
  expect(byId["auth-token-rotation"]).toMatchObject({ parent: "auth-token", depth: 2, phase: null })
  expect(byId.review).toMatchObject({ checkpoint: true, depends_on: ["api-tests"], parent: null, depth: 0 })
  expect(byId.docs).toMatchObject({ agent_name: "codex", phase: null })
})

test.concurrent("--json with a filter keeps each task's real parent and depth", async () => {
  const report = strictJson<ListReport>(ListReport, (await list(["todo", "--json"])).stdout)
  expect(report.phases.map((g) => [g.phase, g.tasks.map((t) => `${t.id}@${t.depth}`)])).toEqual([
    [2, ["auth@0", "auth-token-rotation@2"]],
    [3, ["review@0", "api-tests@0"]],
  ])
})

test.concurrent("an invalid tasks.yaml is exit 3 with the first problem, and nothing on stdout", async () => {
  const yaml = tasksYaml([{ id: "a", title: "A", status: "todo", instructions: "x", depends_on: ["nope"] }])
  const result = await list([], { "tasks.yaml": yaml })
  expect(result.code).toBe(3)
  expect(result.stdout).toBe("")
  expect(result.stderr).toStartWith("error: tasks.yaml is invalid (1 error, 0 warnings); the first:\n")
  expect(result.stderr).toContain("Task 'a' depends on 'nope' which doesn't exist")
  expect(result.stderr).toEndWith("hint: run 'flow validate' to see every problem, fix them, and try again\n")
})

test.concurrent("runs from a subfolder of the project and from outside it with -C", async () => {
  await using dir = await tempRepo({ "tasks.yaml": SAMPLE, "plan.md": PLAN })
  mkdirSync(dir.file("src/deep"), { recursive: true })
  expect(await flow(dir.file("src/deep"), ["list"])).toEqual({ code: 0, stdout: FULL, stderr: "" })
  await using elsewhere = await tempRepo()
  expect(await flow(elsewhere.path, ["-C", dir.path, "list"])).toEqual({ code: 0, stdout: FULL, stderr: "" })
  expect(await flow(elsewhere.path, ["-C", dir.file("src"), "list", "done"])).toEqual({ code: 0, stdout: FILTERED.done, stderr: "" })
})

test.concurrent("phase headings: other separators, a heading without a title, the first title of a number wins", async () => {
  const yaml = tasksYaml([1, 2, 3, 4, 2.5].map((n) => ({ id: `t${String(n).replace(".", "-")}`, title: `T${n}`, status: "todo", phase: n, instructions: "x" })))
  const plan = "## Phase 1 - Dash\n## phase 2. Dot\n## Phase 2: Later duplicate\n## Phase 3\n## Phase 2.5 — Em dash\n### Phase 4: level three is not a phase\n"
  expect(await list([], { "tasks.yaml": yaml, "plan.md": plan })).toEqual({
    code: 0,
    stdout:
      "Phase 1: Dash\n[todo] t1 T1\n\nPhase 2: Dot\n[todo] t2 T2\n\nPhase 2.5: Em dash\n[todo] t2-5 T2.5\n\nPhase 3\n[todo] t3 T3\n\nPhase 4\n[todo] t4 T4\n",
    stderr: "",
  })
})
