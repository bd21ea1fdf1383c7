// What `flow dashboard` shows, as data: built from tasks.yaml, the state database and the run lock. The
// JSON snapshot is this report; the screen is drawn from it by lib/dashboard/dashboard-render.ts.
import { basename } from "node:path"
import { waitsForReview } from "../graph/checkpoint"
import { isoSeconds, parseTimestamp } from "../cli/clock"
import type { DashboardReport, LandingWait, LiveRun, MergeQueueReport, WaitingReview } from "../model/json-shapes"
import { phaseHeader, readPhaseTitles } from "../plan/plan-phases"
import type { Project } from "../cli/project"
import { currentStep } from "../prompts/prompt"
import { readQueues } from "../landing/queue-report"
import { landingWaitsOf } from "../landing/landing-waits"
import { liveRuns, openExistingState } from "../state/state"
import { NO_WORK, workedBy, workFrom, type WorkLedger } from "../run/worked-by"
import { TASK_STATUSES } from "../model/statuses"
import { indexTasks, topLevelOf, type Indexed, type Task, type TaskFile } from "../model/task-index"
import { NO_USAGE, usageFrom, type UsageTotals } from "../budget/usage"
import { type BudgetState, NO_BUDGET_STATE, readBudgetState, runBudgetFrom, taskBudgetFrom } from "../budget/budget-report"
import { readBudgetConfig, readConfigPart } from "../config/budget-config"
import type { RunState } from "../state/run-state"
import { storeSetting } from "../store/setting"

/** How many done tasks "Recently completed" lists. */
export const RECENT_LIMIT = 10

/** What the state database and the run lock say now; everything but tasks.yaml. */
export type RuntimeState = {
  questions: number
  /** the live runs (lib/state/state.ts liveRuns), oldest first: this clone's, or on a shared project every machine's */
  runs: LiveRun[]
  /** whether the project is shared (its report then lists every live run) */
  shared: boolean
  /** who works or worked on each task (lib/run/worked-by.ts) */
  work: WorkLedger
  usage: UsageTotals
  /** the merge queues of the live or last run */
  queue: MergeQueueReport
  /** spend and caps (docs/BUDGETS.md), parked tasks */
  budget: BudgetState
  /** the landings of the live runs that wait for the person */
  landing: LandingWait[]
  /** the merges that wait for their reviewer (what `flow review` lists) */
  reviews: WaitingReview[]
}

/** Reads the runtime state without creating anything: no database yet means no agents and no questions. */
export async function readRuntime(project: Project): Promise<RuntimeState> {
  const [db, runs, setting] = await Promise.all([openExistingState(project), liveRuns(project), storeSetting(project)])
  let questions = 0
  let work: WorkLedger = { ...NO_WORK, runs }
  let usage = NO_USAGE
  let queue: MergeQueueReport = []
  const config = await readBudgetConfig(project.dir)
  let budget: BudgetState = { ...NO_BUDGET_STATE, config }
  let landing: LandingWait[] = []
  let reviews: WaitingReview[] = []
  if (db) {
    using open = db
    questions = (await open.questions.pending()).length
    work = await workFrom(open, runs)
    usage = await usageFrom(open)
    queue = await readQueues(open)
    budget = await readBudgetState(open, config)
    landing = [...(await landingWaitsOf(open, runs)).values()]
    reviews = await reviewsWaiting(project, open)
  }
  return { questions, runs, shared: setting.kind !== "file", work, usage, queue, budget, landing, reviews }
}

/** What waits for review; the review gate's code (and arktype, for flow.yaml) is loaded only when flow.yaml has a `review`. */
async function reviewsWaiting(project: Project, db: RunState): Promise<WaitingReview[]> {
  const config = await readConfigPart(project.dir, "review")
  if (config === undefined) return []
  const [{ waitingReviews }, { openStore }] = await Promise.all([import("../landing/review-gate"), import("../store/open")])
  return waitingReviews(config, await openStore(project), db)
}

/** The snapshot of `data` and `runtime` at `now` (ms since the epoch). */
export function dashboardReport(project: Project, data: TaskFile, runtime: RuntimeState, now: number): DashboardReport {
  const index = indexTasks(data)
  const tasks = [...index.values()].map((e) => e.task)
  const counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<(typeof TASK_STATUSES)[number], number>
  for (const t of tasks) counts[t.status]++
  const total = tasks.length
  const groupOf = phaseGroupOf(index)
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
        // An agent that left the task ("ended") is history: the one it is restricted to is shown then.
        const w = workedBy(t, runtime.work)
        const held = w !== null && w.state !== "ended"
        return {
          id: t.id,
          title: t.title,
          phase: groupOf(t),
          status: t.status,
          agent: held ? w.agent : (t.agent_name ?? null),
          started_at: t.started_at ?? null,
          seconds: secondsSince(t.started_at),
          step: stepPosition(t),
          live: held ? w.state === "working" : null,
          usage: runtime.usage.byTask.get(t.id) ?? null,
          budget: taskBudgetFrom(runtime.budget, t),
          parked_until: runtime.budget.parked.get(t.id) ?? null,
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
    reviews: runtime.reviews,
    blocked: tasks.filter((t) => t.status === "blocked").map((t) => ({ id: t.id, title: t.title, note: blockNote(t) })),
    run: runtime.runs[0] ?? null,
    ...(runtime.shared ? { runs: runtime.runs } : {}),
    usage: { run: runtime.usage.run, total: runtime.usage.total, budget: runBudgetFrom(runtime.budget) },
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
 * Why a blocked task waits, as one line: the first line of its last note. A block (by an agent, a failed
 * check, a conflict, a person) appends its reason as the newest note; older notes are history.
 */
function blockNote(task: Task): string | null {
  const line = task.ai_notes?.at(-1)?.trim().split("\n", 1)[0].trim()
  return line ? line : null
}

/** The current step as `k` of `n` (the last when every step is done); null for a task without steps. */
function stepPosition(task: Task): { current: number; total: number } | null {
  const steps = task.steps ?? []
  if (steps.length === 0) return null
  const current = currentStep(task)
  return { current: current ? steps.indexOf(current) + 1 : steps.length, total: steps.length }
}
