// The "may be taken now" rule, shared by `flow next` and the orchestrator. SPEC 3.2 rule 1 keeps a task with
// unfinished dependencies in todo; this module decides which tasks an agent may start at this moment.
import type { Indexed, Task } from "../model/task-index"

/**
 * Tasks an agent may start now, ordered by phase (tasks without one last) and then file order. A task is
 * available when:
 * - its status is ready_for_agent, or todo with every depends_on done (a person's `flow ready` overrides
 *   unfinished dependencies);
 * - every ancestor's depends_on is done: a subtask cannot start before its parent's dependencies;
 * - no ancestor is blocked or done: a person stopped that work, or it is over;
 * - it is not a checkpoint (those wait for a person to run `flow done`, SPEC 3.2 rule 5);
 * - it has no subtasks: the children are the work, and the parent completes with them (rule 6);
 * - given `agent`, it has no agent_name or exactly that one (rule 4).
 * A subtask is ordered by its top-level task's phase, the group `flow list` shows it in.
 * `index` is `indexTasks(file)`: every task by id, in file order with subtasks after their parent.
 */
export function availableTasks(index: Map<string, Indexed>, agent?: string): Indexed[] {
  const isDone = (id: string) => index.get(id)?.task.status === "done"
  const depsDone = (task: Task) => task.depends_on === undefined || task.depends_on.every(isDone)
  const found: { entry: Indexed; phase: number }[] = []
  for (const entry of index.values()) {
    const { task } = entry
    if (task.checkpoint === true || (task.subtasks !== undefined && task.subtasks.length > 0)) continue
    if (agent !== undefined && task.agent_name !== undefined && task.agent_name !== agent) continue
    if (!(task.status === "ready_for_agent" || (task.status === "todo" && depsDone(task)))) continue
    // Walk up through the ancestors: their dependencies must be done, and the top one gives the phase.
    let top = task
    let clear = true
    for (let up = entry.parent; up !== undefined; up = index.get(up.id)?.parent) {
      if (!depsDone(up) || up.status === "blocked" || up.status === "done") {
        clear = false
        break
      }
      top = up
    }
    if (clear) found.push({ entry, phase: top.phase ?? Number.POSITIVE_INFINITY })
  }
  found.sort((a, b) => a.phase - b.phase || a.entry.order - b.entry.order)
  return found.map((f) => f.entry)
}
