// flow dashboard: the snapshot compared whole (the clock fixed with FLOW_NOW), its JSON against the shape in
// lib/model/json-shapes.ts, exit codes, and the live screen in a real terminal under tmux.
import { expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { basename } from "node:path"
import { DashboardReport } from "../lib/model/json-shapes"
import { projectAt, runLockTarget } from "../lib/cli/project"
import { openState } from "../lib/state/state"
import { flow, tasksYaml, tempRepo } from "./helpers"
import { terminal } from "./terminal"

const NOW = "2026-03-01T10:00:00Z"

const TASKS = tasksYaml([
  { id: "setup", title: "Set up the repository", status: "done", phase: 1, instructions: "x", completed_at: "2026-03-01T09:00:00Z" },
  { id: "schema", title: "Database schema", status: "done", phase: 1, instructions: "x", completed_at: "2026-03-01T09:58:30Z", depends_on: ["setup"] },
  {
    id: "api-layer",
    title: "Build the API layer with authentication, rate limiting and a title far too long for one line",
    status: "in_progress",
    phase: 2,
    instructions: "x",
    started_at: "2026-03-01T09:30:00Z",
    depends_on: ["schema"],
  },
  {
    id: "ui",
    title: "The UI",
    status: "in_progress",
    phase: 2,
    agent_name: "gemini-1",
    started_at: "2026-03-01T09:55:30Z",
    steps: [
      { id: "ui.1", instruction: "a", status: "done" },
      { id: "ui.2", instruction: "b", status: "in_progress" },
      { id: "ui.3", instruction: "c" },
    ],
  },
  {
    id: "docs",
    title: "Docs",
    status: "todo",
    phase: 2,
    instructions: "x",
    depends_on: ["ui"],
    subtasks: [
      { id: "docs-readme", title: "README", status: "done", instructions: "x", completed_at: "2026-02-27T10:00:00Z" },
      { id: "docs-guide", title: "Guide", status: "assigned", instructions: "x", agent_name: "claude-2" },
    ],
  },
  { id: "review", title: "Review", status: "todo", phase: 3, checkpoint: true, instructions: "x", depends_on: ["setup"] },
  {
    id: "bug",
    title: "Fix the bug",
    status: "blocked",
    instructions: "x",
    ai_notes: ["an older note", "the check failed (exit 1) after 2 fix attempts: npm test\nFAIL test/a.test.ts"],
  },
  { id: "later", title: "Later", status: "ready_for_agent", instructions: "x" },
])
// Phase 1's title from tasks.yaml's `phases:` list, phase 2's from plan.md (which wins), phase 3 without one.
const PHASES = "phases:\n  - number: 1\n    title: Foundations\n  - number: 2\n    title: Stale title\n"
const PLAN = "# Plan\n\n## Phase 2: API and UI\n\n### 2.1 API layer\n\nBuild it.\n"

/** A project with the tasks above, a run that has claude-1 on api-layer, and one pending question. */
async function fixture() {
  const repo = await tempRepo({ "tasks.yaml": PHASES + TASKS, "plan.md": PLAN })
  const project = projectAt(repo.path)
  {
    using db = await openState(project)
    await db.agents.upsert("claude-1", { cli: "claude", current_task: "api-layer" })
    await db.questions.ask({ task_id: "api-layer", agent: "claude-1", text: "Which auth?" })
  }
  // The run lock held by a live process (this test's), as `flow run` holds it.
  writeFileSync(
    `${runLockTarget(project)}.lock`,
    JSON.stringify({ pid: process.pid, host: hostname(), command: "flow run", since: "2026-03-01T09:00:00.000Z", token: "t" }),
  )
  return repo
}

test.concurrent("piped, it prints one snapshot without escape codes, cut nowhere, blocked tasks with their last note", async () => {
  await using repo = await fixture()
  // NO_COLOR unset: piped output has no colour anyway. COLUMNS does not cut piped output either.
  const r = await flow(repo.path, ["dashboard"], { env: { FLOW_NOW: NOW, COLUMNS: "80", NO_COLOR: undefined } })
  expect(r).toEqual({
    code: 0,
    stderr: "",
    stdout: `flow dashboard: ${basename(repo.path)}  at ${new Date(NOW).toTimeString().slice(0, 8)}

Tasks: 10 total, 30% done  ██████░░░░░░░░░░░░░░
  todo 2  ready_for_agent 1  assigned 1  in_progress 2  done 3  blocked 1

Phases:
  Phase 1:  Foundations  2/2 done
  Phase 2:  API and UI   1/5 done  3 running
  Phase 3                0/1 done
  No phase               0/2 done

Needs you:
  flow questions  1 question waiting for an answer
  flow view       1 checkpoint waiting for review: review
  flow show bug   blocked: the check failed (exit 1) after 2 fix attempts: npm test

Running (3): flow run live (pid ${process.pid})
  api-layer   Build the API layer with authentication, rate limiting and a title far too long for one line  claude-1     30m            live
  ui          The UI                                                                                        gemini-1  4m 30s  step 2/3
  docs-guide  Guide                                                                                         claude-2       -

Recently completed (3):
  schema       Database schema        1m ago
  setup        Set up the repository  1h ago
  docs-readme  README                 2d ago
`,
  })
})

test.concurrent("more than five blocked tasks: four by name, the rest counted, a blocked task without notes said so", async () => {
  const ids = ["b1", "b2", "b3", "b4", "b5", "b6"]
  await using repo = await tempRepo({
    "tasks.yaml": tasksYaml(ids.map((id, i) => ({ id, title: id, status: "blocked", instructions: "x", ...(i > 0 ? { ai_notes: [`why ${id}`] } : {}) }))),
  })
  const r = await flow(repo.path, ["dashboard"], { env: { FLOW_NOW: NOW } })
  expect(r.stdout).toContain(`
Needs you:
  flow show b1       blocked: no note says why
  flow show b2       blocked: why b2
  flow show b3       blocked: why b3
  flow show b4       blocked: why b4
  flow list blocked  2 more blocked tasks
`)
  const report = JSON.parse((await flow(repo.path, ["dashboard", "--json"], { env: { FLOW_NOW: NOW } })).stdout)
  expect(report.blocked).toEqual(ids.map((id, i) => ({ id, title: id, note: i > 0 ? `why ${id}` : null })))
})

test.concurrent("--json prints the snapshot in the shape of lib/model/json-shapes.ts", async () => {
  await using repo = await fixture()
  const r = await flow(repo.path, ["dashboard", "--json"], { env: { FLOW_NOW: NOW } })
  expect(r.code).toBe(0)
  const report = JSON.parse(r.stdout)
  expect(DashboardReport(report)).toEqual(report) // arktype returns the value itself when it fits the shape
  expect(report).toEqual({
    project: basename(repo.path),
    at: NOW,
    counts: { todo: 2, ready_for_agent: 1, assigned: 1, in_progress: 2, done: 3, blocked: 1, total: 10, percent_done: 30 },
    phases: [
      { phase: 1, title: "Phase 1: Foundations", done: 2, running: 0, total: 2 },
      { phase: 2, title: "Phase 2: API and UI", done: 1, running: 3, total: 5 },
      { phase: 3, title: "Phase 3", done: 0, running: 0, total: 1 },
      { phase: null, title: "No phase", done: 0, running: 0, total: 2 },
    ],
    running: [
      {
        id: "api-layer",
        title: "Build the API layer with authentication, rate limiting and a title far too long for one line",
        phase: 2,
        status: "in_progress",
        agent: "claude-1",
        started_at: "2026-03-01T09:30:00Z",
        seconds: 1800,
        step: null,
        live: true,
        usage: null,
        budget: null,
        parked_until: null,
      },
      {
        id: "ui",
        title: "The UI",
        phase: 2,
        status: "in_progress",
        agent: "gemini-1",
        started_at: "2026-03-01T09:55:30Z",
        seconds: 270,
        step: { current: 2, total: 3 },
        live: null,
        usage: null,
        budget: null,
        parked_until: null,
      },
      {
        id: "docs-guide",
        title: "Guide",
        phase: 2,
        status: "assigned",
        agent: "claude-2",
        started_at: null,
        seconds: null,
        step: null,
        live: null,
        usage: null,
        budget: null,
        parked_until: null,
      },
    ],
    recent: [
      { id: "schema", title: "Database schema", phase: 1, completed_at: "2026-03-01T09:58:30Z", seconds_ago: 90 },
      { id: "setup", title: "Set up the repository", phase: 1, completed_at: "2026-03-01T09:00:00Z", seconds_ago: 3600 },
      { id: "docs-readme", title: "README", phase: 2, completed_at: "2026-02-27T10:00:00Z", seconds_ago: 172_800 },
    ],
    questions: 1,
    review: ["review"],
    blocked: [{ id: "bug", title: "Fix the bug", note: "the check failed (exit 1) after 2 fix attempts: npm test" }],
    run: { pid: process.pid, since: "2026-03-01T09:00:00.000Z" },
    usage: { run: null, total: null, budget: null },
    queue: [],
    landing: [],
    reviews: [],
  })
})

test.concurrent("the merge queue of the last run, from its queue events: in line, on top of whom, failed with why", async () => {
  await using repo = await fixture()
  {
    using db = await openState(projectAt(repo.path))
    const q = (taskId: string, state: string, more: Record<string, unknown> = {}) =>
      db.events.append({ kind: "queue", task_id: taskId, data: { taskId, target: "main", state, position: 1, ...more } })
    await q("old", "waiting") // an earlier run's: not shown
    await db.events.append({ kind: "run.start", data: {} })
    await q("schema", "waiting")
    await q("schema", "checking", { onTopOf: [] })
    await q("setup", "waiting")
    await q("setup", "checking", { onTopOf: ["schema"], reason: "on top of schema" })
    await q("schema", "passed", { seconds: 3.14 })
    await db.events.append({ kind: "merge", task_id: "schema", data: { taskId: "schema", branch: "flow/schema", target: "main", commit: "abc" } })
    await q("ui", "waiting")
    await q("ui", "checking", { onTopOf: ["setup"] })
    await q("ui", "failed", { reason: "the check failed (exit 1)", seconds: 0.4 })
    await q("api-layer", "waiting")
    await q("api-layer", "checking", { onTopOf: ["setup"] })
    await q("api-layer", "waiting", { reason: "rebuilt on setup" })
    await q("docs-guide", "waiting")
    await q("docs-guide", "failed", { reason: "merge conflict in a.txt" })
    await q("docs-guide", "waiting") // handed over again after a fix attempt: the end of the line
    await q("setup", "passed", { seconds: 2 })
  }
  const report = JSON.parse((await flow(repo.path, ["dashboard", "--json"], { env: { FLOW_NOW: NOW } })).stdout)
  expect(DashboardReport(report)).toEqual(report)
  expect(report.queue).toEqual([
    {
      target: "main",
      candidates: [
        { task: "setup", state: "passed", reason: null, on_top_of: ["schema"], seconds: 2, machine: null, since: expect.any(String) },
        { task: "api-layer", state: "waiting", reason: "rebuilt on setup", on_top_of: [], seconds: null, machine: null, since: expect.any(String) },
        { task: "docs-guide", state: "waiting", reason: null, on_top_of: [], seconds: null, machine: null, since: expect.any(String) },
        { task: "ui", state: "failed", reason: "the check failed (exit 1)", on_top_of: ["setup"], seconds: 0.4, machine: null, since: expect.any(String) },
      ],
    },
  ])
  const text = await flow(repo.path, ["dashboard"], { env: { FLOW_NOW: NOW, COLUMNS: "100" } })
  expect(text.stdout).toContain(`
Merge queue into main (4): checked before each merge
  setup       passed    on top of schema; after 2.0 s
  api-layer   waiting   rebuilt on setup
  docs-guide  waiting
  ui          failed    on top of setup; after 0.4 s; the check failed (exit 1)

Recently completed (3):
`)
})

test.concurrent("usage reported by agents: a Usage line, a column per running task, and the sums in --json", async () => {
  await using repo = await fixture()
  {
    using db = await openState(projectAt(repo.path))
    await db.events.append({ kind: "agent.usage", task_id: "ui", agent: "gemini-1", data: { inputTokens: 2000, outputTokens: 120 } })
    await db.events.append({ kind: "run.start", data: {} })
    await db.events.append({ kind: "agent.usage", task_id: "api-layer", agent: "claude-1", data: { inputTokens: 100, outputTokens: 50, costUsd: 0.0123 } })
  }
  const text = await flow(repo.path, ["dashboard"], { env: { FLOW_NOW: NOW, COLUMNS: "100" } })
  expect(text.stdout).toContain(
    "\n  todo 2  ready_for_agent 1  assigned 1  in_progress 2  done 3  blocked 1\nUsage: last run tokens 100 in, 50 out, $0.0123; all runs tokens 2,100 in, 170 out, $0.0123\n\n",
  )
  expect(text.stdout).toContain(`
  api-layer   Build the API layer with authentication, rate limiting and a title far too long for one line  claude-1     30m            live    $0.0123
  ui          The UI                                                                                        gemini-1  4m 30s  step 2/3        2,120 tok
  docs-guide  Guide                                                                                         claude-2       -
`)
  const report = JSON.parse((await flow(repo.path, ["dashboard", "--json"], { env: { FLOW_NOW: NOW } })).stdout)
  expect(DashboardReport(report)).toEqual(report)
  expect(report.usage).toEqual({
    run: { input_tokens: 100, output_tokens: 50, cost_usd: 0.0123 },
    total: { input_tokens: 2100, output_tokens: 170, cost_usd: 0.0123 },
    budget: null,
  })
  expect(report.running.map((t: { usage: unknown }) => t.usage)).toEqual([
    { input_tokens: 100, output_tokens: 50, cost_usd: 0.0123 },
    { input_tokens: 2000, output_tokens: 120 },
    null,
  ])
})

test.concurrent("a task a run recorded, with no run alive, is shown as stopped", async () => {
  await using repo = await tempRepo({ "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "in_progress", instructions: "x" }]) })
  {
    using db = await openState(projectAt(repo.path))
    await db.agents.upsert("claude-1", { current_task: "a" })
  }
  const r = await flow(repo.path, ["dashboard", "--json"], { env: { FLOW_NOW: NOW } })
  expect(JSON.parse(r.stdout).running).toEqual([
    {
      id: "a",
      title: "A",
      phase: null,
      status: "in_progress",
      agent: "claude-1",
      started_at: null,
      seconds: null,
      step: null,
      live: false,
      usage: null,
      budget: null,
      parked_until: null,
    },
  ])
  const text = await flow(repo.path, ["dashboard"], { env: { FLOW_NOW: NOW } })
  expect(text.stdout).toContain("Running (1): no flow run\n  a  A  claude-1  -  stopped\n")
  expect(text.stdout).not.toContain("Phases") // no task has a phase: nothing to show per phase
  expect(JSON.parse(r.stdout).phases).toEqual([])
})

test.concurrent("escape sequences in a title never reach the terminal", async () => {
  await using repo = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "a", title: "Evil \x1b[2J\x1b[H title \x1bc reset", status: "in_progress", instructions: "x" }]),
  })
  const r = await flow(repo.path, ["dashboard"], { env: { FLOW_NOW: NOW } })
  expect(r.code).toBe(0)
  expect(r.stdout).not.toContain("\x1b")
  expect(r.stdout).toContain("  a  Evil  title  reset  -  -\n")
})

