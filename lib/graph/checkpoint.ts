// When a checkpoint waits for a person (SPEC 3.2 rule 5): shared by the inspector and the dashboard.
import { descendantsOf } from "./show-report"
import type { Indexed, Task } from "../model/task-index"

/** A checkpoint not done whose dependencies and subtasks are all done: only a person moves it on. */
export function waitsForReview(index: Map<string, Indexed>, task: Task): boolean {
  if (task.checkpoint !== true || task.status === "done") return false
  const done = (id: string) => index.get(id)?.task.status === "done"
  return (task.depends_on ?? []).every(done) && descendantsOf(task, 0).every((d) => d.task.status === "done")
}
