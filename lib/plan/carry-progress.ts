// Generating again must not lose work: what flow and the agents recorded on a task (status, notes, times,
// assignment) and keys a person added moves from the old tasks.yaml to the new task with the same id. Step
// ids are positions (`<task>.<k>`), so steps match by their text: a step moved in plan.md keeps its progress.
import { STEP_KEYS, TASK_KEYS } from "../model/generated/task-file-check"
import type { PlanNote } from "./plan-parse"
import { stepTitle } from "../graph/step-title"
import type { Step, Task, TaskFile } from "../model/task-index"
import { listWithStatus } from "../store/transitions"

/** Fields the plan never sets, recorded while the work is done. */
const TASK_PROGRESS = ["status", "ai_notes", "started_at", "completed_at", "agent_name", "repo", "worktree", "task_timeout"] as const
const STEP_PROGRESS = ["status", "started_at", "completed_at"] as const

export type Carried = {
  added: string[]
  /** ids that are gone, each with the status it had */
  removed: { id: string; status: string }[]
  /** ids in both files */
  kept: string[]
  /** ids that were ready_for_agent and are todo again: the plan gave them a dependency that is not done */
  requeued: string[]
  /** progress that no longer fits the plan: kept but doubtful, or dropped */
  warnings: PlanNote[]
}

/**
 * Copies progress and unknown keys from `old` into `tasks` (in place) and says which ids were added, removed
 * and kept; `lines` (task id → plan.md line) places the warnings.
 */
export function carryProgress(tasks: Task[], old: TaskFile | undefined, lines: ReadonlyMap<string, number> = new Map()): Carried {
  const before = index(old?.tasks ?? [])
  const after = index(tasks)
  const result: Carried = { added: [], removed: [], kept: [], requeued: [], warnings: [] }
  for (const [id, task] of after) {
    const prior = before.get(id)
    if (!prior) {
      result.added.push(id)
      continue
    }
    result.kept.push(id)
    copy(prior, task, [...TASK_PROGRESS, ...unknownKeys(prior, TASK_KEYS)])
    for (const lost of carrySteps(prior, task)) {
      const text = stepTitle(lost.instruction)
      result.warnings.push({
        severity: "warning",
        line: lines.get(id),
        message: `step ${lost.id} of '${id}' was ${lost.status} ("${text.length > 60 ? `${text.slice(0, 57)}...` : text}"), and no step of the plan has that text now: its progress is dropped`,
        hint: "a step whose text changed is a new, pending step",
      })
    }
  }
  for (const [id, t] of before) if (!after.has(id)) result.removed.push({ id, status: t.status })

  // Statuses are carried as they were, but the plan may have given a task a dependency that is not done.
  // Only new dependencies count: a person's 'flow ready' over a known unfinished dependency stands.
  for (const id of result.kept) {
    const task = after.get(id)!
    const known = new Set(before.get(id)!.depends_on ?? [])
    const waiting = (task.depends_on ?? [])
      .filter((d) => !known.has(d))
      .flatMap((d) => after.get(d) ?? [])
      .filter((d) => d.status !== "done")
    if (waiting.length === 0 || task.status === "todo" || task.status === "blocked") continue
    if (task.status === "ready_for_agent") {
      task.status = "todo"
      result.requeued.push(id)
      continue
    }
    result.warnings.push({
      severity: "warning",
      line: lines.get(id),
      message: `'${id}' is ${task.status}, but the plan now makes it depend on ${listWithStatus(waiting)}, not done`,
      hint: task.status === "done" ? "check that its work still holds once they are done" : `it keeps its status; 'flow todo ${id}' makes it wait for them`,
    })
  }
  return result
}

function index(list: readonly Task[], into = new Map<string, Task>()): Map<string, Task> {
  for (const t of list) {
    into.set(t.id, t)
    index(t.subtasks ?? [], into)
  }
  return into
}

/** Matches steps by their text and copies their progress; returns the old steps with progress that matched none. */
function carrySteps(prior: Task, task: Task): Step[] {
  const byText = new Map<string, Step[]>()
  for (const s of prior.steps ?? []) byText.set(normal(s.instruction), [...(byText.get(normal(s.instruction)) ?? []), s])
  for (const step of task.steps ?? []) {
    const was = byText.get(normal(step.instruction))?.shift()
    if (was) copy(was, step, [...STEP_PROGRESS, ...unknownKeys(was, STEP_KEYS)])
  }
  return [...byText.values()].flat().filter((s) => s.status !== undefined && s.status !== "pending")
}

function normal(text: string): string {
  return text.replace(/\s+/g, " ").trim()
}

/** Keys flow does not know, which a person or another tool added: kept as they are, like `flow validate` keeps them. */
function unknownKeys(record: Task | Step, known: ReadonlySet<string>): string[] {
  return Object.keys(record).filter((k) => !known.has(k))
}

function copy<T extends Task | Step>(from: T, to: T, keys: readonly string[]): void {
  const source = from as Record<string, unknown>
  const target = to as Record<string, unknown>
  for (const key of keys) if (source[key] !== undefined) target[key] = source[key]
}
