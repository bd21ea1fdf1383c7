// What `flow dashboard` shows, as data: built from tasks.yaml, the state database and the run lock. The
// JSON snapshot is this report; the screen is drawn from it by lib/dashboard/dashboard-render.ts.
import { basename } from "node:path"
import { waitsForReview } from "../graph/checkpoint"
import { isoSeconds, parseTimestamp } from "../cli/clock"
import type { DashboardReport, LandingWait, MergeQueueReport } from "../model/json-shapes"
import { lockHolder } from "../store/lock"
import { phaseHeader, readPhaseTitles } from "../plan/plan-phases"
import { runLockTarget, type Project } from "../cli/project"
import { currentStep } from "../run/prompt"
import { readQueues } from "../run/queue-report"
import { landingWaitsOf } from "../run/landing-waits"
import { openExistingState, type AgentRecord } from "../run/state-db"
import { TASK_STATUSES } from "../model/statuses"
import { indexTasks, topLevelOf, type Indexed, type Task, type TaskFile } from "../model/task-index"
import { NO_USAGE, usageFrom, type UsageTotals } from "../run/usage"

/** How many done tasks "Recently completed" lists. */
export const RECENT_LIMIT = 10

/** What the state database and the run lock say now; everything but tasks.yaml. */
export type RuntimeState = {
  agents: AgentRecord[]
  questions: number
  run: { pid: number; since: string } | null
  /** each task's last end in a run: a task left in progress there was stopped with the run */
  ends: Map<string, { agent: string | null; at: string; status: string }>
  usage: UsageTotals
  /** the merge queues of the live or last run */
  queue: MergeQueueReport
  /** the landings of the live run that wait for the person */
  landing: LandingWait[]
}

/** Reads the runtime state without creating anything: no database yet means no agents and no questions. */
export async function readRuntime(project: Project): Promise<RuntimeState> {
  const db = await openExistingState(project)
  let agents: AgentRecord[] = []
  let questions = 0
  let ends: RuntimeState["ends"] = new Map()
  let usage = NO_USAGE
  let queue: MergeQueueReport = []
  let landing: LandingWait[] = []
  const holder = lockHolder(runLockTarget(project))
  if (db) {
    using open = db
    agents = await open.agents.list()
    questions = (await open.questions.pending()).length
    ends = await open.events.lastTaskEnds()
    usage = await usageFrom(open)
    queue = await readQueues(open)
    if (holder) landing = [...(await landingWaitsOf(open, holder.pid)).values()]
  }
  return { agents, questions, run: holder ? { pid: holder.pid, since: holder.since } : null, ends, usage, queue, landing }
}

/** The snapshot of `data` and `runtime` at `now` (ms since the epoch). */
export function dashboardReport(project: Project, data: TaskFile, runtime: RuntimeState, now: number): DashboardReport {
  const index = indexTasks(data)
  const tasks = [...index.values()].map((e) => e.task)
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<(typeof TASK_STATUSES)[number], number>
  for (const t of tasks) counts[t.status]++
  const total = tasks.length
  const groupOf = phaseGroupOf(index)
  const working = new Map(runtime.agents.filter((a) => a.current_task !== null).map((a) => [a.current_task as string, a.name]))
  const secondsSince = (iso: string | undefined) => {
    const at = parseTimestamp(iso)
    return at === undefined ? null : Math.max(0, Math.floor((now - at) / 1000))
  }
  return {
    project: basename(project.dir),
    at: isoSeconds(new Date(now)),
    counts: { ...counts, total, percent_done: total === 0 ? 0 : Math.floor((counts.done * 100) / total) },
    phases: phaseCounts(project, data, tasks, groupOf),
    running: tasks
      .filter((t) => t.status === "in_progress" || t.status === "assigned")
      .map((t) => {
        const stopped = working.has(t.id) ? undefined : stoppedWith(t, runtime)
        return {
          id: t.id,
          title: t.title,
          phase: groupOf(t),
          status: t.status,
          agent: working.get(t.id) ?? stopped?.agent ?? t.agent_name ?? null,
          started_at: t.started_at ?? null,
          seconds: secondsSince(t.started_at),
          step: stepPosition(t),
          live: working.has(t.id) ? runtime.run !== null : stopped ? false : null,
          usage: runtime.usage.byTask.get(t.id) ?? null,
        }
      }),
    recent: tasks
      .flatMap((t) => {
        const at = t.status === "done" ? parseTimestamp(t.completed_at) : undefined
        return at === undefined ? [] : [{ task: t, at }]
      })
      .sort((a, b) => b.at - a.at)
      .slice(0, RECENT_LIMIT)
      .map(({ task, at }) => ({
        id: task.id,
        title: task.title,
        phase: groupOf(task),
        completed_at: task.completed_at as string,
        seconds_ago: Math.max(0, Math.floor((now - at) / 1000)),
      })),
    questions: runtime.questions,
    review: tasks.filter((t) => waitsForReview(index, t)).map((t) => t.id),
    run: runtime.run,
    usage: { run: runtime.usage.run, total: runtime.usage.total },
    queue: runtime.queue,
    landing: runtime.landing,
  }
}

/**
 * The phase group of a task, the one `flow list` shows it under: a top-level task's own `phase`, a subtask's
 * top-level task's (null without one).
 */
function phaseGroupOf(index: Map<string, Indexed>): (task: Task) => number | null {
  return (task) => topLevelOf(index, index.get(task.id) as Indexed).task.phase ?? null
}

/**
 * Done, running and total tasks per phase group, ascending with `No phase` last; none at all when no task has a
 * phase (one `No phase` line would only repeat the task counts). Titles as `flow list` prints its headers.
 */
function phaseCounts(project: Project, data: TaskFile, tasks: Task[], groupOf: (task: Task) => number | null): DashboardReport["phases"] {
  const groups = new Map<number | null, { done: number; running: number; total: number }>()
  for (const t of tasks) {
    const phase = groupOf(t)
    const g = groups.get(phase) ?? { done: 0, running: 0, total: 0 }
    g.total++
    if (t.status === "done") g.done++
    if (t.status === "in_progress" || t.status === "assigned") g.running++
    groups.set(phase, g)
  }
  if (groups.size === 0 || (groups.size === 1 && groups.has(null))) return []
  const titles = readPhaseTitles(project.dir, data)
  return [...groups]
    .sort(([a], [b]) => (a ?? Number.POSITIVE_INFINITY) - (b ?? Number.POSITIVE_INFINITY))
    .map(([phase, g]) => ({ phase, title: phase === null ? "No phase" : phaseHeader(phase, titles), ...g }))
}

/**
 * The run's end of a task that a stopped run left in progress (the next `flow run` resumes it), unless the
 * task was started again since (by hand, or by an agent outside a run).
 */
function stoppedWith(task: Task, runtime: RuntimeState): { agent: string | null } | undefined {
  const end = runtime.ends.get(task.id)
  if (!end || end.status !== task.status) return undefined
  const started = parseTimestamp(task.started_at)
  const ended = parseTimestamp(end.at)
  return started !== undefined && ended !== undefined && started > ended ? undefined : end
}

/** The current step as `k` of `n` (the last when every step is done); null for a task without steps. */
function stepPosition(task: Task): { current: number; total: number } | null {
  const steps = task.steps ?? []
  if (steps.length === 0) return null
  const current = currentStep(task)
  return { current: current ? steps.indexOf(current) + 1 : steps.length, total: steps.length }
}
