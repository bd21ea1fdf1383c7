// Generating again must not lose work: what flow and the agents recorded on a task (status, notes, times,
// assignment) moves from the old tasks.yaml to the new task with the same id; steps match by step id.
import type { Step, Task, TaskFile } from "./task-index"

/** Fields the plan never sets, recorded while the work is done. */
const TASK_PROGRESS = ["status", "ai_notes", "started_at", "completed_at", "agent_name", "repo", "worktree"] as const
const STEP_PROGRESS = ["status", "started_at", "completed_at"] as const

export type Carried = {
  added: string[]
  /** ids that are gone, each with the status it had */
  removed: { id: string; status: string }[]
  /** ids in both files */
  kept: string[]
}

/** Copies progress from `old` into `tasks` (in place) and says which ids were added, removed and kept. */
export function carryProgress(tasks: Task[], old: TaskFile | undefined): Carried {
  const before = new Map<string, Task>()
  const collect = (list: readonly Task[] | undefined) => {
    for (const t of list ?? []) {
      before.set(t.id, t)
      collect(t.subtasks)
    }
  }
  collect(old?.tasks)
  const result: Carried = { added: [], removed: [], kept: [] }
  const seen = new Set<string>()
  const visit = (list: Task[] | undefined) => {
    for (const task of list ?? []) {
      seen.add(task.id)
      const prior = before.get(task.id)
      if (prior) {
        result.kept.push(task.id)
        copy(prior, task, TASK_PROGRESS)
        const priorSteps = new Map((prior.steps ?? []).map((s) => [s.id, s]))
        for (const step of task.steps ?? []) {
          const was = priorSteps.get(step.id)
          if (was) copy(was, step, STEP_PROGRESS)
        }
      } else result.added.push(task.id)
      visit(task.subtasks)
    }
  }
  visit(tasks)
  for (const [id, t] of before) if (!seen.has(id)) result.removed.push({ id, status: t.status })
  return result
}

function copy<T extends Task | Step>(from: T, to: T, keys: readonly string[]): void {
  const source = from as Record<string, unknown>
  const target = to as Record<string, unknown>
  for (const key of keys) if (source[key] !== undefined) target[key] = source[key]
}
