// `--json` on the commands that change tasks.yaml: the status verbs, note, assign and the step commands print
// one WriteReport (lib/model/json-shapes.ts): the status changes and the tasks as the write left them.
import { expect, test } from "bun:test"
import { type } from "arktype"
import { ErrorReport, WriteReport } from "../lib/model/json-shapes"
import { flow, tempRepo } from "./helpers"
import { STAMP, unchanged } from "./change-helpers"

const Strict = WriteReport.onDeepUndeclaredKey("reject")
const StrictError = ErrorReport.onDeepUndeclaredKey("reject")

/** Runs `flow <args>` expecting exit 0 and nothing on stderr; returns the report with timestamps as <now>. */
async function report(cwd: string, args: string[]): Promise<WriteReport> {
  const r = await flow(cwd, args)
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const out = JSON.parse(r.stdout, (key, value) => {
    if (key !== "started_at" && key !== "completed_at") return value
    expect(value).toMatch(STAMP)
    return "<now>"
  })
  const checked = Strict(out)
  if (checked instanceof type.errors) throw new Error(checked.summary)
  return out
}

const FILE = `tasks:
  - id: setup   # the root
    title: Setup
    status: in_progress
    instructions: x
  - id: api
    title: API
    status: todo
    depends_on: [setup]
    steps:
      - {id: api.1, instruction: One}
      - {id: api.2, instruction: Two}
  - id: app
    title: App
    status: todo
    instructions: parent
    subtasks:
      - {id: app-ui, title: UI, status: in_progress, instructions: ui}
`

test.concurrent("a status verb prints its changes and every task they name, as stored after the write", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  expect(await report(dir.path, ["done", "setup", "--json"])).toEqual({
    changes: [
      { id: "setup", from: "in_progress", to: "done", reason: null },
      { id: "api", from: "todo", to: "ready_for_agent", reason: "dependencies done" },
    ],
    tasks: [
      { id: "setup", title: "Setup", status: "done", instructions: "x", completed_at: "<now>" },
      {
        id: "api",
        title: "API",
        status: "ready_for_agent",
        depends_on: ["setup"],
        steps: [
          { id: "api.1", instruction: "One" },
          { id: "api.2", instruction: "Two" },
        ],
      },
    ],
    notes: [],
  })
  // The last subtask done completes its parent: both are in the report, the parent without its subtasks.
  expect(await report(dir.path, ["done", "app-ui", "--json"])).toEqual({
    changes: [
      { id: "app-ui", from: "in_progress", to: "done", reason: null },
      { id: "app", from: "todo", to: "done", reason: "all subtasks done" },
    ],
    tasks: [
      { id: "app-ui", title: "UI", status: "done", instructions: "ui", completed_at: "<now>" },
      { id: "app", title: "App", status: "done", instructions: "parent", completed_at: "<now>" },
    ],
    notes: [],
  })
  // Already there: no change, and the task as it is.
  expect(await report(dir.path, ["done", "setup", "--json"])).toEqual({
    changes: [],
    tasks: [{ id: "setup", title: "Setup", status: "done", instructions: "x", completed_at: "<now>" }],
    notes: [],
  })
  expect(await report(dir.path, ["block", "setup", "no", "disk", "--json"])).toMatchObject({
    // Leaving done sends the ready dependent back to todo in the same write, and names it.
    changes: [
      { id: "setup", from: "done", to: "blocked", reason: null },
      { id: "api", from: "ready_for_agent", to: "todo", reason: "dependency setup no longer done" },
    ],
    tasks: [
      { id: "setup", status: "blocked", ai_notes: ["Blocked: no disk"] },
      { id: "api", status: "todo" },
    ],
  })
  await using other = await tempRepo({ "tasks.yaml": FILE })
  expect(await report(other.path, ["start", "api", "--json"])).toMatchObject({
    changes: [{ id: "api", from: "todo", to: "in_progress", reason: null }],
    notes: ["api depends on setup (in_progress), not done yet; started anyway"],
  })
})

test.concurrent("note, assign and the step commands print the same shape", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  expect(await report(dir.path, ["note", "setup", "look", "here", "--json"])).toEqual({
    changes: [],
    tasks: [{ id: "setup", title: "Setup", status: "in_progress", instructions: "x", ai_notes: ["look here"] }],
    notes: [],
  })
  expect((await report(dir.path, ["assign", "setup", "claude-1", "--json"])).tasks[0].agent_name).toBe("claude-1")
  expect((await report(dir.path, ["assign", "setup", "--clear", "--json"])).tasks[0]).not.toHaveProperty("agent_name")
  expect(await report(dir.path, ["step", "start", "api.1", "--json"])).toEqual({
    changes: [
      { id: "api.1", from: "pending", to: "in_progress", reason: null },
      { id: "api", from: "todo", to: "in_progress", reason: "step api.1 started" },
    ],
    tasks: [
      {
        id: "api",
        title: "API",
        status: "in_progress",
        depends_on: ["setup"],
        steps: [
          { id: "api.1", instruction: "One", status: "in_progress", started_at: "<now>" },
          { id: "api.2", instruction: "Two" },
        ],
        started_at: "<now>",
      },
    ],
    notes: ["api depends on setup (in_progress), not done yet; started anyway"],
  })
  expect(await report(dir.path, ["step", "done", "api.1", "--json"])).toMatchObject({
    changes: [{ id: "api.1", from: "in_progress", to: "done", reason: null }],
    tasks: [{ id: "api", steps: [{ id: "api.1", status: "done", completed_at: "<now>" }, { id: "api.2" }] }],
  })
})

test.concurrent("with --json a refusal prints nothing on stdout and the error as JSON on stderr, and writes nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  for (const [args, exit] of [
    [["done", "api", "--json"], 1],
    [["done", "stup", "--json"], 1],
    [["step", "done", "api.2", "--json"], 1],
    [["note", "setup", "--json"], 2],
    [["assign", "setup", "bad name", "--json"], 2],
  ] as const) {
    await unchanged(dir, async () => {
      const r = await flow(dir.path, [...args])
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: exit, stdout: "" })
      const error = JSON.parse(r.stderr)
      expect(StrictError(error)).not.toBeInstanceOf(type.errors)
      expect(error.exit).toBe(exit)
    })
  }
})
