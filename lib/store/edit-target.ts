// What both task editors (tasks.yaml's text editor, lib/store/task-edit.ts, and the shared store's row editor,
// lib/store/postgres/row-editor.ts) say about the record an edit names, so the two give the same errors.
import { FlowError } from "../cli/errors"
import type { Indexed } from "../model/task-index"
import type { EditTarget } from "./store"

/** The task or step an edit names, as a record; a FlowError when there is none. */
export function editRecord(index: Map<string, Indexed>, target: EditTarget): Record<string, unknown> {
  const task = index.get(target.taskId)?.task
  if (!task) throw new FlowError(`no task '${target.taskId}'`)
  if (target.stepId === undefined) return task as Record<string, unknown>
  const step = task.steps?.find((s) => s.id === target.stepId)
  if (!step) throw new FlowError(`task '${target.taskId}' has no step '${target.stepId}'`)
  return step as Record<string, unknown>
}

/** `task 'api'` or `step 'api-1'`. */
export function describeTarget(target: EditTarget): string {
  return target.stepId === undefined ? `task '${target.taskId}'` : `step '${target.stepId}'`
}

/** An edit that sets a value where a list or a mapping is. */
export function notAValue(target: EditTarget, key: string, list: boolean): FlowError {
  return new FlowError(`cannot set '${key}' of ${describeTarget(target)}: it holds a ${list ? "list" : "mapping"}, not a value`)
}

/** An edit that appends to something that is not a list. */
export function notAList(target: EditTarget, key: string): FlowError {
  return new FlowError(`cannot add to '${key}' of ${describeTarget(target)}: it is not a list`)
}
