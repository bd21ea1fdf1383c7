// The check of an answer typed to a question (`flow answer`, MCP's flow_answer, the run screen's `a`, the
// inspector's answer box): an answer to a budget question must be an amount of its unit that takes its task
// back under its cap (docs/BUDGETS.md), the spend and the cap read as `flow show` reads them.
import type { Project } from "../cli/project"
import { indexTasks } from "../model/task-index"
import type { AnswerCheck, RunState } from "../state/run-state"
import { readBudgetConfig } from "../config/budget-config"
import { openStore } from "../store/open"
import { checkBudgetAnswer, grantsOf, taskLimits, unitOf, withGrants } from "./budget"
import { taskSpend } from "./budget-meter"

/**
 * How an answer to question `id` is checked: checkBudgetAnswer, given, for a budget question, its task's spend
 * and cap in the question's unit (with what other answers granted; the answer it replaces aside).
 */
export async function answerCheck(project: Project, db: RunState, id: string): Promise<AnswerCheck> {
  const q = await db.questions.get(id)
  const unit = q ? unitOf(q) : undefined
  if (!q || unit === undefined) return checkBudgetAnswer
  const task = indexTasks((await (await openStore(project)).read()).data).get(q.task_id)?.task
  const caps = taskLimits(await readBudgetConfig(project.dir), task ?? {})
  if (caps[unit] === undefined) return checkBudgetAnswer
  const others = (await db.questions.aboutBudget(q.task_id)).filter((other) => other.id !== q.id)
  const line = { taskId: q.task_id, spent: (await taskSpend(db, q.task_id))[unit], cap: withGrants(caps, grantsOf(others))[unit]! }
  return (question, text) => checkBudgetAnswer(question, text, question.id === q.id ? line : undefined)
}
