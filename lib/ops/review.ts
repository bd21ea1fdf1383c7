// The review gate's list, show and decisions as functions of the project (docs/REVIEW.md): `flow review`
// prints what these return, and `flow mcp`'s review tools return it as is, so both say the same.
import { Exit, FlowError } from "../cli/errors"
import type { Project } from "../cli/project"
import { run as runProcess } from "../cli/proc"
import { loadConfig } from "../config/config"
import { GIT_ENV } from "../git/git"
import { Workspaces } from "../git/workspace"
import { decide, notWaiting, waitingReviews } from "../landing/review-gate"
import type { ReviewDecision, ReviewReport, ReviewsReport, WaitingReview } from "../model/json-shapes"
import { indexTasks, type Indexed } from "../model/task-index"
import { readEvidence } from "../run/evidence"
import { answerer, type RunState } from "../state/run-state"
import { openExistingState } from "../state/state"
import { openStore } from "../store/open"

/**
 * `fn` with what waits for review and the run state. No state yet: nothing was ever handed to a merge queue,
 * so nothing waits (and nothing is created).
 */
async function withReviews<T>(project: Project, fn: (waiting: WaitingReview[], db: RunState | undefined) => Promise<T>): Promise<T> {
  using db = await openExistingState(project)
  const waiting = db ? await waitingReviews(loadConfig(project.dir).review, await openStore(project), db) : []
  return await fn(waiting, db)
}

/** What waits for review, in queue order. */
export function reviewList(project: Project): Promise<ReviewsReport> {
  return withReviews(project, async (reviews) => ({ reviews }))
}

/**
 * One waiting review: the task's evidence and its diff against the target (three-dot), with the repository and
 * the range for a terminal to page the diff through git itself.
 */
export function reviewShow(project: Project, taskId: string): Promise<{ report: ReviewReport; repo: string; range: string }> {
  return withReviews(project, async (waiting, db) => {
    const review = waiting.find((x) => x.task === taskId)
    if (!review || !db) throw notWaiting(taskId, waiting)
    const config = loadConfig(project.dir)
    const task = (indexTasks((await (await openStore(project)).read()).data).get(taskId) as Indexed).task
    const repo = await new Workspaces(project, { repo: config.repo }).repoOf(task)
    const range = `${review.target}...${review.head}`
    const diff = await runProcess(["git", "-C", repo, "diff", range], { cwd: repo, env: GIT_ENV })
    return { report: { review, evidence: await readEvidence(db, taskId), diff: diff.stdout }, repo, range }
  })
}

/**
 * A decision on a waiting review: approve, or changes with the comment its agent gets as a fix round. `env`
 * says who decides: an agent (FLOW_AGENT, the `flow` of an agent's session) decides only a review flow.yaml
 * gives it, never its own work nor a person's review; a person (USER) any.
 */
export function reviewDecide(
  project: Project,
  taskId: string,
  decision: ReviewDecision["decision"],
  comment: string | null,
  env: Record<string, string | undefined>,
): Promise<ReviewDecision> {
  const agent = env.FLOW_AGENT || undefined
  return withReviews(project, async (waiting, db) => {
    const w = waiting.find((x) => x.task === taskId)
    if (!db || !w) throw notWaiting(taskId, waiting)
    if (agent !== undefined && w.reviewer !== agent)
      throw new FlowError(
        `agent ${agent} cannot decide on the review of '${taskId}': ${w.reviewer === "person" ? "a person reviews it" : `agent ${w.reviewer} reviews it`}`,
        Exit.invalid,
        "an agent decides only the reviews flow.yaml's review gives it (docs/REVIEW.md)",
      )
    return decide(waiting, db, taskId, decision, comment, agent ?? answerer(env))
  })
}
