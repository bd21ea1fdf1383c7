// `flow validate` through the real CLI: every message shape with its position and excerpt, the summary,
// the exit codes, the --json report, very long dependency chains, and that tasks.yaml is never written.
import { expect, test } from "bun:test"
import { mkdirSync, readFileSync, realpathSync, statSync } from "node:fs"
import { join } from "node:path"
import { type } from "arktype"
import { size } from "../lib/agents/prompt-limit"
import { ErrorReport, ValidateReport } from "../lib/model/json-shapes"
import { flow, tempRepo, type Result } from "./helpers"

/** The report type with no extra keys allowed anywhere: the JSON must be exactly the documented shape. */
const StrictReport = ValidateReport.onDeepUndeclaredKey("reject")
const StrictError = ErrorReport.onDeepUndeclaredKey("reject")

/**
 * Runs `flow validate <args>` on a project holding `yaml` and checks that tasks.yaml was left byte for byte. A
 * valid graph's output ends with its parallelism; `parallelism: false` leaves it out, for the tests of findings.
 */
async function validate(yaml: string, args: string[] = [], { parallelism = false } = {}): Promise<Result> {
  await using dir = await tempRepo({ "tasks.yaml": yaml })
  const before = readFileSync(dir.file("tasks.yaml"))
  const mtime = statSync(dir.file("tasks.yaml")).mtimeMs
  const result = await flow(dir.path, ["validate", ...args])
  expect(readFileSync(dir.file("tasks.yaml")).equals(before)).toBe(true)
  expect(statSync(dir.file("tasks.yaml")).mtimeMs).toBe(mtime)
  return parallelism ? result : { ...result, stdout: result.stdout.replace(/Parallelism:\n(?: {2}.*\n)+/, "") }
}

/** The parsed --json report, checked against its arktype shape. */
function report(result: Result): ValidateReport {
  const parsed = JSON.parse(result.stdout)
  const checked = StrictReport(parsed)
  if (checked instanceof type.errors) throw new Error(`--json output does not match ValidateReport: ${checked.summary}`)
  return parsed
}

const summary = (tasks: number, counts: string) => `tasks.yaml: ${tasks} task${tasks === 1 ? "" : "s"} checked\n${counts}\n`

const VALID = `# a hand-written file using every field
tasks:
  - id: setup
    title: Set up the repo
    status: done
    phase: 1
    instructions: |
      Make the repo.
    repo: repos/app
    worktree: setup
    agent_name: claude
    acceptance_criteria: [builds]
    ai_notes: []
    checkpoint: false
    started_at: "2025-01-01T00:00:00Z"
    completed_at: "2025-01-01T01:00:00Z"
  - id: api-layer
    title: API layer
    status: in_progress
    phase: 2
    depends_on: [setup]
    validation_task_id: api-tests
    instructions: build it
    subtasks:
      - id: auth-token
        title: Auth token
        status: ready_for_agent
        instructions: tokens
        depends_on: [setup]
        subtasks:
          - id: auth-token-rotation
            title: Rotation
            status: blocked
            instructions: rotate
            worktree: rotation
  - id: api-tests
    title: API tests
    status: todo
    depends_on: [api-layer, auth-token-rotation]
    steps:
      - id: api-tests.1
        instruction: routes
        status: done
        acceptance_criteria: [200 on GET /]
        started_at: "2025-01-02T00:00:00Z"
        completed_at: "2025-01-02T00:30:00Z"
      - id: api-tests.2
        instruction: handlers
        status: pending
  - {id: docs, title: Docs, status: assigned, instructions: write, depends_on: [api-tests]}
`

test.concurrent("a valid file with every field, steps and nested subtasks passes with exit 0", async () => {
  // The critical path runs through a subtask of a subtask; the one done task of it has its time.
  expect(await validate(VALID, [], { parallelism: true })).toEqual({
    code: 0,
    stdout: `${summary(6, "0 errors, 0 warnings")}Parallelism:
  critical path: 4 tasks (setup → auth-token-rotation → api-tests → docs), 1h for the 1 of 4 with a known time
  widest level: 1 task can run at once
  edges: 5 for 6 tasks (0.83 per task)
`,
    stderr: "",
  })
})

test.concurrent("an empty tasks list is valid", async () => {
  expect(await validate("tasks: []\n")).toEqual({ code: 0, stdout: summary(0, "0 errors, 0 warnings"), stderr: "" })
})

