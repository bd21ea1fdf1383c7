import { FlowError } from "../cli/errors"
import { type Hint, hint, run } from "../cli/hint"
import { closest } from "../cli/suggest"
import { findStep, type Indexed } from "../model/task-index"

/**
 * The task with this id, or a FlowError that names it and the closest existing id. A step id gets its own
 * answer (a near task id would be the wrong fix): `stepHint` says which command takes the step, else the
 * hint names the step's task.
 */
export function requireTask(index: Map<string, Indexed>, id: string, stepHint?: (stepId: string, taskId: string) => Hint): Indexed {
  const found = index.get(id)
  if (found) return found
  const step = findStep(index, id)
  if (step) {
    throw new FlowError(
      `'${id}' is a step of task '${step.task.id}', not a task`,
      undefined,
      stepHint?.(id, step.task.id) ?? `use the task's id, '${step.task.id}'`,
    )
  }
  const near = closest(id, index.keys())
  throw new FlowError(`no task '${id}' in tasks.yaml`, undefined, near ? `did you mean '${near}'?` : hint`${run("list")} to see the task ids`)
}
