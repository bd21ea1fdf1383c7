// `flow run`: drives agents through the task graph (SPEC sections 2.3 to 2.6 and 3). Event-driven: a
// finished task, a change of tasks.yaml by a person or an agent, or a stop request wakes the scheduler at
// once; the only look without an event is a stat of tasks.yaml every second, a backstop for its watcher.
// tasks.yaml is the source of truth, re-read on every decision. docs/RUN.md explains the rules.
import { indexTasks, type Indexed, type Task } from "../model/task-index"
import { awaitOrphanGit } from "./reaper"
import { recover } from "./recovery"
import { watchTasksFile } from "./tasks-watch"
import { StoreUnreachable } from "../store/store"
import { traceCpu } from "../cli/trace"
import type { AgentConfig } from "../config/config"
import type { RunSettings, RunSummary } from "./settings"
import { isDiskFull } from "../store/disk-full"
import { spendByTask } from "../budget/budget-meter"
import { budgetWarnings, forecast, forecastLines } from "../budget/forecast"
import { priceOf } from "../budget/prices"
import { ActiveRun } from "./active-run"
import { schedule } from "./scheduler"

/** How often a run on a shared graph looks for changes others made (docs/FLEET.md). */
const SHARED_POLL_MS = 2_000

/**
 * The run, step by step (docs/RUN.md): say what it starts on, recover what a dead run left, prepare (what is left
 * alone, the forecast, what to resume), then schedule until nothing more can move: each task's worker works it
 * with its agent and lands it (task-worker.ts). It ends once every worker has landed, with its summary.
 */
export async function orchestrate(s: RunSettings): Promise<RunSummary> {
  const run = new ActiveRun(s)
  await begin(run)
  await recoverDeadRun(run)
  const unassignable = await prepare(run)
  const unwatch = await watchGraph(run)
  try {
    await schedule(run)
  } finally {
    await windDown(run, unwatch)
  }
  return end(run, unassignable)
}

/** The run's first line: its agents, its tasks and where they merge. */
async function begin(run: ActiveRun): Promise<void> {
  const { s, workspaces } = run
  const first = await s.store.read()
  // A project folder outside any repository is fine when every task names its repo: the target is then "?".
  const target = await workspaces
    .repoOf({} as Task)
    .then((repo) => workspaces.targetOf(repo))
    .catch(() => "?")
  s.bus.emit({ type: "run-start", agents: s.agents.map((a) => a.name), tasks: indexTasks(first.data).size, target })
  run.last = first
}

/** What a dead run left: its agents' process groups first (they may still be writing), then its merges. */
async function recoverDeadRun(run: ActiveRun): Promise<void> {
  const { s, fleet } = run
  const reaped = await run.groups.reap(s.project.dir)
  if (reaped.length > 0) s.bus.emit({ type: "notice", text: `stopped what a dead run left running for ${[...new Set(reaped)].join(", ")}` })
  // A git the dead run left (a merge finishing) is waited for, never killed: killed, it would leave its work half done.
  await awaitOrphanGit()
  // A dead run of this machine (killed outright, this clone's or another's) left its claims live: they go back
  // now, so that recovery and this run take its tasks up without waiting out their lease.
  await fleet?.freeDead()
  await recover(
    run.shared,
    indexTasks((await s.store.read()).data),
    fleet && { take: (id) => fleet.take([id], "recovery"), release: (id) => fleet.release(id) },
  )
  await serveSharedQueues(run)
  // Agents a stopped run left parked wait out their usage limit here too, their tasks with them.
  run.parking.restore(await s.db.agents.list())
}

/** A shared project's queues are every machine's: this run leads them and takes their checks from the start. */
async function serveSharedQueues(run: ActiveRun): Promise<void> {
  const { s } = run
  if (!s.store.shared) return
  const served = new Set<string>()
  for (const { task } of indexTasks((await s.store.read()).data).values()) {
    const ws = task.status === "done" ? undefined : await run.workspaces.forTask(task).catch(() => undefined)
    if (!ws || served.has(`${ws.repo}\0${ws.target}`)) continue
    served.add(`${ws.repo}\0${ws.target}`)
    await run.shared.landing.serve(ws).catch(() => {}) // a repository without the remote is said when a task needs it
  }
}

