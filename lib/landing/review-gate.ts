// The review gate (docs/REVIEW.md, "The review gate"): a task whose flow.yaml `review` names a reviewer lands
// only once its merge passed its check and the reviewer approved its branch's commit. A decision is an event
// of the run state (`review.decision`, both backends), keyed by the commit it was made on: a fix round's new
// commit waits for a new decision, and a candidate rebuilt on a moved target keeps its approval.
import { FlowError } from "../cli/errors"
import { hint, quoted } from "../cli/hint"
import { reviewerOf, type ReviewConfig } from "../config/review-config"
import type { ReviewState } from "./queue-types"
import type { ReviewDecision, WaitingReview } from "../model/json-shapes"
import { indexTasks, topLevelOf, type Indexed } from "../model/task-index"
import type { QueueRow } from "../state/queue-rows"
import type { RunState } from "../state/run-state"
import type { TaskStore } from "../store/store"

export type Decision = ReviewDecision

/** The latest decision on the task's commit `head`, if any. */
export async function decisionOn(db: RunState, taskId: string, head: string): Promise<Decision | undefined> {
  const events = await db.events.ofTask(taskId, ["review.decision"])
  const e = events.findLast((x) => (x.data as Decision).head === head)
  return e ? { ...(e.data as Omit<Decision, "at">), at: e.at } : undefined
}

/**
 * The agent reviewer that exited without deciding on the task's commit `head`, if one did: the review is then
 * a person's (recorded as a `review.agent` event by lib/ops/review-agent.ts).
 */
export async function agentGaveUp(db: RunState, taskId: string, head: string): Promise<string | undefined> {
  const events = await db.events.ofTask(taskId, ["review.agent"])
  return (events.findLast((x) => (x.data as { head: string }).head === head)?.data as { agent: string } | undefined)?.agent
}

/** Who reviews the commit now: the agent named, until it exited without deciding; then a person. */
async function reviewerNow(db: RunState, reviewer: string, taskId: string, head: string): Promise<string> {
  return reviewer === "person" || (await agentGaveUp(db, taskId, head)) ? "person" : reviewer
}

/** The task's phase as the review gate reads it: its own, else its top-level task's. */
export function phaseOf(index: Map<string, Indexed>, entry: Indexed): number | null {
  return entry.task.phase ?? topLevelOf(index, entry).task.phase ?? null
}

/** The queue's question (QueueOptions.review) for a run: where the review of a task's commit stands. */
export function reviewGate(
  config: ReviewConfig | undefined,
  store: TaskStore,
  db: RunState,
): ((taskId: string, head: string) => Promise<ReviewState>) | undefined {
  if (config === undefined) return undefined
  return async (taskId, head) => {
    const index = indexTasks((await store.read()).data)
    const entry = index.get(taskId)
    const reviewer = entry ? reviewerOf(config, taskId, phaseOf(index, entry)) : null
    if (reviewer === null) return { state: "none" }
    const d = await decisionOn(db, taskId, head)
    if (!d) {
      const now = await reviewerNow(db, reviewer, taskId, head)
      return now === "person" ? { state: "waiting" } : { state: "waiting", agent: now }
    }
    return d.decision === "approve" ? { state: "approved" } : { state: "changes", comment: d.comment ?? "" }
  }
}

/** The candidates in every queue whose merge passed and whose review waits, in queue order. */
export async function waitingReviews(config: ReviewConfig | undefined, store: TaskStore, db: RunState): Promise<WaitingReview[]> {
  if (config === undefined) return []
  const index = indexTasks((await store.read()).data)
  const out: WaitingReview[] = []
  for (const r of await db.queue.line()) {
    const entry = index.get(r.task_id)
    if (r.state !== "passed" || !entry) continue
    const reviewer = reviewerOf(config, r.task_id, phaseOf(index, entry))
    if (reviewer === null || (await decisionOn(db, r.task_id, r.head))) continue
    out.push(waiting(r, entry, await reviewerNow(db, reviewer, r.task_id, r.head)))
  }
  return out
}

function waiting(r: QueueRow, entry: Indexed, reviewer: string): WaitingReview {
  return { task: r.task_id, title: entry.task.title, branch: r.branch, head: r.head, target: r.target, reviewer, since: r.submitted_at }
}

/** The error for a task that does not wait for review, naming what does. */
export function notWaiting(taskId: string, waitingNow: WaitingReview[]): FlowError {
  const names = waitingNow.map((x) => x.task).join(", ")
  return new FlowError(
    `task '${taskId}' does not wait for review`,
    undefined,
    names ? hint`waiting: ${names} (${quoted("review")} lists them)` : hint`nothing waits for review: ${quoted("review")} lists what does`,
  )
}

/**
 * Records a person's decision on a waiting review: approve, or changes with the comment its agent gets. A task
 * that does not wait for review is a FlowError naming what waits.
 */
export async function decide(
  waitingNow: WaitingReview[],
  db: RunState,
  taskId: string,
  decision: Decision["decision"],
  comment: string | null,
  by: string,
): Promise<Decision> {
  const w = waitingNow.find((x) => x.task === taskId)
  if (!w) throw notWaiting(taskId, waitingNow)
  const data = { task: taskId, head: w.head, decision, comment, by }
  await db.events.append({ kind: "review.decision", task_id: taskId, data })
  return (await decisionOn(db, taskId, w.head)) as Decision
}