test.concurrent("a missing or invalid tasks.yaml at the start exits 3", async () => {
  await using empty = await tempRepo({ "PRD.md": "# PRD\n" })
  const missing = await flow(empty.path, ["dashboard"])
  expect(missing.code).toBe(3)
  expect(missing.stderr).toContain("tasks.yaml does not exist")
  await using bad = await tempRepo({ "tasks.yaml": "tasks:\n  - {id: a, title: x, status: doing, instructions: y}\n" })
  const invalid = await flow(bad.path, ["dashboard", "--json"])
  expect(invalid.code).toBe(3)
  expect(invalid.stdout).toBe("")
  expect(JSON.parse(invalid.stderr).exit).toBe(3)
})

test.concurrent("an --interval below 1 second, above a day or not a number is a usage error", async () => {
  await using repo = await tempRepo({ "tasks.yaml": TASKS })
  for (const value of ["0", "0.5", "ten", "-3", "", "86401", "3000000"]) {
    const r = await flow(repo.path, ["dashboard", `--interval=${value}`])
    expect({ value, code: r.code, stdout: r.stdout }).toEqual({ value, code: 2, stdout: "" })
    expect(r.stderr).toContain(`--interval must be a number of seconds from 1 to 86400 (was '${value}')`)
  }
})

test.concurrent("on a terminal it redraws as tasks change, survives a broken tasks.yaml, and q restores the screen", async () => {
  await using repo = await tempRepo({ "tasks.yaml": TASKS })
  using t = await terminal(repo.path, ["dashboard", "--interval", "1"], {}, { columns: 100, rows: 30 })
  await t.waitFor("in_progress 2  done 3")
  expect(t.pane("#{alternate_on} #{cursor_flag}")).toBe("1 0")
  expect(t.screen()).toContain("updated ")

  // ui still has steps to do: --force, as a person overriding (docs/STATUS-RULES.md).
  expect((await flow(repo.path, ["done", "ui", "--force"])).code).toBe(0)
  const after = await t.waitFor("in_progress 1  done 4")
  expect(after).toMatch(/Recently completed \(4\):\n {2}ui +The UI +\d+s ago\n/)

  // A broken file: the error on top, the last good data below, and no crash.
  const good = repo.read("tasks.yaml")
  repo.write("tasks.yaml", `${good}  - {id: x, title: y, status: doing, instructions: z}\n`)
  const broken = await t.waitFor("! tasks.yaml is invalid")
  expect(broken).toContain("! showing the data read at")
  expect(broken).toContain("in_progress 1  done 4")
  repo.write("tasks.yaml", good.replace("status: ready_for_agent", "status: in_progress"))
  await t.waitFor("Running (3)")
  expect(t.screen()).not.toContain("! tasks.yaml is invalid")

  t.type("q")
  const end = await t.waitFor("EXIT=")
  expect(end).toContain("EXIT=0")
  expect(end).not.toContain("Recently completed") // the normal screen is back, without the dashboard's
  expect(t.pane("#{alternate_on} #{cursor_flag}")).toBe("0 1")
})

