// A task's evidence (docs/REVIEW.md, "Evidence"): what its landing stands on, recorded in the run state's event
// log when its branch is handed to the merge queue (`task.evidence`, each fix round's hand-over again), and what
// its landing went through since, read back from the events the run records anyway (`check.result`,
// `queue.end`, `merge`). The merge commit's trailers are made from the recorded part, so `git log` and
// `flow show` say the same.
import type { EvidenceCheck, LandingEvidence, TaskEvidence, Usage } from "../model/json-shapes"
import type { FlowEvent, RunState } from "../state/run-state"
import type { Project } from "../cli/project"
import { openExistingState } from "../state/state"
import { diffStats } from "../git/diff-stats"
import { usageText } from "../budget/usage"

/** The event kinds a task's evidence is read from. */
const KINDS = ["task.start", "task.evidence", "check.result", "queue.end", "merge"] as const

/** Where a branch is handed over: the task, its repository, branch and commit, the target's commit, flow's own files, the check's command. */
export type HandOver = {
  taskId: string
  repo: string
  branch: string
  head: string
  target: string
  targetCommit: string
  keepOut: string[]
  check: string | null
}

/**
 * Records what the task's landing stands on, now that its branch `head` is handed to the queue, and returns it
 * (its trailers go on the merge commit). Awaited before the hand-over, so every check of it comes after it.
 */
export async function recordEvidence(db: RunState, h: HandOver): Promise<LandingEvidence> {
  const [events, usage, spend] = await Promise.all([db.events.ofTask(h.taskId, ["task.start", "fix"]), db.usage.byTask(), db.spend.byTask(h.taskId)])
  const starts = events.filter((e) => e.kind === "task.start")
  const since = starts.at(-1)?.id ?? 0
  const seconds = spend.reduce((sum, r) => sum + (r.seconds ?? 0), 0)
  const evidence: LandingEvidence = {
    branch: h.branch,
    target: h.target,
    head: h.head,
    diff: await diffStats(h.repo, h.targetCommit, h.head, h.keepOut),
    check: h.check,
    agent: starts.at(-1)?.agent ?? null,
    attempts: starts.length,
    fix_rounds: events.filter((e) => e.kind === "fix" && e.id > since).length,
    usage: usage.get(h.taskId) ?? null,
    agent_seconds: spend.some((r) => r.seconds !== null) ? Math.round(seconds * 1000) / 1000 : null,
  }
  await db.events.append({ kind: "task.evidence", task_id: h.taskId, agent: evidence.agent, data: evidence })
  return evidence
}

/** The merge commit's message: its subject, then the evidence's summary as git trailers (`git log --format=%(trailers)`). */
export function mergeMessage(subject: string, taskId: string, e: LandingEvidence): string {
  const agent = `${e.agent ?? "none"} (attempts ${e.attempts}, fix rounds ${e.fix_rounds})`
  const trailers = [`Flow-Task: ${taskId}`, `Flow-Agent: ${agent}`, `Flow-Check: ${e.check ?? "none"}`, `Flow-Cost: ${costText(e.usage, e.agent_seconds)}`]
  return `${subject}\n\n${trailers.join("\n")}\n`
}

/** The tokens, dollars and agent time of a landing, in one line; "none reported" when the agents said nothing. */
export function costText(usage: Usage | null, seconds: number | null): string {
  const parts = [usageText(usage), seconds === null ? undefined : `${seconds} s of agent turns`].filter(Boolean)
  return parts.length > 0 ? parts.join(", ") : "none reported"
}

/** The task's evidence from the run state; null when its branch was never handed to a merge queue. */
export async function readEvidence(db: RunState, taskId: string): Promise<TaskEvidence | null> {
  const events = await db.events.ofTask(taskId, KINDS)
  const since = events.findLast((e) => e.kind === "task.start")?.id ?? 0
  const handed = events.filter((e) => e.kind === "task.evidence")
  const last = handed.at(-1)
  if (!last) return null
  const after = events.filter((e) => e.id > last.id)
  const end = after.find((e) => e.kind === "queue.end")?.data as { outcome: string; seconds: number; checks: number; thrown: number } | undefined
  const merge = after.find((e) => e.kind === "merge")?.data as { commit: string } | undefined
  return {
    task: taskId,
    ...(last.data as LandingEvidence),
    state: end === undefined || end.outcome === "stopped" ? "waiting" : end.outcome === "landed" ? "landed" : "failed",
    submitted_at: last.at,
    commit: merge?.commit ?? null,
    checks: events.filter((e) => e.kind === "check.result" && e.id > since).map(checkOf),
    queue: end === undefined || end.outcome === "stopped" ? null : { seconds: end.seconds, checks: end.checks, thrown: end.thrown },
  }
}

/** The task's evidence in the project's run state; null when it has none (or the project no state yet). */
export async function readTaskEvidence(project: Project, taskId: string): Promise<TaskEvidence | null> {
  const db = await openExistingState(project)
  if (!db) return null
  using open = db
  return readEvidence(open, taskId)
}

/** A `check.result` event as the evidence shows it. */
function checkOf(e: FlowEvent): EvidenceCheck {
  const d = e.data as { command: string; passed: boolean; code: number | null; timedOut: boolean; seconds: number; output: string }
  return { command: d.command, passed: d.passed, exit_code: d.code, timed_out: d.timedOut, seconds: d.seconds, output_tail: d.output, at: e.at }
}
