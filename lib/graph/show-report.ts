// What `flow show` derives from one task (its --json shape), shared with the inspector's task endpoint.
import type { BudgetReport, LandingWait, ShowReport, TaskEvidence, Usage, WorkedBy } from "../model/json-shapes"
import { topLevelOf, type Indexed, type Task } from "../model/task-index"
import { taskSummary } from "./task-lines"

export type Descendant = { task: Task; parent: Task; depth: number }

/**
 * `flow show --json` of one task. A valid file names only existing dependencies (validate checks it before
 * a file is trusted). `titles` are the phase titles of plan.md and tasks.yaml (lib/plan/plan-phases.ts); `usage` the task's sum (lib/budget/usage.ts);
 * `budget` its spend beside its caps (lib/budget/budget-report.ts); `worker` who works or worked on it (lib/run/worked-by.ts);
 * `landing` what its landing waits for (lib/landing/landing-waits.ts); `evidence` what its landing stands on (lib/run/evidence.ts).
 */
export function showReport(
  index: Map<string, Indexed>,
  entry: Indexed,
  titles: Map<number, string>,
  usage: Usage | null,
  worker: WorkedBy | null,
  budget: BudgetReport | null = null,
  landing: LandingWait | null = null,
  evidence: TaskEvidence | null = null,
): ShowReport {
  const { task } = entry
  const { dependents, validates } = pointingAt(index, task.id)
  const { phase } = effectivePhase(entry, index)
  const { subtasks: _, ...record } = task
  return {
    task: record,
    subtasks: descendantsOf(task, entry.depth).map((d) => taskSummary(d.task, d.parent, d.depth)),
    dependencies: (task.depends_on ?? []).map((dep) => ({ id: dep, status: (index.get(dep) as Indexed).task.status })),
    dependents,
    validates,
    parent: entry.parent?.id ?? null,
    phase,
    phase_title: phase === null ? null : (titles.get(phase) ?? null),
    usage,
    budget,
    worked_by: worker,
    landing_wait: landing,
    evidence,
  }
}

/** In one pass over every task: the tasks depending on `id` and the tasks `id` validates. */
export function pointingAt(index: Map<string, Indexed>, id: string): { dependents: string[]; validates: string[] } {
  const dependents: string[] = []
  const validates: string[] = []
  for (const { task: other } of index.values()) {
    if (other.depends_on?.includes(id)) dependents.push(other.id)
    if (other.validation_task_id === id) validates.push(other.id)
  }
  return { dependents, validates }
}

/**
 * The task's own phase; for a subtask without one, its top-level task's, which is the group `flow list`
 * shows it in and the phase `flow next` orders it by. `from` is the task the phase was read from.
 */
export function effectivePhase(entry: Indexed, index: Map<string, Indexed>): { phase: number | null; from: Task } {
  if (entry.task.phase !== undefined) return { phase: entry.task.phase, from: entry.task }
  const top = topLevelOf(index, entry)
  return { phase: top.task.phase ?? null, from: top.task }
}

/** Every descendant in file order with its absolute depth, walked without recursion. */
export function descendantsOf(task: Task, depth: number): Descendant[] {
  const out: Descendant[] = []
  const stack: Descendant[] = []
  const push = (parent: Task, d: number) => {
    const children = parent.subtasks ?? []
    for (let i = children.length - 1; i >= 0; i--) stack.push({ task: children[i], parent, depth: d })
  }
  push(task, depth + 1)
  while (stack.length > 0) {
    const next = stack.pop() as Descendant
    out.push(next)
    push(next.task, next.depth + 1)
  }
  return out
}
