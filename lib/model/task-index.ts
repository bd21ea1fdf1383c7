// The parsed tasks file as the read path sees it: plain data from Bun.YAML, typed by the schema's
// inferred types (a type-only import, so arktype is never loaded here).
import type { Step, Task, TaskFile } from "./schema"
export type { Step, Task, TaskFile }

export type Indexed = {
  task: Task
  parent?: Task
  /** depth 0 for top-level tasks */
  depth: number
  /** position in file order, subtasks right after their parent */
  order: number
}

/** Every task by id, subtasks included, in file order. */
export function indexTasks(file: TaskFile): Map<string, Indexed> {
  const index = new Map<string, Indexed>()
  walkTaskTree(file.tasks, (task, parent, depth) => index.set(task.id, { task, parent, depth, order: index.size }))
  return index
}

/** Each task in file order, subtasks right after their parent, with its parent and depth (0 at the top). */
export function walkTaskTree(roots: readonly Task[], visit: (task: Task, parent: Task | undefined, depth: number) => void): void {
  // A stack, not recursion: the walk is as deep as the subtasks nest.
  const stack: { list: readonly Task[]; i: number; parent?: Task; depth: number }[] = [{ list: roots, i: 0, depth: 0 }]
  while (stack.length > 0) {
    const top = stack[stack.length - 1]
    if (top.i >= top.list.length) {
      stack.pop()
      continue
    }
    const task = top.list[top.i++]
    visit(task, top.parent, top.depth)
    if (task.subtasks?.length) stack.push({ list: task.subtasks, i: 0, parent: task, depth: top.depth + 1 })
  }
}

/** The top-level task an entry sits under (itself at the top level). */
export function topLevelOf(index: Map<string, Indexed>, entry: Indexed): Indexed {
  let top = entry
  while (top.parent) top = index.get(top.parent.id) as Indexed
  return top
}

/** The task and step a step id belongs to. */
export function findStep(index: Map<string, Indexed>, stepId: string): { task: Task; step: Step } | undefined {
  for (const { task } of index.values()) {
    const step = task.steps?.find((s) => s.id === stepId)
    if (step) return { task, step }
  }
  return undefined
}