/** Says what this run leaves alone and what the rest may cost, and finds the tasks to resume; returns the tasks left alone. */
async function prepare(run: ActiveRun): Promise<{ id: string; agent: string }[]> {
  const { s } = run
  const unassignable = restrictedToOthers(indexTasks((await s.store.read()).data), s.agents)
  for (const u of unassignable)
    s.bus.emit({
      type: "notice",
      taskId: u.id,
      text: `left alone: its agent_name is '${u.agent}', which is not an agent of this run (agents: ${s.agents.map((a) => a.name).join(", ")})`,
    })
  // What the rest of the work may cost, when there is a budget or a spend to go by (docs/BUDGETS.md "Forecast").
  const spends = await spendByTask(s.db)
  if (s.budget || spends.size > 0) {
    for (const line of forecastLines(forecast(indexTasks((await s.store.read()).data), spends, s.budget), s.budget))
      s.bus.emit({ type: "notice", text: `forecast: ${line}` })
  }
  for (const warning of budgetWarnings(s.agents, s.budget, (m) => priceOf(s.prices, m) !== undefined)) s.bus.emit({ type: "notice", text: warning })
  // Tasks an earlier run left in progress are resumed first (rule 7), each in its own worktree.
  run.resumable = new Set(
    [...indexTasks((await s.store.read()).data).values()].filter((e) => e.task.status === "in_progress" || e.task.status === "assigned").map((e) => e.task.id),
  )
  return unassignable
}

/** Wakes the scheduler when the graph changes; returns what stops that. */
async function watchGraph(run: ActiveRun): Promise<() => Promise<void>> {
  const { s, wake } = run
  // People and agents change tasks.yaml from other processes (a checkpoint approved, a task reset). The watch
  // starts only here, where the run's finally closes it: a watcher left open by an error above (an invalid
  // tasks.yaml) kept the process from exiting. The loop re-reads the file first, so nothing before is missed.
  const unwatch = watchTasksFile(s.project.tasksFile, () => wake.notify())
  // A shared graph changes in the database, where no file event says so: it is looked at every few seconds
  // (docs/FLEET.md); a change's read is cheap there (only the rows written since the last one).
  // Other runs' writes are announced (LISTEN); the poll stays as the backstop for a listener that went quiet
  // (a dropped connection between its reconnects, a pooler in transaction mode that delivers nothing).
  const poll = s.store.shared ? setInterval(() => wake.notify(), SHARED_POLL_MS) : undefined
  const unlisten = await s.store.claims
    ?.listen(() => wake.notify())
    .catch((e) => {
      s.bus.emit({ type: "notice", text: `no wake-ups from the database (${(e as Error).message.split("\n")[0]}): looking every ${SHARED_POLL_MS / 1000} s` })
      return undefined
    })
  return async () => {
    await unwatch()
    clearInterval(poll)
    await unlisten?.().catch(() => {})
  }
}

/** Waits for every worker to finish (and land), closes the watches and the claims, and reaps what agents left. */
async function windDown(run: ActiveRun, unwatch: () => Promise<void>): Promise<void> {
  const { s, shared } = run
  run.parking.close()
  s.signal.removeEventListener("abort", run.onStop)
  await Promise.allSettled(run.running.values())
  await Promise.allSettled(shared.background)
  await shared.landing.idle() // the checks' scratch worktrees, removed after their checks
  await unwatch()
  await run.fleet?.close()
  // What agents left behind in their groups (a server started in the background) goes too. On a full disk
  // the groups are killed but their records stay: the next run's reap finds them gone. With the database
  // away the records cannot be read: what agents started is killed by its environment, and the next run
  // reaps the recorded groups.
  await run.groups.reap(s.project.dir).catch((e) => {
    if (!isDiskFull(e) && !(e instanceof StoreUnreachable)) throw e
  })
}

/** The run's last line and its summary, from tasks.yaml as the run leaves it. */
async function end(run: ActiveRun, unassignable: { id: string; agent: string }[]): Promise<RunSummary> {
  const { s } = run
  const { data } = await s.store.read().catch(() => run.last)
  const all = [...indexTasks(data).values()].map((e) => e.task)
  const summary: RunSummary = {
    done: all.filter((t) => t.status === "done").length,
    blocked: all.filter((t) => t.status === "blocked").map((t) => t.id),
    remaining: all.filter((t) => t.status !== "done").length,
    interrupted: s.signal.aborted,
    unassignable: unassignable.filter((u) => all.some((t) => t.id === u.id && t.status !== "done")),
  }
  s.bus.emit({ type: "run-end", ...summary, seconds: Math.round((performance.now() - run.started) / 100) / 10 })
  traceCpu()
  return summary
}

/** Open tasks whose agent_name names no agent of this run: nothing here will ever take them. */
function restrictedToOthers(index: Map<string, Indexed>, agents: AgentConfig[]): { id: string; agent: string }[] {
  const names = new Set(agents.map((a) => a.name))
  return [...index.values()]
    .map((e) => e.task)
    .filter(
      (t) =>
        t.agent_name !== undefined && !names.has(t.agent_name) && t.status !== "done" && t.status !== "blocked" && !t.subtasks?.length && t.checkpoint !== true,
    )
    .map((t) => ({ id: t.id, agent: t.agent_name! }))
}
