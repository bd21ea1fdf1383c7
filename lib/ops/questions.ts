// ask, answer and questions as functions of the project (docs/QUESTIONS.md): the questions live in
// .flow/state.db, which many processes write at once. `flow ask|answer|questions` print what these return;
// `flow mcp`'s tools return it as is.
import { formatDuration } from "../cli/duration"
import { Exit, FlowError } from "../cli/errors"
import { flag, hint, quoted } from "../cli/hint"
import type { Project } from "../cli/project"
import { closest } from "../cli/suggest"
import { requireTask } from "../graph/task-lookup"
import type { Question, QuestionsReport } from "../model/json-shapes"
import { indexTasks } from "../model/task-index"
import { openExistingState, openState } from "../state/state"
import { openStore } from "../store/open"
import { ago } from "../terminal/question-format"
import { answerCheck } from "../budget/budget-answer"
import * as clock from "../cli/clock"

/** How often a waiting ask looks at the database's change counter (a cheap read of the WAL index). */
const POLL_MS = 100

/** Checks that `taskId` names a task, then records the question; `agent` is the asker's FLOW_AGENT. */
export async function askQuestion(project: Project, taskId: string, text: string, agent: string | undefined): Promise<Question> {
  requireTask(indexTasks((await (await openStore(project)).read()).data), taskId)
  using db = await openState(project)
  return await db.questions.ask({ task_id: taskId, agent: agent || null, text })
}

/**
 * Resolves with the question once it has an answer, and records the answer as delivered to its asker (the run
 * must not hand it over again when the agent exits). Re-reads the question only when another process committed
 * something. `timeoutMs` passing first, or `signal` aborting (Ctrl-C, a cancelled tool call), is a FlowError
 * (exit 1, or 130 when cancelled) that says the question stays pending.
 */
export async function waitForAnswer(project: Project, id: string, by: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Question> {
  using db = await openState(project)
  const pending = hint`${id} stays pending: ${quoted("questions")} lists it, and ${quoted("questions", { all: true })} shows its answer once given`
  const { timeoutMs, signal } = opts
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + timeoutMs
  const aborted = new Promise<void>((resolve) => signal?.addEventListener("abort", () => resolve(), { once: true }))
  for (;;) {
    if (await db.changed()) {
      const q = await db.questions.get(id)
      if (!q) throw new FlowError(`${id} is no longer in ${db.where}`, Exit.failure, "was .flow/state.db deleted? ask again")
      if (q.answer !== null) {
        await db.questions.delivered(q.task_id, [id], by)
        return q
      }
    }
    if (signal?.aborted) throw new FlowError(`cancelled while waiting for the answer to ${id}`, Exit.cancelled, pending)
    const left = deadline - performance.now()
    if (left <= 0) throw new FlowError(`no answer to ${id} within ${formatDuration(timeoutMs!)}`, Exit.failure, pending)
    await Promise.race([Bun.sleep(Math.min(POLL_MS, left)), aborted])
  }
}

/** `flow answer`: records the answer (`3` stands for `q-3`); a FlowError for an unknown id or one answered already without `force`. */
export async function answerQuestion(project: Project, given: string, text: string, by: string, force = false): Promise<Question> {
  const id = /^\d+$/.test(given) ? `q-${given}` : given
  const db = await openExistingState(project)
  if (!db)
    throw new FlowError(
      `no question '${id}': no question has been asked in this project`,
      undefined,
      hint`agents ask with ${quoted("ask", { task_id: "<task_id>", text: "<text>" })}`,
    )
  using open = db
  const { before, after } = await open.questions.answer(id, text, by, { replace: force, accept: await answerCheck(project, open, id) })
  if (!before) {
    const pending = (await open.questions.pending()).map((q) => q.id)
    const near = closest(id, pending)
    throw new FlowError(
      `no question '${id}'`,
      undefined,
      near
        ? hint`did you mean '${near}'? ${quoted("questions")} lists the pending ones`
        : pending.length > 0
          ? `pending: ${pending.join(", ")}`
          : "no question is pending",
    )
  }
  if (!after) {
    throw new FlowError(
      `${id} was already answered${before.answered_by ? ` by ${before.answered_by}` : ""} ${ago(before.answered_at!, clock.now())}: ${JSON.stringify(before.answer)}`,
      undefined,
      hint`a waiting agent may have read that answer already; pass ${flag("force")} to replace it`,
    )
  }
  return after
}

/** `flow questions --json`: the pending questions oldest first, or every question with `all`. Creates no database. */
export async function listQuestions(project: Project, all = false): Promise<QuestionsReport> {
  const db = await openExistingState(project)
  if (!db) return { questions: [] }
  using open = db
  return { questions: await (all ? open.questions.all() : open.questions.pending()) }
}
