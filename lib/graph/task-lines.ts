// The one-line form of a task shared by list, next and show's subtask lines, and its JSON twin
// (TaskSummary). Both are built from the plain parsed data, so the read path never loads arktype.
import type { TaskSummary } from "../model/json-shapes"
import type { Task } from "../model/task-index"

/**
 * `[<status>] <id> <title>` then ` (depends: a, b)` when the task has dependencies (the first five and how many
 * more past six) and ` (checkpoint)` when
 * it waits for a person's review (SPEC 3.2 rule 5); `status` words the status otherwise.
 */
export function taskLine(task: Task, status: string = task.status): string {
  const deps = task.depends_on
  return `[${status}] ${task.id} ${oneLine(task.title)}${deps && deps.length > 0 ? ` (depends: ${dependsText(deps)})` : ""}${task.checkpoint === true ? " (checkpoint)" : ""}`
}

/**
 * A checkpoint that waits for every open end of a big plan depends on dozens of tasks: its line names the
 * first few and counts the rest (`flow show` and `--json` list them all), so no line runs to 900 characters.
 */
const LISTED_DEPS = 5

function dependsText(deps: readonly string[]): string {
  if (deps.length <= LISTED_DEPS + 1) return deps.join(", ")
  return `${deps.slice(0, LISTED_DEPS).join(", ")} and ${deps.length - LISTED_DEPS} more`
}

/** A title written as a multi-line string would break "one line per task", which scripts rely on. */
export function oneLine(text: string): string {
  return text.includes("\n") ? text.replace(/\s*\n\s*/g, " ").trim() : text
}

/** The JSON form of one task in list, next and show: `depth` 0 for top-level tasks, `parent` its parent's id. */
export function taskSummary(task: Task, parent: Task | undefined, depth: number): TaskSummary {
  return {
    id: task.id,
    title: task.title,
    status: task.status,
    phase: task.phase ?? null,
    parent: parent ? parent.id : null,
    depth,
    depends_on: task.depends_on ?? [],
    agent_name: task.agent_name ?? null,
    checkpoint: task.checkpoint === true,
  }
}
