// The shared store's TaskEdits: edits on the graph loaded in memory inside the change's transaction,
// remembering which tasks changed so that only their rows are written. Same behaviour and errors as the
// tasks.yaml text editor (lib/store/task-edit.ts), through the same helpers (lib/store/edit-target.ts).
import { indexTasks, type Indexed, type Task, type TaskFile } from "../../model/task-index"
import { editRecord, notAList, notAValue } from "../edit-target"
import type { EditTarget, Scalar, TaskEdits } from "../store"

export class RowEditor implements TaskEdits {
  readonly tasks: Map<string, Indexed>
  /** The ids of the tasks an edit changed (a step's edit changes its task). */
  readonly changed = new Set<string>()

  /** `data` is a fresh graph (lib/store/postgres/rows.ts fromRows): the editor changes it in place. */
  constructor(readonly data: TaskFile) {
    this.tasks = indexTasks(data)
  }

  task(id: string): Task | undefined {
    return this.tasks.get(id)?.task
  }

  set(target: EditTarget, key: string, value: Scalar | undefined): void {
    const record = editRecord(this.tasks, target)
    const old = record[key]
    if (old === value) return
    if (value === undefined) {
      if (!(key in record)) return
      delete record[key]
    } else {
      if (old !== null && typeof old === "object") throw notAValue(target, key, Array.isArray(old))
      record[key] = value
    }
    this.changed.add(target.taskId)
  }

  append(target: EditTarget, key: string, value: string): void {
    const record = editRecord(this.tasks, target)
    const list = record[key]
    if (list === undefined || list === null) record[key] = [value]
    else if (Array.isArray(list)) record[key] = [...list, value]
    else throw notAList(target, key)
    this.changed.add(target.taskId)
  }
}
