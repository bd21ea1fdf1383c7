// A task status given on the command line (`flow list <status>`): one of SPEC 3.1's values, or a usage error.
import { usage } from "../cli/errors"
import { TASK_STATUSES } from "../model/statuses"
import { closest } from "../cli/suggest"
import type { Task } from "../model/task-index"

export function statusArg(value: string, usageLine: string): Task["status"] {
  if ((TASK_STATUSES as readonly string[]).includes(value)) return value as Task["status"]
  const near = closest(value, TASK_STATUSES)
  throw usage(`'${value}' is not a task status`, `${near ? `did you mean '${near}'? ` : ""}valid statuses: ${TASK_STATUSES.join(", ")} (usage: ${usageLine})`)
}
