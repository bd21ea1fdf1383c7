// `flow next` through the real CLI: the availability rule case by case, the order, the agent filter, the
// empty answers, --json against its shape, and an invalid file.
import { expect, test } from "bun:test"
import { NextReport } from "../lib/model/json-shapes"
import { SAMPLE, strictJson, untouched } from "./fixtures/read-sample"
import { flow, tempRepo, tasksYaml } from "./helpers"

async function next(args: string[], yaml: string) {
  await using dir = await tempRepo({ "tasks.yaml": yaml })
  return await untouched(dir.file("tasks.yaml"), () => flow(dir.path, ["next", ...args]))
}

const t = (id: string, status: string, extra: Record<string, unknown> = {}) => ({ id, title: id.toUpperCase(), status, instructions: "x", ...extra })

// Each task's id says whether it is available to everyone (yes-), to claude only (mine-), or never (no-).
const CASES = tasksYaml([
  t("yes-unphased", "todo"),
  t("finished", "done", { phase: 1 }),
  t("running", "in_progress", { phase: 1 }),
  t("yes-free", "todo", { phase: 2 }),
  t("yes-deps-done", "todo", { phase: 1, depends_on: ["finished"] }),
  t("no-deps-open", "todo", { phase: 1, depends_on: ["finished", "running"] }),
  // `flow ready` overrides open dependencies.
  t("yes-forced", "ready_for_agent", { phase: 1, depends_on: ["running"] }),
  t("no-other-agent", "ready_for_agent", { phase: 1, agent_name: "codex" }),
  t("mine-assigned", "todo", { phase: 1, agent_name: "claude" }),
  t("no-checkpoint", "ready_for_agent", { phase: 1, checkpoint: true }),
  t("no-blocked", "blocked", { phase: 1 }),
  t("no-assigned-status", "assigned", { phase: 1 }),
  // A parent is never taken: its children are; their phase is the parent's.
  t("no-parent", "todo", {
    phase: 1,
    subtasks: [
      t("yes-child", "todo", { phase: 9 }),
      t("no-child-parent", "ready_for_agent", {
        subtasks: [t("yes-grandchild", "todo", { depends_on: ["yes-child"] }), t("yes-grandchild-2", "ready_for_agent")],
      }),
    ],
  }),
  // A blocked parent (a person stopped that work) or a done one (the work is over): no child is offered.
  t("no-blocked-parent", "blocked", {
    phase: 1,
    subtasks: [t("no-child-of-blocked", "ready_for_agent", { subtasks: [t("no-grandchild-of-blocked", "todo")] })],
  }),
  t("no-done-parent", "done", { phase: 1, subtasks: [t("no-child-of-done", "todo")] }),
  // The parent's dependencies are open: none of its descendants may start, whatever their status.
  t("no-waiting-parent", "todo", {
    phase: 1,
    depends_on: ["running"],
    subtasks: [t("no-child-of-waiting", "ready_for_agent", { subtasks: [t("no-grandchild-of-waiting", "todo")] })],
  }),
])

test.concurrent("without an agent: every available task, by phase then file order, agents shown, no-phase last", async () => {
  // yes-grandchild depends on yes-child, which is not done: only its sibling is available.
  const result = await next([], CASES)
  expect(result).toEqual({
    code: 0,
    stdout: `[todo] yes-deps-done YES-DEPS-DONE (depends: finished)
[ready_for_agent] yes-forced YES-FORCED (depends: running)
[ready_for_agent] no-other-agent NO-OTHER-AGENT (agent: codex)
[todo] mine-assigned MINE-ASSIGNED (agent: claude)
[todo] yes-child YES-CHILD
[ready_for_agent] yes-grandchild-2 YES-GRANDCHILD-2
[todo] yes-free YES-FREE
[todo] yes-unphased YES-UNPHASED
`,
    stderr: "",
  })
})

