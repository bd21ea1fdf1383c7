// A phase's join (docs/PLANNING.md, "the gate rule"): when a phase ends in several sections and has no
// checkpoint to end in, the next phase waits for the whole of it through one task, the phase itself, whose
// subtasks its sections become. A parent is done when its subtasks are (SPEC 3.2 rule 6) and is never given to
// an agent, so the join orders the phases with one edge per waiting section and adds no work. Pure.
import type { PlanNote, PlanPhase } from "./plan-parse"
import type { Task } from "../model/task-index"
import { walkTaskTree } from "../model/task-index"
import { listWithStatus } from "../store/transitions"

/** The id of phase `n`'s join: `phase-<n>`, or with `-join` (then `-2`, ...) when a section has that id. */
export function joinIdFor(n: number, taken: ReadonlySet<string>): string {
  const base = `phase-${String(n).replace(/\D+/g, "-")}`
  if (!taken.has(base)) return base
  let id = `${base}-join`
  for (let k = 2; taken.has(id); k++) id = `${base}-join-${k}`
  return id
}

/**
 * The top-level tasks with the sections of each joined phase moved under its join, which takes the place of
 * the phase's first section. `lines` gets each join's phase heading line.
 */
export function wrapJoins(tasks: readonly Task[], joins: ReadonlyMap<number, string>, phases: readonly PlanPhase[], lines: Map<string, number>): Task[] {
  const out: Task[] = []
  const made = new Map<number, Task>()
  for (const task of tasks) {
    const id = task.phase === undefined ? undefined : joins.get(task.phase)
    if (id === undefined || task.phase === undefined) {
      out.push(task)
      continue
    }
    let join = made.get(task.phase)
    if (!join) {
      const phase = phases.find((p) => p.n === task.phase)
      // Its id says it is the phase ("phase-1"); the title is the phase's own, which flow list and the
      // inspector show under the phase's header.
      join = {
        id,
        title: phase?.title || `Phase ${task.phase}`,
        status: "todo",
        phase: task.phase,
        instructions: `The whole of phase ${task.phase}${phase?.title ? ` (${phase.title})` : ""}: its sections are the subtasks of this task, so that the next phase waits for it instead of for each of them. It is done when they all are; no agent works on it itself.`,
        subtasks: [],
      }
      if (phase) lines.set(id, phase.line)
      made.set(task.phase, join)
      out.push(join)
    }
    join.subtasks!.push(task)
  }
  return out
}

/**
 * A join is done exactly when its sections are, whatever the old tasks.yaml said: a section added to a done
 * phase opens its join again (and the join's ready dependents go back to todo, `requeued`), and a phase
 * that becomes a join with its sections all done is done already. Notes for dependents already started.
 */
export function settleJoins(tasks: readonly Task[], joins: ReadonlySet<string>, requeued: string[], lines: ReadonlyMap<string, number>): PlanNote[] {
  const notes: PlanNote[] = []
  const dependents = new Map<string, Task[]>()
  walkTaskTree(tasks, (t) => {
    for (const d of t.depends_on ?? []) if (joins.has(d)) dependents.set(d, [...(dependents.get(d) ?? []), t])
  })
  for (const join of tasks) {
    if (!joins.has(join.id)) continue
    const below: Task[] = []
    walkTaskTree(join.subtasks ?? [], (t) => below.push(t))
    const open = below.filter((t) => t.status !== "done")
    if (open.length === 0) {
      if (join.status === "done") continue
      join.status = "done"
      const last = below
        .map((t) => t.completed_at)
        .filter((c) => c !== undefined)
        .sort()
        .at(-1)
      if (last) join.completed_at = last
      continue
    }
    if (join.status !== "done") continue
    join.status = "todo"
    delete join.completed_at
    for (const t of dependents.get(join.id) ?? []) {
      if (t.status === "ready_for_agent") {
        t.status = "todo"
        requeued.push(t.id)
      } else if (t.status === "assigned" || t.status === "in_progress" || t.status === "done")
        notes.push({
          severity: "warning",
          line: lines.get(t.id),
          message: `'${t.id}' is ${t.status}, but phase ${join.phase} is open again: ${listWithStatus(open)} not done`,
          hint: t.status === "done" ? "check that its work still holds once they are done" : `it keeps its status; 'flow todo ${t.id}' makes it wait for them`,
        })
    }
  }
  return notes
}
