// `flow step start|done|show|list`: steps run in order; starting one starts its task; the last one done
// hands the task to the orchestrator.
import { expect, test } from "bun:test"
import { type } from "arktype"
import { StepListReport, StepShowReport } from "../lib/model/json-shapes"
import { flow, tempRepo } from "./helpers"
import { refused, run, STAMP, stamped, unchanged } from "./change-helpers"

const FILE = `# stepped work
tasks:
  - id: setup
    title: Setup
    status: todo
    instructions: x
  - id: api
    title: API
    status: ready_for_agent
    depends_on: [setup]
    steps:
      - id: api.1
        instruction: |
          Write the models.
          Keep them small.
        acceptance_criteria:
          - models compile
          - one test per model
      - id: api.2   # routes
        instruction: Write the routes.
        status: pending
      - id: api.3
        instruction: Write the tests.
`

test.concurrent("step start starts the step and its task in one write, warning about unfinished dependencies", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  const after = await run(dir, ["step", "start", "api.1"], {
    stdout: "api.1: pending → in_progress\napi: ready_for_agent → in_progress (step api.1 started)\n",
    stderr: "warning: api depends on setup (todo), not done yet; started anyway\n",
  })
  expect(stamped(after)).toBe(
    FILE.replace("status: ready_for_agent", "status: in_progress")
      .replace("          - one test per model\n", "          - one test per model\n        status: in_progress\n        started_at: <now>\n")
      .replace("        instruction: Write the tests.\n", "        instruction: Write the tests.\n    started_at: <now>\n"),
  )
  await unchanged(dir, async () =>
    expect(await flow(dir.path, ["step", "start", "api.1"])).toEqual({ code: 0, stdout: "api.1 is already in_progress\n", stderr: "" }),
  )
})

test.concurrent("steps run in order: starting or finishing a step before the earlier ones are done is refused", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  const hint = "hint: steps run in order: finish api.1 first (flow step done api.1)\n"
  await refused(dir, ["step", "start", "api.2"], 1, `error: cannot start step 'api.2': the earlier step api.1 (pending) is not done\n${hint}`)
  await refused(dir, ["step", "done", "api.3"], 1, `error: cannot finish step 'api.3': earlier steps api.1 (pending), api.2 (pending) are not done\n${hint}`)
})

test.concurrent("step done completes steps in order; from pending once the earlier ones are done; the last one says who merges", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE.replace("status: ready_for_agent", "status: in_progress") })
  await run(dir, ["step", "start", "api.1"], { stdout: "api.1: pending → in_progress\n" })
  await run(dir, ["step", "done", "api.1"], { stdout: "api.1: in_progress → done\n" })
  await run(dir, ["step", "done", "api.2"], { stdout: "api.2: pending → done\n" })
  const after = await run(dir, ["step", "done", "api.3"], {
    stdout: "api.3: pending → done\nAll steps of api are done; the orchestrator merges and marks the task done.\n",
  })
  expect(stamped(after)).toBe(
    FILE.replace("status: ready_for_agent", "status: in_progress")
      .replace(
        "          - one test per model\n",
        "          - one test per model\n        status: done\n        started_at: <now>\n        completed_at: <now>\n",
      )
      .replace("        status: pending\n", "        status: done\n        completed_at: <now>\n")
      .replace("        instruction: Write the tests.\n", "        instruction: Write the tests.\n        status: done\n        completed_at: <now>\n"),
  )
  await unchanged(dir, async () => expect(await flow(dir.path, ["step", "done", "api.2"])).toEqual({ code: 0, stdout: "api.2 is already done\n", stderr: "" }))
  await refused(
    dir,
    ["step", "start", "api.2"],
    1,
    "error: step 'api.2' is already done; a done step is not started again\nhint: its work is committed; to redo it, set its status to pending in tasks.yaml, or start the next step\n",
  )
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("step show prints the current step; step list prints every step with its times", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  expect(await flow(dir.path, ["step", "show", "api"])).toEqual({
    code: 0,
    stdout:
      "Step: api.1 (pending)\nTask: api\nProgress: 0 of 3 steps done\nInstruction:\n  Write the models.\n  Keep them small.\nAcceptance Criteria:\n  - models compile\n  - one test per model\n",
    stderr: "",
  })
  await run(dir, ["step", "done", "api.1"], { stdout: "api.1: pending → done\n" })
  await run(dir, ["step", "start", "api.2"], {
    stdout: "api.2: pending → in_progress\napi: ready_for_agent → in_progress (step api.2 started)\n",
    stderr: "warning: api depends on setup (todo), not done yet; started anyway\n",
  })
  const shown = await flow(dir.path, ["step", "show", "api"])
  expect(shown.stdout).toMatch(/^Step: api\.2 \(in_progress\)\nTask: api\nProgress: 1 of 3 steps done\nStarted: \S+Z\nInstruction:\n {2}Write the routes\.\n$/)
  const listed = await flow(dir.path, ["step", "list", "api"])
  expect(listed.code).toBe(0)
  expect(listed.stdout.replace(/\d{4}-\S+Z/g, "<t>")).toBe(
    "[done] api.1 Write the models.  completed <t>\n[in_progress] api.2 Write the routes.  started <t>\n[pending] api.3 Write the tests.\n",
  )
})