test.concurrent("with an agent: tasks assigned to another agent are left out, its own and unassigned ones stay", async () => {
  const claude = await next(["claude"], CASES)
  expect(claude).toEqual({
    code: 0,
    stdout: `[todo] yes-deps-done YES-DEPS-DONE (depends: finished)
[ready_for_agent] yes-forced YES-FORCED (depends: running)
[todo] mine-assigned MINE-ASSIGNED (agent: claude)
[todo] yes-child YES-CHILD
[ready_for_agent] yes-grandchild-2 YES-GRANDCHILD-2
[todo] yes-free YES-FREE
[todo] yes-unphased YES-UNPHASED
`,
    stderr: "",
  })
  const codex = await next(["codex"], CASES)
  expect(codex.stdout).toContain("[ready_for_agent] no-other-agent NO-OTHER-AGENT (agent: codex)\n")
  expect(codex.stdout).not.toContain("mine-assigned")
})

test.concurrent("a dependency finishing makes the waiting subtask available", async () => {
  const yaml = CASES.replace(/id: yes-child\n(\s+)title: YES-CHILD\n(\s+)status: todo/, "id: yes-child\n$1title: YES-CHILD\n$2status: done")
  expect(yaml).not.toBe(CASES)
  const result = await next([], yaml)
  expect(result.stdout).toContain("[todo] yes-grandchild YES-GRANDCHILD (depends: yes-child)\n[ready_for_agent] yes-grandchild-2")
})

test.concurrent("nothing available: a plain sentence and exit 0, naming the agent when one was given", async () => {
  const yaml = tasksYaml([t("a", "done"), t("b", "todo", { agent_name: "codex" })])
  expect(await next([], tasksYaml([t("a", "done")]))).toEqual({ code: 0, stdout: "No tasks are available.\n", stderr: "" })
  expect(await next(["claude"], yaml)).toEqual({ code: 0, stdout: "No tasks are available for claude.\n", stderr: "" })
  expect(await next([], "tasks: []\n")).toEqual({ code: 0, stdout: "No tasks are available.\n", stderr: "" })
})

test.concurrent("--json lists the same tasks as TaskSummary values, matching NextReport exactly", async () => {
  const result = await next(["claude", "--json"], CASES)
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
  const report = strictJson<NextReport>(NextReport, result.stdout)
  expect(report.tasks.map((s) => s.id)).toEqual(["yes-deps-done", "yes-forced", "mine-assigned", "yes-child", "yes-grandchild-2", "yes-free", "yes-unphased"])
  expect(report.tasks[4]).toEqual({
    id: "yes-grandchild-2",
    title: "YES-GRANDCHILD-2",
    status: "ready_for_agent",
    phase: null,
    parent: "no-child-parent",
    depth: 2,
    depends_on: [],
    agent_name: null,
    checkpoint: false,
  })
  expect(strictJson(NextReport, (await next(["--json"], "tasks: []\n")).stdout)).toEqual({ tasks: [] })
})

test.concurrent("the sample project: only the leaf under auth; auth-token has a child, review is a checkpoint", async () => {
  expect(await next([], SAMPLE)).toEqual({
    code: 0,
    stdout: "[todo] auth-token-rotation Rotation\n",
    stderr: "",
  })
})

test.concurrent("usage errors: an empty agent name, two arguments", async () => {
  const yaml = tasksYaml([t("a", "todo")])
  expect(await next([""], yaml)).toEqual({ code: 2, stdout: "", stderr: "error: the agent name is empty\nhint: usage: flow next [<agent_name>] [--json]\n" })
  expect(await next(["a", "b"], yaml)).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unexpected argument 'b'\nhint: usage: flow next [<agent_name>] [--json]\n",
  })
})

test.concurrent("an invalid tasks.yaml is exit 3", async () => {
  const result = await next([], tasksYaml([t("a", "todo", { depends_on: ["a"] })]))
  expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 3, stdout: "" })
  expect(result.stderr).toStartWith("error: tasks.yaml is invalid")
})
