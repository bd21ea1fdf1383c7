// The graph as rows and back (the `tasks` and `projects` tables of migrations.ts): a row per task, subtasks
// included, with its parent, its place in the file, its status and its record without its subtasks as JSON
// text (json, not jsonb: the keys keep the order tasks.yaml gave them, so every output reads as in file
// mode). A "subtasks" key holds [] in the record, keeping its place; the top-level mapping keeps "tasks" so.
import { Exit, FlowError } from "../../cli/errors"
import type { Task, TaskFile } from "../../model/task-index"

/** A task as stored: `doc` is its record's JSON text without the subtasks. */
export type TaskRow = { id: string; parent: string | null; position: number; ord: number; status: string; doc: string; depends_on: string[] }

/** The rows of a graph, depth first in file order, and its top-level mapping without the tasks. */
export function toRows(data: TaskFile): { top: Record<string, unknown>; rows: TaskRow[] } {
  const rows: TaskRow[] = []
  const walk = (list: readonly Task[], parent: string | null) => {
    list.forEach((task, position) => {
      rows.push(rowOf(task, parent, position, rows.length))
      if (task.subtasks) walk(task.subtasks, task.id)
    })
  }
  walk(data.tasks, null)
  const top: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) top[k] = k === "tasks" ? [] : v
  return { top, rows }
}

/** One task's row (its subtasks are rows of their own). */
export function rowOf(task: Task, parent: string | null, position: number, ord: number): TaskRow {
  return { id: task.id, parent, position, ord, status: task.status, doc: docText(task), depends_on: [...new Set(task.depends_on ?? [])] }
}

/** The record's JSON text, its subtasks left as [] in their place. */
export function docText(task: Task): string {
  if (task.subtasks === undefined) return JSON.stringify(task)
  return JSON.stringify({ ...task, subtasks: [] })
}

/** The graph of stored rows, in `ord` order: fresh objects every time (an edit changes them in place). */
export function fromRows(top: string, rows: Iterable<Pick<TaskRow, "id" | "parent" | "status" | "doc">>): TaskFile {
  const file = JSON.parse(top) as TaskFile
  file.tasks = []
  const byId = new Map<string, Task>()
  for (const row of rows) {
    const task = JSON.parse(row.doc) as Task
    // The column is the status: a claim (docs/FLEET.md) changes it in SQL alone.
    task.status = row.status as Task["status"]
    if (task.subtasks !== undefined) task.subtasks = []
    byId.set(row.id, task)
    if (row.parent === null) {
      file.tasks.push(task)
      continue
    }
    const parent = byId.get(row.parent)
    if (!parent) throw new FlowError(`the shared graph is damaged: task '${row.id}' comes before its parent '${row.parent}'`, Exit.invalid)
    parent.subtasks ??= []
    parent.subtasks.push(task)
  }
  return file
}

/**
 * Whether the graph reads back from JSON as it is: YAML can hold what JSON cannot (.inf, .nan, a date
 * parsed as a Date), and the shared store must not change a value on the way in.
 */
export function jsonSafe(data: TaskFile): string | undefined {
  const walk = (value: unknown, path: string): string | undefined => {
    if (value === null || typeof value === "string" || typeof value === "boolean") return undefined
    if (typeof value === "number") return Number.isFinite(value) ? undefined : path
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const bad = walk(value[i], `${path}[${i}]`)
        if (bad) return bad
      }
      return undefined
    }
    if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
      for (const [k, v] of Object.entries(value)) {
        const bad = walk(v, path ? `${path}.${k}` : k)
        if (bad) return bad
      }
      return undefined
    }
    return path
  }
  return walk(data, "")
}