test.concurrent("on a terminal, Ctrl-C leaves with 0 and a resize redraws at the new width", async () => {
  await using repo = await tempRepo({ "tasks.yaml": TASKS })
  // Refreshed only every 10 minutes: what redraws the screen within seconds is the resize.
  // The clock is fixed: the durations' width decides where the title is clipped (with the real clock the
  // expected line stopped matching once the fixture's start times were 100 days old).
  using t = await terminal(repo.path, ["dashboard", "--interval", "600"], { FLOW_NOW: "2026-03-20T23:30:00Z" }, { columns: 120, rows: 30 })
  await t.waitFor("Build the API layer with authentication, rate limiting")
  t.resize(60, 30)
  const narrow = await t.waitFor("api-layer   Build the API …", 5000)
  for (const line of narrow.split("\n")) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(60)
  t.keys("C-c")
  expect(await t.waitFor("EXIT=")).toContain("EXIT=0")
  expect(t.pane("#{alternate_on}")).toBe("0")
})

test.concurrent("on a terminal, --once prints one snapshot on the normal screen and exits 0", async () => {
  await using repo = await tempRepo({ "tasks.yaml": TASKS })
  using t = await terminal(repo.path, ["dashboard", "--once"], {}, { columns: 100, rows: 40 })
  const end = await t.waitFor("EXIT=")
  expect(end).toContain("in_progress 2  done 3")
  expect(end).not.toContain("q quits")
  expect(end).toContain("EXIT=0")
  // On a terminal the snapshot fits its width (piped output is not cut).
  expect(end).toMatch(/\n {2}api-layer +Build the API layer with [^\n]*…/)
  for (const line of end.split("\n")) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(100)
})
