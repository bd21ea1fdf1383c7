// `flow step show|list <task_id>` as functions of the project: the reports the command prints (as text or
// with --json) and `flow mcp`'s step tools return.
import { FlowError } from "../cli/errors"
import { hint, run } from "../cli/hint"
import type { Project } from "../cli/project"
import { requireTask } from "../graph/task-lookup"
import type { StepListReport, StepReport, StepShowReport } from "../model/json-shapes"
import { indexTasks, type Step, type Task } from "../model/task-index"
import { stepStatus } from "../store/transitions"
import { openStore } from "../store/open"

/** The task's steps; a FlowError when it has none (its work is its instructions). */
async function stepsOf(project: Project, id: string): Promise<{ task: Task; steps: Step[] }> {
  const task = requireTask(indexTasks((await (await openStore(project)).read()).data), id).task
  const steps = task.steps ?? []
  if (steps.length === 0) {
    throw new FlowError(`task '${id}' has no steps`, undefined, hint`its work is described by its instructions: ${run("show", { task_id: id })}`)
  }
  return { task, steps }
}

function stepReport(step: Step): StepReport {
  const { id, instruction, acceptance_criteria, started_at, completed_at } = step
  return { id, status: stepStatus(step), instruction, acceptance_criteria, started_at, completed_at }
}

/** `flow step show --json`: the current step (the first in progress, else the first pending, else null) and the count done. */
export async function stepShow(project: Project, id: string): Promise<StepShowReport> {
  const { task, steps } = await stepsOf(project, id)
  const current = steps.find((s) => stepStatus(s) === "in_progress") ?? steps.find((s) => stepStatus(s) === "pending")
  const done = steps.filter((s) => stepStatus(s) === "done").length
  return { task_id: task.id, done, total: steps.length, current: current ? stepReport(current) : null }
}

/** `flow step list --json`: every step in order. */
export async function stepList(project: Project, id: string): Promise<StepListReport> {
  const { task, steps } = await stepsOf(project, id)
  return { task_id: task.id, steps: steps.map(stepReport) }
}
