import { FlowError } from "./errors"
import { closest } from "./suggest"
import type { Indexed } from "./task-index"

/** The task with this id, or a FlowError that names it and the closest existing id. */
export function requireTask(index: Map<string, Indexed>, id: string): Indexed {
  const found = index.get(id)
  if (found) return found
  const near = closest(id, index.keys())
  throw new FlowError(`no task '${id}' in tasks.yaml`, undefined, near ? `did you mean '${near}'?` : "run 'flow list' to see the task ids")
}
