// What a command that changes tasks.yaml did, as its `--json` prints it (lib/model/json-shapes.ts
// WriteReport): one builder for the status verbs, note, assign and the step commands.
import type { WriteReport } from "../model/json-shapes"
import { findStep } from "../model/task-index"
import type { TaskEdits } from "./store"
import type { Change } from "./transitions"

/**
 * The report of one write, built inside it: its changes, and the command's task followed by every other task
 * the changes name (a step's task for a step), each as the write leaves it.
 */
export function writeReport(editor: TaskEdits, taskId: string, changes: readonly Change[], notes: readonly string[] = []): WriteReport {
  const ids = [taskId]
  for (const c of changes) {
    const id = editor.task(c.id) ? c.id : findStep(editor.tasks, c.id)?.task.id
    if (id !== undefined && !ids.includes(id)) ids.push(id)
  }
  return {
    changes: changes.map((c) => ({ id: c.id, from: c.from, to: c.to, reason: c.reason ?? null })),
    tasks: ids.map((id) => {
      const { subtasks: _, ...record } = editor.task(id)!
      return record
    }),
    notes: [...notes],
  }
}