test.concurrent("step show and list --json print the documented shapes", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  await run(dir, ["step", "done", "api.1"], { stdout: "api.1: pending → done\n" })
  const shown = JSON.parse((await flow(dir.path, ["step", "show", "api", "--json"])).stdout)
  expect(StepShowReport.onDeepUndeclaredKey("reject")(shown)).not.toBeInstanceOf(type.errors)
  expect(shown).toEqual({ task_id: "api", done: 1, total: 3, current: { id: "api.2", status: "pending", instruction: "Write the routes." } })
  const listed = JSON.parse((await flow(dir.path, ["step", "list", "api", "--json"])).stdout)
  expect(StepListReport.onDeepUndeclaredKey("reject")(listed)).not.toBeInstanceOf(type.errors)
  expect(listed.steps[0].completed_at).toMatch(STAMP)
  expect({ ...listed, steps: listed.steps.map((s: { completed_at?: string }) => ({ ...s, completed_at: s.completed_at && "<t>" })) }).toEqual({
    task_id: "api",
    steps: [
      {
        id: "api.1",
        status: "done",
        instruction: "Write the models.\nKeep them small.\n",
        acceptance_criteria: ["models compile", "one test per model"],
        completed_at: "<t>",
      },
      { id: "api.2", status: "pending", instruction: "Write the routes." },
      { id: "api.3", status: "pending", instruction: "Write the tests." },
    ],
  })
})

test.concurrent("all steps done, and a task without steps", async () => {
  const done = `tasks:\n  - id: a\n    title: A\n    status: in_progress\n    steps:\n      - {id: a.1, instruction: one, status: done}\n  - {id: b, title: B, status: todo, instructions: x}\n`
  await using dir = await tempRepo({ "tasks.yaml": done })
  expect(await flow(dir.path, ["step", "show", "a"])).toEqual({ code: 0, stdout: "All 1 steps of a are done.\n", stderr: "" })
  expect(JSON.parse((await flow(dir.path, ["step", "show", "a", "--json"])).stdout)).toEqual({ task_id: "a", done: 1, total: 1, current: null })
  for (const sub of ["show", "list"]) {
    expect(await flow(dir.path, ["step", sub, "b"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "error: task 'b' has no steps\nhint: its work is described by its instructions: run 'flow show b'\n",
    })
  }
})

test.concurrent("unknown step and task ids exit 1 with the closest id, and write nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  await refused(dir, ["step", "start", "api.4"], 1, "error: no step 'api.4' in tasks.yaml\nhint: did you mean 'api.1'?\n")
  await refused(dir, ["step", "done", "apl.2"], 1, "error: no step 'apl.2' in tasks.yaml\nhint: did you mean 'api.2'?\n")
  await refused(dir, ["step", "start", "api"], 1, "error: no step 'api' in tasks.yaml\nhint: 'api' is a task; its steps are api.1, api.2, api.3\n")
  await refused(dir, ["step", "show", "apj"], 1, "error: no task 'apj' in tasks.yaml\nhint: did you mean 'api'?\n")
})

test.concurrent("step usage errors exit 2; flow step --help lists the subcommands", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  const usage = "flow step <start|done> <step_id> [--json] | flow step <show|list> <task_id> [--json]"
  await refused(dir, ["step"], 2, `error: missing subcommand: start, done, show or list\nhint: usage: ${usage}\n`)
  await refused(dir, ["step", "begin", "api.1"], 2, `error: unknown step subcommand 'begin'\nhint: use one of start, done, show, list; usage: ${usage}\n`)
  await refused(dir, ["step", "start"], 2, "error: missing <step_id>\nhint: usage: flow step start <step_id> [--json]\n")
  await refused(dir, ["step", "list", "api", "x"], 2, "error: unexpected argument 'x'\nhint: usage: flow step list <task_id> [--json]\n")
  // With --json on the line, errors are JSON on stderr too.
  await refused(
    dir,
    ["step", "done", "api.1", "x", "--json"],
    2,
    `${JSON.stringify({ error: "unexpected argument 'x'", hint: "usage: flow step done <step_id> [--json]", exit: 2 })}\n`,
  )
  const help = await flow(dir.path, ["step", "--help"])
  expect(help.code).toBe(0)
  for (const sub of ["start <step_id>", "done <step_id>", "show <task_id>", "list <task_id>"]) expect(help.stdout).toContain(`\n  ${sub}  `)
})

test.concurrent("starting a step of a blocked task starts the step and leaves the task blocked, with a warning", async () => {
  const file = "tasks:\n  - id: a\n    title: A\n    status: blocked\n    steps:\n      - {id: a.1, instruction: one}\n"
  await using dir = await tempRepo({ "tasks.yaml": file })
  const after = await run(dir, ["step", "start", "a.1"], {
    stdout: "a.1: pending → in_progress\n",
    stderr: "warning: task a is blocked; its status was left as it is\n",
  })
  expect(stamped(after)).toBe(file.replace("{id: a.1, instruction: one}", "{id: a.1, instruction: one, status: in_progress, started_at: <now>}"))
})

test.concurrent("a step whose instruction opens with a code block is named by its first line outside the code, in step list and show", async () => {
  const file = `tasks:
  - id: ci
    title: CI
    status: in_progress
    steps:
      - id: ci.1
        instruction: |
          \`\`\`sh
          npm ci
          \`\`\`
          Install the dependencies.
      - id: ci.2
        instruction: |
          ~~~~sh
          npm test
          ~~~
          still code
          ~~~~
      - id: ci.3
        instruction: Lint.
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  expect(await flow(dir.path, ["step", "list", "ci"])).toEqual({
    code: 0,
    stdout: "[pending] ci.1 Install the dependencies.\n[pending] ci.2 npm test\n[pending] ci.3 Lint.\n",
    stderr: "",
  })
  const shown = await flow(dir.path, ["show", "ci"])
  expect(shown.stdout).toContain("\nSteps:\n  [pending] ci.1 Install the dependencies.\n  [pending] ci.2 npm test\n  [pending] ci.3 Lint.\n")
})