test.concurrent("a dependency on a task that does not exist is reported in the spec's words, at the dependency", async () => {
  const yaml = `tasks:
  - id: api-layer
    title: API
    status: todo
    instructions: build it
    depends_on: [auth-service]
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'api-layer' depends on 'auth-service' which doesn't exist
  at tasks.yaml:6:18
  6 |     depends_on: [auth-service]
    |                  ^
  hint: add the missing task or correct/remove the dependency

${summary(1, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a missing dependency close to an existing id suggests it", async () => {
  const yaml = `tasks:
  - id: auth-service
    title: Auth
    status: todo
    instructions: x
  - id: api-layer
    title: API
    status: todo
    instructions: x
    depends_on:
      - auth-servce
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'api-layer' depends on 'auth-servce' which doesn't exist
  at tasks.yaml:11:9
  11 |       - auth-servce
     |         ^
  hint: did you mean 'auth-service'? Otherwise add the missing task or remove the dependency

${summary(2, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a two-task cycle is reported once with its whole path, at the edge that closes it", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    depends_on: [b]
  - id: b
    title: B
    status: todo
    instructions: x
    depends_on: [a]
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Circular dependency detected: a → b → a
  at tasks.yaml:11:18
  11 |     depends_on: [a]
     |                  ^
  hint: correct or remove one of these dependencies

${summary(2, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a three-task cycle is reported once with every task on the path", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    depends_on: [c]
  - id: b
    title: B
    status: todo
    instructions: x
    depends_on: [a]
  - id: c
    title: C
    status: todo
    instructions: x
    depends_on: [b]
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Circular dependency detected: a → c → b → a
  at tasks.yaml:11:18
  11 |     depends_on: [a]
     |                  ^
  hint: correct or remove one of these dependencies

${summary(3, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("separate cycles are each reported once, and a task that only leads into a cycle is not on its path", async () => {
  const yaml = `tasks:
  - {id: entry, title: E, status: todo, instructions: x, depends_on: [a]}
  - {id: a, title: A, status: todo, instructions: x, depends_on: [b]}
  - {id: b, title: B, status: todo, instructions: x, depends_on: [a, entry-free]}
  - {id: entry-free, title: F, status: todo, instructions: x}
  - {id: p, title: P, status: todo, instructions: x, depends_on: [q]}
  - {id: q, title: Q, status: todo, instructions: x, depends_on: [r]}
  - {id: r, title: R, status: todo, instructions: x, depends_on: [p]}
`
  const result = await validate(yaml, ["--json"])
  expect(result.code).toBe(1)
  expect(result.stderr).toBe("")
  expect(report(result).findings).toEqual([
    {
      severity: "error",
      message: "Circular dependency detected: a → b → a",
      task_id: "a",
      hint: "correct or remove one of these dependencies",
      line: 4,
      column: 67,
    },
    {
      severity: "error",
      message: "Circular dependency detected: p → q → r → p",
      task_id: "p",
      hint: "correct or remove one of these dependencies",
      line: 8,
      column: 67,
    },
  ])
})

test.concurrent("duplicate task ids are errors at the second id, also between a task and a nested subtask", async () => {
  const yaml = `tasks:
  - id: setup
    title: A
    status: todo
    instructions: x
  - id: setup
    title: B
    status: todo
    instructions: x
  - id: parent
    title: P
    status: todo
    instructions: x
    subtasks:
      - id: child
        title: C
        status: todo
        instructions: x
        subtasks:
          - id: parent
            title: Deep
            status: todo
            instructions: x
`
  const hint = "  hint: ids must be unique across the whole file, subtasks included: rename one of them\n"
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Duplicate task id 'setup'
  at tasks.yaml:6:9
  6 |   - id: setup
    |         ^
${hint}ERROR: Duplicate task id 'parent'
  at tasks.yaml:20:17
  20 |           - id: parent
     |                 ^
${hint}
${summary(5, "2 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("missing required fields name the task by id, or by its number when the id is missing", async () => {
  const yaml = `tasks:
  - title: No id
    status: todo
    instructions: x
  - id: no-title
    status: todo
    instructions: x
  - id: parent
    title: P
    instructions: x
    subtasks:
      - title: Child without id
        status: todo
        instructions: x
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task #1 is missing required field 'id'
  at tasks.yaml:2:5
  2 |   - title: No id
    |     ^
ERROR: Task 'no-title' is missing required field 'title'
  at tasks.yaml:5:5
  5 |   - id: no-title
    |     ^
ERROR: Task 'parent' is missing required field 'status'
  at tasks.yaml:8:5
  8 |   - id: parent
    |     ^
ERROR: Subtask #1 of task 'parent' is missing required field 'id'
  at tasks.yaml:12:9
  12 |       - title: Child without id
     |         ^

${summary(4, "4 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("instructions are required, unless the task has steps", async () => {
  const yaml = `tasks:
  - id: with-steps
    title: S
    status: todo
    steps:
      - id: with-steps.1
        instruction: first
  - id: without
    title: W
    status: todo
  - id: empty-steps
    title: E
    status: todo
    steps: []
`
  const hint = "  hint: add 'instructions:' with what to do, or give the task 'steps'\n"
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'without' is missing required field 'instructions'
  at tasks.yaml:8:5
  8 |   - id: without
    |     ^
${hint}ERROR: Task 'empty-steps' is missing required field 'instructions'
  at tasks.yaml:11:5
  11 |   - id: empty-steps
     |     ^
${hint}
${summary(3, "2 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a task status and a step status outside their lists are errors that list the allowed values", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: doing
    steps:
      - id: a.1
        instruction: go
        status: finished
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'a': status must be one of todo, ready_for_agent, assigned, in_progress, done, blocked (was "doing")
  at tasks.yaml:4:13
  4 |     status: doing
    |             ^
ERROR: Step 'a.1' of task 'a': status must be one of pending, in_progress, done (was "finished")
  at tasks.yaml:8:17
  8 |         status: finished
    |                 ^

${summary(1, "2 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("ids that are not kebab-case are errors with the kebab-case id they likely meant", async () => {
  const yaml = `tasks:
  - id: API_Layer
    title: A
    status: todo
    instructions: x
  - id: db--setup
    title: B
    status: todo
    instructions: x
  - id: "-lead"
    title: C
    status: todo
    instructions: x
  - id: ""
    title: D
    status: todo
    instructions: x
`
  const hint = (id: string) => `  hint: ids become branch and folder names: use lowercase letters, digits and single hyphens, like '${id}'\n`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task id 'API_Layer' is not kebab-case
  at tasks.yaml:2:9
  2 |   - id: API_Layer
    |         ^
${hint("api-layer")}ERROR: Task id 'db--setup' is not kebab-case
  at tasks.yaml:6:9
  6 |   - id: db--setup
    |         ^
${hint("db-setup")}ERROR: Task id '-lead' is not kebab-case
  at tasks.yaml:10:9
  10 |   - id: "-lead"
     |         ^
${hint("lead")}ERROR: Task id '' is not kebab-case
  at tasks.yaml:14:9
  14 |   - id: ""
     |         ^
${hint("my-task")}
${summary(4, "4 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("duplicate step ids are errors, within a task and across tasks; a badly formed step id too", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    steps:
      - id: a.1
        instruction: one
      - id: a.1
        instruction: two
  - id: b
    title: B
    status: todo
    steps:
      - id: a.1
        instruction: three
      - id: B.2
        instruction: four
`
  const hint = "  hint: step ids must be unique across the file: use '<task_id>.<n>'\n"
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Duplicate step id 'a.1'
  at tasks.yaml:8:13
  8 |       - id: a.1
    |             ^
${hint}ERROR: Duplicate step id 'a.1'
  at tasks.yaml:14:13
  14 |       - id: a.1
     |             ^
${hint}ERROR: Step #2 of task 'b': step id 'B.2' is not of the form '<task_id>.<n>'
  at tasks.yaml:16:13
  16 |       - id: B.2
     |             ^

${summary(2, "3 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a validation_task_id must name a task, and not the task itself; a subtask counts", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    validation_task_id: qa
  - id: b
    title: B
    status: todo
    instructions: x
    validation_task_id: b
  - id: c
    title: C
    status: todo
    instructions: x
    validation_task_id: c-check
    subtasks:
      - {id: c-check, title: Check, status: todo, instructions: x}
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'a' has validation_task_id 'qa' which doesn't exist
  at tasks.yaml:6:25
  6 |     validation_task_id: qa
    |                         ^
  hint: add the validating task or correct/remove validation_task_id
ERROR: Task 'b' names itself as its validation task
  at tasks.yaml:11:25
  11 |     validation_task_id: b
     |                         ^

${summary(4, "2 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a task that depends on itself is an error, not a cycle", async () => {
  const yaml = `tasks:
  - id: loop
    title: L
    status: todo
    instructions: x
    depends_on: [loop]
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'loop' depends on itself
  at tasks.yaml:6:18
  6 |     depends_on: [loop]
    |                  ^
  hint: remove 'loop' from its depends_on

${summary(1, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("wrong types are errors naming the task and the field", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    phase: one
    depends_on: b
    acceptance_criteria: done
    ai_notes: [1]
  - id: b
    title: 7
    status: todo
    instructions: x
    subtasks: {id: c}
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'a': phase must be a number (was a string)
  at tasks.yaml:6:12
  6 |     phase: one
    |            ^
ERROR: Task 'a': depends_on must be an array (was string)
  at tasks.yaml:7:17
  7 |     depends_on: b
    |                 ^
ERROR: Task 'a': acceptance_criteria must be an array (was string)
  at tasks.yaml:8:26
  8 |     acceptance_criteria: done
    |                          ^
ERROR: Task 'a': ai_notes[0] must be a string (was a number)
  at tasks.yaml:9:16
  9 |     ai_notes: [1]
    |                ^
ERROR: Task 'b': title must be a string (was a number)
  at tasks.yaml:11:12
  11 |     title: 7
     |            ^
ERROR: Task 'b': subtasks must be an array (was object)
  at tasks.yaml:14:15
  14 |     subtasks: {id: c}
     |               ^

${summary(2, "6 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a task that is not a mapping, and an id that is not a string, are errors naming the task by number", async () => {
  const yaml = `tasks:
  - just a string
  - id: 12
    title: A
    status: todo
    instructions: x
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task #1 must be a mapping of fields (was a string)
  at tasks.yaml:2:5
  2 |   - just a string
    |     ^
ERROR: Task #2: id must be a string (was a number)
  at tasks.yaml:3:9
  3 |   - id: 12
    |         ^

${summary(1, "2 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a YAML syntax error is reported with line:column, the source line and a caret", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    depends_on: [b
  - id: b
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: YAML: Flow sequence in block collection must be sufficiently indented and end with a ]
  at tasks.yaml:7:3
  7 |   - id: b
    |   ^
  hint: fix the YAML syntax at that position (indentation, a missing colon, or quotes around text with ': ')

${summary(0, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a missing colon and tab indentation are syntax errors at their line", async () => {
  const hint = "  hint: fix the YAML syntax at that position (indentation, a missing colon, or quotes around text with ': ')\n"
  expect(await validate("tasks:\n  - id: a\n    title A\n    status: todo\n")).toEqual({
    code: 1,
    stdout: `ERROR: YAML: Implicit keys need to be on a single line
  at tasks.yaml:3:5
  3 |     title A
    |     ^
${hint}
${summary(0, "1 error, 0 warnings")}`,
    stderr: "",
  })
  // The excerpt shows a tab as one space, so the caret stays under it.
  expect(await validate("tasks:\n  - id: a\n\ttitle: A\n")).toEqual({
    code: 1,
    stdout: `ERROR: YAML: Tabs are not allowed as indentation
  at tasks.yaml:3:1
  3 |  title: A
    | ^
${hint}
${summary(0, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("an unterminated quote is reported where it opens, not where the file ends", async () => {
  expect(await validate('tasks:\n  - id: a\n    title: "Set up\n    status: todo\n    instructions: x\n')).toEqual({
    code: 1,
    stdout: `ERROR: YAML: this " quote is never closed
  at tasks.yaml:3:12
  3 |     title: "Set up
    |            ^
  hint: fix the YAML syntax at that position (indentation, a missing colon, or quotes around text with ': ')

${summary(0, "1 error, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("a file without a top-level tasks list is one error, pointing at what is there instead", async () => {
  const hint = "  hint: start the file with 'tasks:' followed by a list of tasks (run 'flow generate' to make one from plan.md)\n"
  const cases: [string, string][] = [
    ["name: x\n", "  at tasks.yaml:1:1\n  1 | name: x\n    | ^\n"],
    ["tasks: 3\n", "  at tasks.yaml:1:8\n  1 | tasks: 3\n    |        ^\n"],
    ["tasks:\n", "  at tasks.yaml:1:7\n  1 | tasks:\n    |       ^\n"],
    ["- id: a\n- id: b\n", "  at tasks.yaml:1:1\n  1 | - id: a\n    | ^\n"],
  ]
  for (const [yaml, at] of cases) {
    expect(await validate(yaml)).toEqual({
      code: 1,
      stdout: `ERROR: The file has no top-level 'tasks' list\n${at}${hint}\n${summary(0, "1 error, 0 warnings")}`,
      stderr: "",
    })
  }
})

test.concurrent("an empty file, or one with only a comment, has no tasks list and no position to show", async () => {
  for (const yaml of ["", "# nothing yet\n", "\n\n"]) {
    expect(await validate(yaml)).toEqual({
      code: 1,
      stdout: `ERROR: The file has no top-level 'tasks' list
  hint: start the file with 'tasks:' followed by a list of tasks (run 'flow generate' to make one from plan.md)

${summary(0, "1 error, 0 warnings")}`,
      stderr: "",
    })
  }
})

test.concurrent("unknown keys and a dependency listed twice are warnings: reported at the (first) key, one per record, exit 0", async () => {
  const yaml = `version: 2
tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    priority: high
    dependson: [b]
    steps:
      - id: a.1
        instruction: go
        note: hi
  - id: b
    title: B
    status: todo
    instructions: x
    depends_on: [a, a]
`
  expect(await validate(yaml)).toEqual({
    code: 0,
    stdout: `WARNING: Unknown top-level key 'version' (kept as is)
  at tasks.yaml:1:1
  1 | version: 2
    | ^
WARNING: Task 'a' has unknown fields 'priority' and 'dependson' (kept as is; flow does not use them)
  at tasks.yaml:7:5
  7 |     priority: high
    |     ^
  hint: 'dependson': did you mean 'depends_on'?
WARNING: Step 'a.1' of task 'a' has unknown field 'note' (kept as is; flow does not use it)
  at tasks.yaml:12:9
  12 |         note: hi
     |         ^
WARNING: Task 'b' lists 'a' twice in depends_on
  at tasks.yaml:17:21
  17 |     depends_on: [a, a]
     |                     ^

${summary(2, "0 errors, 4 warnings")}`,
    stderr: "",
  })
})

test.concurrent("dependencies resolve against the whole file: subtasks at any depth and tasks further down", async () => {
  const yaml = `tasks:
  - id: api
    title: API
    status: todo
    instructions: x
    depends_on: [rotation]
    subtasks:
      - id: api-auth
        title: Auth
        status: todo
        instructions: x
        depends_on: [schema]
        subtasks:
          - id: rotation
            title: Rotation
            status: todo
            instructions: x
            depends_on: [later]
  - id: schema
    title: Schema
    status: todo
    instructions: x
  - id: later
    title: Later
    status: todo
    instructions: x
    depends_on: [api-auth]
`
  // later → api-auth is fine; api-auth → schema is fine; the file has no cycle because rotation depends on
  // later and later on api-auth, which is rotation's parent, not rotation itself.
  expect(await validate(yaml)).toEqual({ code: 0, stdout: summary(5, "0 errors, 0 warnings"), stderr: "" })
})

test.concurrent("a subtask that depends on its own parent is an error; a cycle through subtasks is a cycle", async () => {
  const yaml = `tasks:
  - id: parent
    title: P
    status: todo
    instructions: x
    subtasks:
      - id: child
        title: C
        status: todo
        instructions: x
        depends_on: [parent]
      - id: sibling
        title: S
        status: todo
        instructions: x
        depends_on: [other]
  - id: other
    title: O
    status: todo
    instructions: x
    depends_on: [sibling]
`
  expect(await validate(yaml)).toEqual({
    code: 1,
    stdout: `ERROR: Task 'child' depends on its parent 'parent', which cannot be done before its subtasks
  at tasks.yaml:11:22
  11 |         depends_on: [parent]
     |                      ^
  hint: remove 'parent' from depends_on; list what 'parent' itself depends on instead
ERROR: Circular dependency detected: sibling → other → sibling
  at tasks.yaml:21:18
  21 |     depends_on: [sibling]
     |                  ^
  hint: correct or remove one of these dependencies

${summary(4, "2 errors, 0 warnings")}`,
    stderr: "",
  })
})

test.concurrent("findings of every kind come out in file order, errors and warnings mixed, with one summary", async () => {
  const yaml = `tasks:
  - id: late
    title: L
    status: todo
    instructions: x
    depends_on: [first]
    colour: red
  - id: first
    title: F
    status: todo
    instructions: x
    depends_on: [nowhere-at-all, late]
  - id: first
    title: Again
    status: todo
    instructions: x
`
  const result = await validate(yaml)
  expect(result).toEqual({
    code: 1,
    stdout: `WARNING: Task 'late' has unknown field 'colour' (kept as is; flow does not use it)
  at tasks.yaml:7:5
  7 |     colour: red
    |     ^
ERROR: Task 'first' depends on 'nowhere-at-all' which doesn't exist
  at tasks.yaml:12:18
  12 |     depends_on: [nowhere-at-all, late]
     |                  ^
  hint: add the missing task or correct/remove the dependency
ERROR: Circular dependency detected: late → first → late
  at tasks.yaml:12:34
  12 |     depends_on: [nowhere-at-all, late]
     |                                  ^
  hint: correct or remove one of these dependencies
ERROR: Duplicate task id 'first'
  at tasks.yaml:13:9
  13 |   - id: first
     |         ^
  hint: ids must be unique across the whole file, subtasks included: rename one of them

${summary(3, "3 errors, 1 warning")}`,
    stderr: "",
  })
})

test.concurrent("the summary counts one error and one warning in the singular", async () => {
  const yaml = `tasks:
  - id: a
    title: A
    status: todo
    instructions: x
    depends_on: [zzz-unknown-task]
    extra: 1
`
  const result = await validate(yaml)
  expect(result.code).toBe(1)
  expect(result.stdout.endsWith(`\n${summary(1, "1 error, 1 warning")}`)).toBe(true)
})

test.concurrent("paths are shown relative to the working directory: from a subfolder as ../tasks.yaml", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - {id: api, title: A, status: todo, instructions: x, depends_on: [database]}\n" })
  mkdirSync(dir.file("src/deep"), { recursive: true })
  expect(await flow(dir.file("src/deep"), ["validate"])).toEqual({
    code: 1,
    stdout: `ERROR: Task 'api' depends on 'database' which doesn't exist
  at ../../tasks.yaml:2:69
  2 |   - {id: api, title: A, status: todo, instructions: x, depends_on: [database]}
    |                                                                     ^
  hint: add the missing task or correct/remove the dependency

../../tasks.yaml: 1 task checked
1 error, 0 warnings
`,
    stderr: "",
  })
})

test.concurrent("--json prints the whole report: valid file", async () => {
  await using dir = await tempRepo({ "tasks.yaml": VALID.replace("tasks:\n", "owner: docs-team\ntasks:\n") })
  const result = await flow(dir.path, ["validate", "--json"])
  expect({ code: result.code, stderr: result.stderr, report: report(result) }).toEqual({
    code: 0,
    stderr: "",
    report: {
      file: join(realpathSync(dir.path), "tasks.yaml"),
      valid: true,
      tasks: 6,
      errors: 0,
      warnings: 1,
      findings: [{ severity: "warning", message: "Unknown top-level key 'owner' (kept as is)", line: 2, column: 1 }],
      parallelism: {
        tasks: 6,
        edges: 5,
        edges_per_task: 0.83,
        critical_path: { tasks: ["setup", "auth-token-rotation", "api-tests", "docs"], minutes: 60, timed: 1 },
        widest_level: { level: 1, tasks: ["setup"] },
      },
    },
  })
})

test.concurrent("--json prints the whole report: errors and warnings with task ids, hints and positions", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": `tasks:
  - id: api-layer
    title: API
    status: todo
    instructions: x
    depends_on: [auth-service]
    priority: 1
  - title: Nameless
    status: todo
    instructions: x
`,
  })
  const result = await flow(dir.path, ["validate", "--json"])
  expect({ code: result.code, stderr: result.stderr, report: report(result) }).toEqual({
    code: 1,
    stderr: "",
    report: {
      file: join(realpathSync(dir.path), "tasks.yaml"),
      valid: false,
      tasks: 2,
      errors: 2,
      warnings: 1,
      findings: [
        {
          severity: "error",
          message: "Task 'api-layer' depends on 'auth-service' which doesn't exist",
          task_id: "api-layer",
          hint: "add the missing task or correct/remove the dependency",
          line: 6,
          column: 18,
        },
        {
          severity: "warning",
          message: "Task 'api-layer' has unknown field 'priority' (kept as is; flow does not use it)",
          task_id: "api-layer",
          line: 7,
          column: 5,
        },
        { severity: "error", message: "Task #2 is missing required field 'id'", line: 8, column: 5 },
      ],
    },
  })
})

test.concurrent("--json: a finding without a position has no line or column; a syntax error has them", async () => {
  const empty = await validate("", ["--json"])
  expect({ code: empty.code, stderr: empty.stderr, findings: report(empty).findings, tasks: report(empty).tasks }).toEqual({
    code: 1,
    stderr: "",
    tasks: 0,
    findings: [
      {
        severity: "error",
        message: "The file has no top-level 'tasks' list",
        hint: "start the file with 'tasks:' followed by a list of tasks (run 'flow generate' to make one from plan.md)",
      },
    ],
  })
  const broken = await validate("tasks:\n  - id: a\n    title A\n    status: todo\n", ["--json"])
  expect({ code: broken.code, findings: report(broken).findings }).toEqual({
    code: 1,
    findings: [
      {
        severity: "error",
        message: "YAML: Implicit keys need to be on a single line",
        hint: "fix the YAML syntax at that position (indentation, a missing colon, or quotes around text with ': ')",
        line: 3,
        column: 5,
      },
    ],
  })
})

test.concurrent("usage errors exit 2 with nothing on stdout: an extra argument, an unknown flag", async () => {
  const yaml = "tasks: []\n"
  expect(await validate(yaml, ["extra-arg"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unexpected argument 'extra-arg'\nhint: usage: flow validate [--json]\n",
  })
  expect(await validate(yaml, ["--bogus"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: Unknown option '--bogus'\nhint: run 'flow validate --help' for its usage\n",
  })
})

test.concurrent("with --json a usage error goes to stderr as an ErrorReport", async () => {
  const result = await validate("tasks: []\n", ["--json", "--bogus"])
  const error = JSON.parse(result.stderr)
  expect(StrictError(error) instanceof type.errors).toBe(false)
  expect({ code: result.code, stdout: result.stdout, error }).toEqual({
    code: 2,
    stdout: "",
    error: { error: "Unknown option '--bogus'", hint: "run 'flow validate --help' for its usage", exit: 2 },
  })
})

test.concurrent("a project without tasks.yaml exits 3 and says which file is missing", async () => {
  await using dir = await tempRepo({ "PRD.md": "# P\n" })
  const tasks = join(realpathSync(dir.path), "tasks.yaml")
  expect(await flow(dir.path, ["validate"])).toEqual({
    code: 3,
    stdout: "",
    stderr: `error: ${tasks} does not exist\nhint: run 'flow generate' to make it from plan.md\n`,
  })
  const json = await flow(dir.path, ["validate", "--json"])
  expect({ code: json.code, stdout: json.stdout, error: JSON.parse(json.stderr) }).toEqual({
    code: 3,
    stdout: "",
    error: { error: `${tasks} does not exist`, hint: "run 'flow generate' to make it from plan.md", exit: 3 },
  })
})

/** A tasks.yaml of `n` tasks t-0 … t-(n-1) where t-i depends on `dep(i)`. */
function chainYaml(n: number, dep: (i: number) => number | undefined): string {
  const parts = ["tasks:\n"]
  for (let i = 0; i < n; i++) {
    const d = dep(i)
    parts.push(`  - id: t-${i}\n    title: T${i}\n    status: todo\n    instructions: x\n${d === undefined ? "" : `    depends_on: [t-${d}]\n`}`)
  }
  return parts.join("")
}

test.concurrent("a 10,000-task dependency chain validates with exit 0 and no recursion error, in both directions", async () => {
  const n = 10_000
  // Its parallelism is the chain itself: the critical path is every task, shown by its ends.
  const report = (path: string) =>
    `Parallelism:\n  critical path: ${n} tasks (${path})\n  widest level: 1 task can run at once\n  edges: ${n - 1} for ${n} tasks (1 per task)\n`
  const backward = await validate(
    chainYaml(n, (i) => (i > 0 ? i - 1 : undefined)),
    [],
    { parallelism: true },
  )
  expect(backward).toEqual({ code: 0, stdout: summary(n, "0 errors, 0 warnings") + report("t-0 → t-1 → t-2 → t-3 → … → t-9997 → t-9998 → t-9999"), stderr: "" })
  // Each task depends on the next one: a depth-first walk from t-0 goes 10,000 deep.
  const forward = await validate(
    chainYaml(n, (i) => (i < n - 1 ? i + 1 : undefined)),
    [],
    { parallelism: true },
  )
  expect(forward).toEqual({
    code: 0,
    stdout: summary(n, "0 errors, 0 warnings") + report("t-9999 → t-9998 → t-9997 → t-9996 → … → t-2 → t-1 → t-0"),
    stderr: "",
  })
})

test.concurrent("a 10,000-task cycle is reported once, with its whole path", async () => {
  const n = 10_000
  const result = await validate(
    chainYaml(n, (i) => (i + n - 1) % n),
    ["--json"],
  )
  const path = ["t-0", ...Array.from({ length: n - 1 }, (_, k) => `t-${n - 1 - k}`), "t-0"]
  expect({ code: result.code, stderr: result.stderr, report: report(result) }).toEqual({
    code: 1,
    stderr: "",
    report: {
      file: expect.stringMatching(/\/tasks\.yaml$/),
      valid: false,
      tasks: n,
      errors: 1,
      warnings: 0,
      // t-1's dependency on t-0 closes the cycle; t-1's depends_on is on line 11.
      findings: [
        {
          severity: "error",
          message: `Circular dependency detected: ${path.join(" → ")}`,
          task_id: "t-0",
          hint: "correct or remove one of these dependencies",
          line: 11,
          column: 18,
        },
      ],
    },
  })
})

test.concurrent("validate never writes tasks.yaml: byte for byte the same after a valid, an invalid and a warning run", async () => {
  // Comments, odd spacing, quoting and a missing final newline: anything a rewrite would normalize.
  const texts = [
    "# top comment\ntasks:   # the list\n  - {id: a,   title: 'A', status: todo, instructions: \"x\"}  # trailing\n\n\n# end",
    "tasks:\n  - id: a\n    title: A\n    status: doing\n    instructions: x\n    depends_on: [ghost]\n",
    "tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: x\n    zz: 1   # unknown\n",
    "tasks:\r\n  - id: a\r\n    title: A\r\n    status: todo\r\n    instructions: x\r\n",
  ]
  for (const text of texts) {
    for (const args of [[], ["--json"]]) {
      await using dir = await tempRepo({ "tasks.yaml": text })
      await flow(dir.path, ["validate", ...args])
      expect(dir.read("tasks.yaml")).toBe(text)
    }
  }
})

test.concurrent("a key written twice in one task is an error even when nothing else is wrong, and the file is not cached as valid", async () => {
  const yaml = `tasks:
  - id: a
    title: First
    status: todo
    instructions: keep me
    instructions: or me?
`
  const r = await validate(yaml)
  expect(r.code).toBe(1)
  expect(r.stdout).toContain("ERROR: YAML: Map keys must be unique")
  expect(r.stdout).toContain("  at tasks.yaml:6:5")
  // A task command on that file refuses it too (exit 3) instead of silently dropping one value.
  await using dir = await tempRepo({ "tasks.yaml": yaml })
  const note = await flow(dir.path, ["note", "a", "hello"])
  expect(note.code).toBe(3)
  expect(dir.read("tasks.yaml")).toBe(yaml)
})

test.concurrent("equal keys in different mappings, block strings that look like keys, and lists are not duplicates", async () => {
  const yaml = `tasks:
  - id: a
    title: First
    status: todo
    instructions: |
      title: this is text
      title: not a key
    acceptance_criteria:
      - "id: x"
      - "id: x"
  - id: b
    title: Second
    status: todo
    instructions: x
    steps:
      - id: b.1
        instruction: one
        status: pending
      - id: b.2
        instruction: two
        status: pending
`
  const r = await validate(yaml)
  expect(r.stdout).toBe(summary(2, "0 errors, 0 warnings"))
  expect(r.code).toBe(0)
})

test.concurrent("a dependency typo never suggests the task itself; a step's error names the step by id", async () => {
  const r = await validate(`tasks:
  - id: api
    title: API
    status: todo
    instructions: x
    depends_on: [apj]
  - id: web
    title: Web
    status: todo
    steps:
      - id: web.1
        instruction: 3
        status: pending
`)
  expect(r.stdout).toContain("ERROR: Task 'api' depends on 'apj' which doesn't exist\n")
  expect(r.stdout).not.toContain("did you mean 'api'")
  expect(r.stdout).toContain("ERROR: Step 'web.1' of task 'web': instruction must be a string (was a number)")
})

test.concurrent("a task whose prompt is longer than the CLI of an agent that may take it reads is a warning, naming the agents and the limit", async () => {
  const note = (kib: number) => "x".repeat(kib * 1024)
  const yaml = `tasks:
  - id: log
    title: Log
    status: todo
    instructions: Read the log in the notes.
    ai_notes:
      - ${note(200)}
  - id: pinned
    title: Pinned
    status: todo
    agent_name: codex-1
    instructions: The same log.
    ai_notes:
      - ${note(200)}
  - id: huge
    title: Huge
    status: todo
    instructions: Three logs.
    ai_notes:
      - ${note(500)}
      - ${note(500)}
      - ${note(100)}
  - id: old
    title: Old
    status: done
    instructions: Done long ago.
    ai_notes:
      - ${note(200)}
`
  await using dir = await tempRepo({ "tasks.yaml": yaml, "flow.yaml": "agents:\n  - name: cursor-1\n    cli: cursor\n  - name: codex-1\n    cli: codex\n" })
  const bytes = async (id: string) => Buffer.byteLength((await flow(dir.path, ["prompt", id])).stdout)
  const [log, huge] = [await bytes("log"), await bytes("huge")]
  const cursor = "cursor: 131,071 bytes (127 KiB), as the prompt is one argument of its command line, and Linux takes at most 128 KiB in one"
  const codex = "codex: 1,048,576 bytes (1.0 MiB), as Codex takes at most 1,048,576 characters of input in one turn"
  // Four tasks that depend on nothing: the valid graph's parallelism follows the summary.
  const shape = "Parallelism:\n  critical path: 1 task (log)\n  widest level: 4 tasks can run at once\n  edges: 0 for 4 tasks (0 per task)\n"
  expect(await flow(dir.path, ["validate"])).toEqual({
    code: 0,
    stdout: `WARNING: Task 'log': its prompt is ${size(log)}, more than agent cursor-1 can take (${cursor})
  at tasks.yaml:2:9
  2 |   - id: log
    |         ^
  hint: shorten what its prompt holds ('flow prompt log' shows it: the instructions, the notes, its dependencies' notes), or give it to another agent with agent_name; the run blocks it before its agent starts
WARNING: Task 'huge': its prompt is ${size(huge)}, more than agents cursor-1 and codex-1 can take (${cursor}; ${codex})
  at tasks.yaml:15:9
  15 |   - id: huge
     |         ^
  hint: shorten what its prompt holds ('flow prompt huge' shows it: the instructions, the notes, its dependencies' notes); the run blocks it before its agent starts

tasks.yaml: 4 tasks checked
0 errors, 2 warnings
${shape}`,
    stderr: "",
  })
  // Under every limit (or without agents whose CLI has one), validate builds no prompt and says nothing.
  dir.write("flow.yaml", "agents:\n  - name: claude-1\n    cli: claude\n")
  expect((await flow(dir.path, ["validate"])).stdout).toBe(`tasks.yaml: 4 tasks checked\n0 errors, 0 warnings\n${shape}`)
})
