// `flow show` through the real CLI: the whole text of tasks with every optional line, subtask ids, absent
// values, --json against its shape, an unknown id with a suggestion, and an invalid file.
import { expect, test } from "bun:test"
import { ErrorReport, ShowReport } from "../lib/model/json-shapes"
import { PLAN, SAMPLE, strictJson, untouched } from "./fixtures/read-sample"
import { flow, tempRepo, tasksYaml } from "./helpers"

async function show(args: string[], files: Record<string, string> = { "tasks.yaml": SAMPLE, "plan.md": PLAN }) {
  await using dir = await tempRepo(files)
  return await untouched(dir.file("tasks.yaml"), () => flow(dir.path, ["show", ...args]))
}

const lines = (...l: string[]) => `${l.join("\n")}\n`

const EXPECTED: Record<string, string> = {
  "api-layer": lines(
    "Task: api-layer",
    "Title: API layer",
    "Status: in_progress",
    "Phase: 2",
    "Agent: claude",
    "Dependencies:",
    "  ✓ setup (done)",
    "  ○ db-schema (in_progress)",
    "Instructions:",
    "  Build the API.",
    "",
    "  Keep handlers thin.",
    "Acceptance Criteria:",
    "  - returns 201",
    "Notes:",
    "  - first note",
    "  - two",
    "    lines",
    "Validated by: api-tests",
  ),
  // A subtask two levels down: its phase is its top-level task's (the group list shows it in).
  "auth-token-rotation": lines(
    "Task: auth-token-rotation",
    "Title: Rotation",
    "Status: todo",
    "Phase: 2 (inherited from auth)",
    "Agent: none (any agent may take it)",
    "Dependencies: none",
    "Instructions:",
    "  rotate",
    "Acceptance Criteria: none",
    "Notes: none",
    "Parent: auth-token",
  ),
  // A subtask's own phase is shown as written.
  "auth-token": lines(
    "Task: auth-token",
    "Title: Auth token",
    "Status: ready_for_agent",
    "Phase: 5",
    "Agent: none (any agent may take it)",
    "Dependencies: none",
    "Instructions:",
    "  tokens",
    "Acceptance Criteria: none",
    "Notes: none",
    "Parent: auth",
    "Subtasks:",
    "  [todo] auth-token-rotation Rotation",
  ),
  setup: lines(
    "Task: setup",
    "Title: Set up the repo",
    "Status: done",
    "Phase: 1",
    "Agent: claude",
    "Dependencies: none",
    "Instructions:",
    "  Make the repo.",
    "Acceptance Criteria: none",
    "Notes: none",
    "Repo: repos/app",
    "Worktree: setup",
    "Started: 2025-01-01T00:00:00Z",
    "Completed: 2025-01-01T01:00:00Z",
  ),
  // Only steps: no instructions; a step without a status is pending; only an instruction's first line.
  "db-schema": lines(
    "Task: db-schema",
    "Title: Database schema",
    "Status: in_progress",
    "Phase: 1",
    "Agent: none (any agent may take it)",
    "Dependencies:",
    "  ✓ setup (done)",
    "Instructions: none",
    "Acceptance Criteria: none",
    "Notes: none",
    "Steps:",
    "  [done] db-schema.1 tables",
    "  [pending] db-schema.2 indexes",
  ),
  review: lines(
    "Task: review",
    "Title: Review",
    "Status: todo",
    "Phase: 3",
    "Agent: none (any agent may take it)",
    "Dependencies:",
    "  ○ api-tests (todo)",
    "Instructions:",
    "  A person reviews.",
    "Acceptance Criteria: none",
    "Notes: none",
    "Checkpoint: yes (waits for a person to run flow done)",
  ),
  "api-tests": lines(
    "Task: api-tests",
    "Title: API tests",
    "Status: todo",
    "Phase: 3",
    "Agent: none (any agent may take it)",
    "Dependencies:",
    "  ○ api-layer (in_progress)",
    "Instructions:",
    "  test it",
    "Acceptance Criteria: none",
    "Notes: none",
    "Validates: api-layer",
  ),
  auth: lines(
    "Task: auth",
    "Title: Auth",
    "Status: todo",
    "Phase: 2",
    "Agent: none (any agent may take it)",
    "Dependencies:",
    "  ✓ setup (done)",
    "Instructions:",
    "  auth",
    "Acceptance Criteria: none",
    "Notes: none",
    "Subtasks:",
    "  [ready_for_agent] auth-token Auth token",
    "    [todo] auth-token-rotation Rotation",
    "  [blocked] auth-login Login (depends: auth-token)",
  ),
  docs: lines(
    "Task: docs",
    "Title: Docs",
    "Status: assigned",
    "Phase: none",
    "Agent: codex",
    "Dependencies: none",
    "Instructions:",
    "  write",
    "Acceptance Criteria: none",
    "Notes: none",
  ),
}

for (const [id, expected] of Object.entries(EXPECTED)) {
  test.concurrent(`show ${id} prints the whole detail`, async () => {
    expect(await show([id])).toEqual({ code: 0, stdout: expected, stderr: "" })
  })
}

