// The merge queues of the live or last run as data, for `flow dashboard` and `flow view`: rebuilt from the
// run's `queue` events in the state database (lib/run/record.ts), the same events the run's log prints, so
// no other process needs the run's memory and a finished run's queue can still be read.
import type { MergeQueueReport } from "../model/json-shapes"
import type { Project } from "../cli/project"
import type { FlowEvent, RunState } from "../state/run-state"
import type { QueueRow } from "../state/queue-rows"
import { openExistingState } from "../state/state"
import type { QueueExit, ServiceLevels } from "./queue-types"

/** The `p`th percentile of `xs` by nearest rank (NaN for none): p95 of 20 values is the 19th smallest. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]
}

/** The service levels of a queue's candidates that left it (`exits`, with their tasks); undefined when none landed. */
export function serviceLevels(exits: readonly (QueueExit & { taskId: string })[]): ServiceLevels | undefined {
  const landed = exits.filter((e) => e.outcome === "landed")
  if (landed.length === 0) return undefined
  const longest = landed.reduce((a, b) => (b.seconds > a.seconds ? b : a))
  const checks = landed.reduce((n, e) => n + e.checks, 0)
  const seconds = landed.map((e) => e.seconds)
  const bisections = exits.reduce((n, e) => n + (e.outcome === "failed" ? (e.bisections ?? 0) : 0), 0)
  return {
    landed: landed.length,
    failed: exits.filter((e) => e.outcome === "failed").length,
    p50: percentile(seconds, 50),
    p95: percentile(seconds, 95),
    longest: { taskId: longest.taskId, seconds: longest.seconds },
    checksPerMerge: Math.round((checks / landed.length) * 100) / 100,
    thrown: exits.reduce((n, e) => n + e.thrown, 0),
    ...(bisections ? { bisections } : {}),
  }
}

/** The kinds `queueReport` reads, as lib/run/record.ts names them. */
export const QUEUE_EVENT_KINDS = ["queue", "merge", "run.end"] as const

type Candidate = MergeQueueReport[number]["candidates"][number]

/**
 * The queues as a person is shown them: a fleet's from the shared line itself, whichever machine asks (every
 * machine's candidates, and which machine checks each); else those of the latest run, from its events. []
 * before any run, or when no queue was used (no `verify`).
 */
export async function readQueues(db: RunState): Promise<MergeQueueReport> {
  const rows = await db.queue.line()
  if (rows.some((r) => r.machine !== null)) return lineReport(rows)
  return queueReport(await db.events.ofLastRun(QUEUE_EVENT_KINDS))
}

/** The candidates in line as the queue's rows have them (a fleet's), in the order of queueReport: the line, then the failed. */
export function lineReport(rows: readonly QueueRow[]): MergeQueueReport {
  const targets = new Map<string, Candidate[]>()
  for (const r of rows) {
    const state: Candidate["state"] = r.state === "checking" || r.state === "passed" || r.state === "failed" ? r.state : "waiting"
    const checked = state !== "waiting"
    const since = new Date(r.submitted_at)
    const c: Candidate = {
      task: r.task_id,
      state,
      reason: r.reason ?? (checked && r.ahead.length ? `on top of ${r.ahead.join(", ")}` : null),
      on_top_of: checked ? r.ahead : [],
      seconds: checked ? r.seconds : null,
      machine: checked ? r.check_machine : null,
      since: Number.isNaN(since.getTime()) ? null : since.toISOString(),
    }
    targets.set(r.target, [...(targets.get(r.target) ?? []), c])
  }
  return [...targets].map(([target, all]) => ({ target, candidates: [...all.filter((c) => c.state !== "failed"), ...all.filter((c) => c.state === "failed")] }))
}

/** The same from the project's state database, creating nothing: [] when there is none yet. */
export async function readProjectQueues(project: Project): Promise<MergeQueueReport> {
  const db = await openExistingState(project)
  if (!db) return []
  using open = db
  return await readQueues(open) // awaited here: the database closes when this function returns
}

/**
 * Each target's candidates: the ones still in line in queue order (the order they were handed over), then
 * the ones that failed out of it, with the reason. A candidate that lands (a `merge` event) leaves; one
 * handed over again after a fix attempt goes to the end of the line. Events of older runs are not passed in.
 */
export function queueReport(events: readonly FlowEvent[]): MergeQueueReport {
  const targets = new Map<string, Map<string, Candidate>>()
  for (const ev of events) {
    const d = (ev.data ?? {}) as Record<string, unknown>
    const task = typeof d.taskId === "string" ? d.taskId : ev.task_id
    if (ev.kind === "run.end") {
      // Whatever had not landed was dropped with the run; the next run hands it over again.
      for (const line of targets.values()) for (const c of line.values()) if (c.state !== "failed") c.reason = "the run ended before it landed"
      continue
    }
    if (!task || typeof d.target !== "string") continue
    let line = targets.get(d.target)
    if (!line) targets.set(d.target, (line = new Map()))
    if (ev.kind === "merge") {
      line.delete(task)
      continue
    }
    const state = d.state as Candidate["state"]
    const before = line.get(task)
    if (before && before.state === "failed" && state === "waiting") line.delete(task)
    const c: Candidate = line.get(task) ?? { task, state, reason: null, on_top_of: [], seconds: null, machine: null, since: ev.at }
    c.state = state
    c.reason = typeof d.reason === "string" ? d.reason : null
    c.seconds = typeof d.seconds === "number" ? d.seconds : null
    // Named only when another machine checks it (the event's `machine`); a rebuild waits for a new check.
    if (state === "checking") c.machine = typeof d.machine === "string" ? d.machine : null
    else if (state === "waiting") c.machine = null
    // The base a check ran on stays what the candidate passed or failed on; a rebuild starts from nothing.
    if (state === "checking") c.on_top_of = Array.isArray(d.onTopOf) ? d.onTopOf.map(String) : []
    else if (state === "waiting") c.on_top_of = []
    line.set(task, c)
  }
  return [...targets].flatMap(([target, line]) => {
    const all = [...line.values()]
    const candidates = [...all.filter((c) => c.state !== "failed"), ...all.filter((c) => c.state === "failed")]
    return candidates.length ? [{ target, candidates }] : []
  })
}

/**
 * What a candidate is about, in a few words: what its check ran on (`on top of a, b`, or `on main` for the
 * target itself) and by which machine (a fleet's), how long its last check took, the reason, and how long it
 * has been in line at `now` (ms since the epoch) once that is a minute or more. web/text.js queueDetail words it the same.
 */
export function queueDetail(c: Candidate, target: string, now?: number): string {
  const built = c.state === "checking" || c.state === "passed" || (c.state === "failed" && c.on_top_of.length > 0)
  const base = built ? (c.on_top_of.length ? `on top of ${c.on_top_of.join(", ")}` : `on ${target}`) : ""
  const by = c.machine ? `by ${c.machine}` : ""
  const took = c.seconds === null ? "" : `after ${c.seconds.toFixed(1)} s`
  const waited = now !== undefined && c.since ? Math.max(0, (now - Date.parse(c.since)) / 1000) : undefined
  // Said once it is a wait worth telling (a minute): a short one is the queue's normal pace.
  const inLine = waited === undefined || Number.isNaN(waited) || waited < 60 ? "" : `in line ${Math.round(waited / 60)} min`
  return [base, by, took, c.reason ?? "", inLine].filter(Boolean).join("; ")
}