test.concurrent("every optional line at once, in the documented order", async () => {
  const yaml = tasksYaml([
    { id: "base", title: "Base", status: "done", instructions: "x" },
    {
      id: "all",
      title: "All",
      status: "blocked",
      phase: 1,
      agent_name: "a",
      depends_on: ["base"],
      instructions: "do it\n",
      checkpoint: true,
      validation_task_id: "check",
      repo: "repos/r",
      worktree: "wt",
      started_at: "s",
      completed_at: "c",
      subtasks: [
        { id: "child", title: "Child", status: "todo", instructions: "y", subtasks: [{ id: "grand", title: "Grand", status: "done", instructions: "z" }] },
      ],
    },
    { id: "check", title: "Check", status: "todo", instructions: "x", validation_task_id: "all" },
  ])
  expect(await show(["all"], { "tasks.yaml": yaml })).toEqual({
    code: 0,
    stdout: lines(
      "Task: all",
      "Title: All",
      "Status: blocked",
      "Phase: 1",
      "Agent: a",
      "Dependencies:",
      "  ✓ base (done)",
      "Instructions:",
      "  do it",
      "Acceptance Criteria: none",
      "Notes: none",
      "Checkpoint: yes (waits for a person to run flow done)",
      "Validated by: check",
      "Validates: check",
      "Repo: repos/r",
      "Worktree: wt",
      "Started: s",
      "Completed: c",
      "Subtasks:",
      "  [todo] child Child",
      "    [done] grand Grand",
    ),
    stderr: "",
  })
})

test.concurrent("--json: the stored record without subtasks, plus what is derived, matching ShowReport exactly", async () => {
  const result = await show(["auth", "--json"])
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
  expect(strictJson<ShowReport>(ShowReport, result.stdout)).toEqual({
    task: { id: "auth", title: "Auth", status: "todo", phase: 2, depends_on: ["setup"], instructions: "auth" },
    subtasks: [
      {
        id: "auth-token",
        title: "Auth token",
        status: "ready_for_agent",
        phase: 5,
        parent: "auth",
        depth: 1,
        depends_on: [],
        agent_name: null,
        checkpoint: false,
      },
      {
        id: "auth-token-rotation",
        title: "Rotation",
        status: "todo",
        phase: null,
        parent: "auth-token",
        depth: 2,
        depends_on: [],
        agent_name: null,
        checkpoint: false,
      },
      {
        id: "auth-login",
        title: "Login",
        status: "blocked",
        phase: null,
        parent: "auth",
        depth: 1,
        depends_on: ["auth-token"],
        agent_name: null,
        checkpoint: false,
      },
    ],
    dependencies: [{ id: "setup", status: "done" }],
    dependents: [],
    validates: [],
    parent: null,
    phase: 2,
    phase_title: "API layer and auth",
    usage: null,
    landing_wait: null,
    budget: null,
    worked_by: null,
    evidence: null,
  })
})

test.concurrent("--json for a subtask id and for a task others depend on and validate through", async () => {
  const sub = strictJson<ShowReport>(ShowReport, (await show(["auth-token-rotation", "--json"])).stdout)
  expect(sub).toMatchObject({ parent: "auth-token", phase: 2, phase_title: "API layer and auth", subtasks: [], dependents: [] })
  expect(sub.task).toEqual({ id: "auth-token-rotation", title: "Rotation", status: "todo", instructions: "rotate" })
  const api = strictJson<ShowReport>(ShowReport, (await show(["api-layer", "--json"])).stdout)
  expect(api).toMatchObject({
    dependencies: [
      { id: "setup", status: "done" },
      { id: "db-schema", status: "in_progress" },
    ],
    dependents: ["api-tests"],
    validates: [],
    parent: null,
    phase: 2,
  })
  expect(api.task.ai_notes).toEqual(["first note", "two\nlines"])
  const tests = strictJson<ShowReport>(ShowReport, (await show(["api-tests", "--json"])).stdout)
  expect(tests).toMatchObject({ dependents: ["review"], validates: ["api-layer"], phase: 3, phase_title: null })
  const docs = strictJson<ShowReport>(ShowReport, (await show(["docs", "--json"])).stdout)
  expect(docs).toMatchObject({ phase: null, phase_title: null })
})

test.concurrent("an unknown id is exit 1 naming it and the closest id; --json puts the error on stderr as JSON", async () => {
  expect(await show(["api-layr"])).toEqual({ code: 1, stdout: "", stderr: "error: no task 'api-layr' in tasks.yaml\nhint: did you mean 'api-layer'?\n" })
  expect(await show(["zzzzzzzz"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: no task 'zzzzzzzz' in tasks.yaml\nhint: run 'flow list' to see the task ids\n",
  })
  const json = await show(["auth-tokn", "--json"])
  expect({ code: json.code, stdout: json.stdout }).toEqual({ code: 1, stdout: "" })
  expect(strictJson(ErrorReport, json.stderr)).toEqual({ error: "no task 'auth-tokn' in tasks.yaml", hint: "did you mean 'auth-token'?", exit: 1 })
})

test.concurrent("a missing or extra argument is a usage error", async () => {
  expect(await show([])).toEqual({ code: 2, stdout: "", stderr: "error: missing <task_id>\nhint: usage: flow show <task_id> [--json]\n" })
  expect(await show(["a", "b"])).toEqual({ code: 2, stdout: "", stderr: "error: unexpected argument 'b'\nhint: usage: flow show <task_id> [--json]\n" })
})

test.concurrent("an invalid tasks.yaml is exit 3, even for an id that exists", async () => {
  const yaml = tasksYaml([{ id: "a", title: "A", status: "doing", instructions: "x" }])
  const result = await show(["a"], { "tasks.yaml": yaml })
  expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 3, stdout: "" })
  expect(result.stderr).toStartWith("error: tasks.yaml is invalid (1 error, 0 warnings); the first:\n")
  expect(result.stderr).toEndWith("hint: run 'flow validate' to see every problem, fix them, and try again\n")
})
