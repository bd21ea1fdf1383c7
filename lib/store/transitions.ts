// The status rules of SPEC section 3.2 as edits (TaskEdits, lib/store/store.ts: the same in every backend):
// one status change and everything it implies (timestamps, promoted dependents, completed parents), so a
// command makes them all in one write. docs/STATUS-RULES.md explains each decision.
import { FlowError } from "../cli/errors"
import { bare, hint, quoted, run } from "../cli/hint"
import type { STEP_STATUSES, TASK_STATUSES } from "../model/statuses"
import { closest } from "../cli/suggest"
import type { TaskEdits } from "./store"
import type { Indexed, Step, Task } from "../model/task-index"
import { requireTask } from "../graph/task-lookup"

export type TaskStatus = (typeof TASK_STATUSES)[number]
export type StatusVerb = "ready" | "start" | "done" | "block" | "todo"

/** The status each verb sets (SPEC 3.2: every verb is allowed from any status). */
export const VERB_STATUS = {
  ready: "ready_for_agent",
  start: "in_progress",
  done: "done",
  block: "blocked",
  todo: "todo",
} as const satisfies Record<StatusVerb, TaskStatus>

type Stamp = "set" | "remove" | "keep"

/**
 * What entering a status does to the task's timestamps. `started_at` is when the task last entered
 * in_progress (what `reset --stuck` measures); `completed_at` exists only while the task is done.
 */
const ENTER = {
  todo: { started_at: "keep", completed_at: "remove" },
  ready_for_agent: { started_at: "keep", completed_at: "remove" },
  assigned: { started_at: "keep", completed_at: "remove" },
  in_progress: { started_at: "set", completed_at: "remove" },
  done: { started_at: "keep", completed_at: "set" },
  blocked: { started_at: "keep", completed_at: "remove" },
} as const satisfies Record<TaskStatus, Record<"started_at" | "completed_at", Stamp>>

/** One line of a command's output: a task or step that moved from one status to another. */
export type Change = { id: string; from: string; to: string; reason?: string }

/** `api: in_progress → done (all subtasks done)` */
export function formatChange(c: Change): string {
  return `${c.id}: ${c.from} → ${c.to}${c.reason ? ` (${c.reason})` : ""}`
}

/** Moves one task to `to` with its timestamps; nothing else. */
export function moveTask(editor: TaskEdits, id: string, to: TaskStatus, now: string, reason?: string): Change {
  const task = requireTask(editor.tasks, id).task
  const from = task.status
  editor.set({ taskId: id }, "status", to)
  for (const key of ["started_at", "completed_at"] as const) {
    const stamp: Stamp = ENTER[to][key]
    if (stamp === "set") editor.set({ taskId: id }, key, now)
    else if (stamp === "remove") editor.set({ taskId: id }, key, undefined)
  }
  return { id, from, to, reason }
}

/** Every subtask below `task`, at any depth, in file order. */
export function descendants(task: Task): Task[] {
  const out: Task[] = []
  const stack = [...(task.subtasks ?? [])].reverse()
  while (stack.length > 0) {
    const t = stack.pop()!
    out.push(t)
    stack.push(...[...(t.subtasks ?? [])].reverse())
  }
  return out
}

/** The dependencies of a task that are not done, with their statuses. */
export function unfinishedDependencies(editor: TaskEdits, task: Task): Task[] {
  return (task.depends_on ?? []).map((d) => editor.task(d)).filter((t): t is Task => t !== undefined && t.status !== "done")
}

export function listWithStatus(tasks: { id: string; status?: string }[]): string {
  return tasks.map((t) => `${t.id} (${t.status ?? "pending"})`).join(", ")
}

/** `warnings` go before the changes (something a person may want to undo), `notes` after them. */
export type StatusResult = { changes: Change[]; notes: string[]; warnings?: string[] }

/**
 * Sets the status of task `id` as `flow <verb>` does, with every cascade. A task already in that status
 * gives no changes. `done` is refused on a parent whose subtasks are not all done (rule 6) and on a task
 * whose steps are not all done (SPEC 3.3: the task completes after its last step), unless `force`.
 */
export function applyStatus(editor: TaskEdits, id: string, to: TaskStatus, now: string, opts: { force?: boolean } = {}): StatusResult {
  const task = requireTask(editor.tasks, id).task
  if (task.status === to) return { changes: [], notes: [] }
  if (to === "done" && !opts.force) refuseUnfinished(task)
  const wasDone = task.status === "done"
  const first = moveTask(editor, id, to, now)
  if (wasDone) {
    const held = holdBackDependents(editor, id, now, `dependency ${id} no longer done`)
    return { changes: [first, ...held.changes], notes: [], warnings: held.warnings }
  }
  if (to !== "done") return { changes: [first], notes: [] }
  const cascade = completeCascade(editor, [id], now)
  return { changes: [first, ...cascade.changes], notes: cascade.notes }
}

/** `done` waits for the work below a task: its subtasks at every depth, and its steps. */
function refuseUnfinished(task: Task): void {
  const open = descendants(task).filter((t) => t.status !== "done")
  if (open.length > 0) {
    throw new FlowError(
      `cannot mark '${task.id}' done: ${open.length === 1 ? "1 subtask is" : `${open.length} subtasks are`} not done: ${listWithStatus(open)}`,
      undefined,
      hint`a parent completes when all its subtasks are done (${bare("done", { task_id: "<subtask_id>" })}); it then becomes done by itself (${quoted("done", { task_id: task.id, force: true })} marks it done with them open)`,
    )
  }
  const pending = (task.steps ?? []).filter((s) => stepStatus(s) !== "done")
  if (pending.length > 0) {
    throw new FlowError(
      `cannot mark '${task.id}' done: ${pending.length === 1 ? "1 step is" : `${pending.length} steps are`} not done: ${listWithStatus(pending)}`,
      undefined,
      hint`finish them in order with ${quoted("step done", { step_id: "<step_id>" })} (next: ${pending[0].id}), then ${quoted("done", { task_id: task.id })}; ${quoted("done", { task_id: task.id, force: true })} marks it done with them open`,
    )
  }
}

/**
 * What follows from tasks becoming done (rule 1 and rule 6), breadth first: each done task's `todo`
 * dependents whose dependencies are now all done become ready_for_agent, then its parent becomes done when
 * every task below the parent is done, and so on up. A parent with `checkpoint: true` is left for human
 * review (rule 5) and reported in `notes`.
 */
export function completeCascade(editor: TaskEdits, doneIds: string[], now: string): StatusResult {
  const changes: Change[] = []
  const notes: string[] = []
  const dependents = dependentsIndex(editor)
  const queue = [...doneIds]
  while (queue.length > 0) {
    const doneId = queue.shift()!
    for (const dependent of dependents.get(doneId) ?? []) {
      if (dependent.status !== "todo" || unfinishedDependencies(editor, dependent).length > 0) continue
      changes.push(moveTask(editor, dependent.id, "ready_for_agent", now, "dependencies done"))
    }
    const parent = editor.tasks.get(doneId)?.parent
    if (!parent || parent.status === "done" || descendants(parent).some((t) => t.status !== "done")) continue
    if (parent.checkpoint === true) {
      notes.push(`${parent.id}: all subtasks done; it is a checkpoint, so it waits for review: run 'flow done ${parent.id}' to accept it`)
      continue
    }
    changes.push(moveTask(editor, parent.id, "done", now, "all subtasks done"))
    queue.push(parent.id)
  }
  return { changes, notes }
}

/** For each task id, the tasks that list it in depends_on, in file order. */
function dependentsIndex(editor: TaskEdits): Map<string, Task[]> {
  const out = new Map<string, Task[]>()
  for (const { task } of editor.tasks.values()) {
    for (const dep of new Set(task.depends_on ?? [])) out.set(dep, [...(out.get(dep) ?? []), task])
  }
  return out
}

export type ResetResult = { changes: Change[]; warnings: string[] }

/**
 * `flow reset`: the task goes back to todo without its timestamps, and its in-progress steps back to pending;
 * its done steps too with `redo` (a retry from the target, whose work is not there), else they stay done (a
 * stuck task resumes on its branch, where their work is committed). agent_name, notes and subtasks are left
 * alone. When the task was done, its dependents that were ready_for_agent go back to todo (rule 1: a
 * dependency is no longer done), and those already assigned or in progress are named in `warnings`.
 */
export function resetTask(editor: TaskEdits, id: string, now: string, reason?: string, redo = false): ResetResult {
  const task = requireTask(editor.tasks, id).task
  const wasDone = task.status === "done"
  const changes: Change[] = []
  if (task.status !== "todo") changes.push({ id, from: task.status, to: "todo", reason })
  else if (task.started_at !== undefined || task.completed_at !== undefined) changes.push({ id, from: "todo", to: "todo", reason: "timestamps removed" })
  editor.set({ taskId: id }, "status", "todo")
  editor.set({ taskId: id }, "started_at", undefined)
  editor.set({ taskId: id }, "completed_at", undefined)
  for (const step of task.steps ?? []) {
    const from = stepStatus(step)
    if (!(from === "in_progress" || (redo && from === "done"))) continue
    editor.set({ taskId: id, stepId: step.id }, "status", "pending")
    editor.set({ taskId: id, stepId: step.id }, "started_at", undefined)
    editor.set({ taskId: id, stepId: step.id }, "completed_at", undefined)
    changes.push({ id: step.id, from, to: "pending" })
  }
  if (!wasDone) return { changes, warnings: [] }
  const held = holdBackDependents(editor, id, now, `dependency ${id} reset`)
  return { changes: [...changes, ...held.changes], warnings: held.warnings }
}

/**
 * A task that leaves done takes back what its being done allowed (rule 1): its dependents that are
 * ready_for_agent go back to todo; those already assigned or in progress are left as they are (an agent may be
 * at work on them) and named in `warnings`.
 */
function holdBackDependents(editor: TaskEdits, id: string, now: string, reason: string): ResetResult {
  const dependents = dependentsIndex(editor).get(id) ?? []
  const changes = dependents.filter((t) => t.status === "ready_for_agent").map((t) => moveTask(editor, t.id, "todo", now, reason))
  const started = dependents.filter((t) => t.status === "assigned" || t.status === "in_progress")
  const warnings =
    started.length === 0
      ? []
      : [
          `${id} is no longer done, but ${started.length === 1 ? "its dependent" : "its dependents"} ${listWithStatus(started)} already started; left as ${started.length === 1 ? "it is" : "they are"} (run 'flow reset <id>' to redo ${started.length === 1 ? "it" : "them"} after ${id})`,
        ]
  return { changes, warnings }
}

export type StuckScan = { stuck: { id: string; forMs: number }[]; undated: string[] }

/** In-progress tasks whose started_at is at least `olderThanMs` before `nowMs`, and those without a usable started_at. */
export function findStuck(editor: TaskEdits, nowMs: number, olderThanMs: number, parse: (t: unknown) => number | undefined): StuckScan {
  const scan: StuckScan = { stuck: [], undated: [] }
  for (const { task } of editor.tasks.values()) {
    if (task.status !== "in_progress") continue
    const since = parse(task.started_at)
    if (since === undefined) scan.undated.push(task.id)
    else if (nowMs - since >= olderThanMs) scan.stuck.push({ id: task.id, forMs: nowMs - since })
  }
  return scan
}

export type StepStatus = (typeof STEP_STATUSES)[number]

/** A step without a status is pending (SPEC 2.2: the field is optional). */
export function stepStatus(step: Step): StepStatus {
  return step.status ?? "pending"
}

export type FoundStep = { task: Task; step: Step; position: number }

/** The step with this id and its task, or a FlowError naming the closest step id. */
export function requireStep(index: Map<string, Indexed>, stepId: string): FoundStep {
  const ids: string[] = []
  for (const { task } of index.values()) {
    const position = task.steps?.findIndex((s) => s.id === stepId) ?? -1
    if (position >= 0) return { task, step: task.steps![position], position }
    for (const s of task.steps ?? []) ids.push(s.id)
  }
  const asTask = index.get(stepId)?.task
  const near = asTask ? undefined : closest(stepId, ids)
  throw new FlowError(
    `no step '${stepId}' in tasks.yaml`,
    undefined,
    asTask
      ? asTask.steps?.length
        ? `'${stepId}' is a task; its steps are ${asTask.steps.map((s) => s.id).join(", ")}`
        : `'${stepId}' is a task without steps`
      : near !== undefined
        ? `did you mean '${near}'?`
        : hint`${run("step list", { task_id: "<task_id>" })} to see a task's steps`,
  )
}

/** Steps run in order: the earlier steps of `found` that are not done yet. */
function earlierOpen({ task, position }: FoundStep): Step[] {
  return task.steps!.slice(0, position).filter((s) => stepStatus(s) !== "done")
}

function refuseOutOfOrder(verb: "start" | "finish", found: FoundStep): void {
  const open = earlierOpen(found)
  if (open.length === 0) return
  throw new FlowError(
    `cannot ${verb} step '${found.step.id}': ${open.length === 1 ? "the earlier step" : "earlier steps"} ${listWithStatus(open)} ${open.length === 1 ? "is" : "are"} not done`,
    undefined,
    hint`steps run in order: finish ${open[0].id} first (${bare("step done", { step_id: open[0].id })})`,
  )
}

export type StepResult = StatusResult & { taskId: string; already?: StepStatus; lastDone?: boolean }

/**
 * `flow step start`: pending → in_progress with started_at, once every earlier step is done. A task that
 * has not started yet (todo, ready_for_agent, assigned) becomes in_progress in the same write.
 */
export function startStep(editor: TaskEdits, stepId: string, now: string): StepResult {
  const found = requireStep(editor.tasks, stepId)
  const { task, step } = found
  const status = stepStatus(step)
  if (status === "in_progress") return { taskId: task.id, changes: [], notes: [], already: status }
  if (status === "done") {
    throw new FlowError(
      `step '${stepId}' is already done; a done step is not started again`,
      undefined,
      `its work is committed; to redo it, set its status to pending in tasks.yaml, or start the next step`,
    )
  }
  refuseOutOfOrder("start", found)
  editor.set({ taskId: task.id, stepId }, "status", "in_progress")
  editor.set({ taskId: task.id, stepId }, "started_at", now)
  const changes: Change[] = [{ id: stepId, from: status, to: "in_progress" }]
  const notes: string[] = []
  if (task.status === "todo" || task.status === "ready_for_agent" || task.status === "assigned") {
    const waiting = unfinishedDependencies(editor, task)
    if (waiting.length > 0) notes.push(`${task.id} depends on ${listWithStatus(waiting)}, not done yet; started anyway`)
    changes.push(moveTask(editor, task.id, "in_progress", now, `step ${stepId} started`))
  } else if (task.status !== "in_progress") {
    notes.push(`task ${task.id} is ${task.status}; its status was left as it is`)
  }
  return { taskId: task.id, changes, notes }
}

/**
 * `flow step done`: → done with completed_at, from in_progress, or from pending once every earlier step is
 * done (the agent did the work without marking the start). The task's status is left to the orchestrator,
 * which merges after the last step (SPEC 3.3); `lastDone` says this was the last open step.
 */
export function finishStep(editor: TaskEdits, stepId: string, now: string): StepResult {
  const found = requireStep(editor.tasks, stepId)
  const { task, step } = found
  const status = stepStatus(step)
  if (status === "done") return { taskId: task.id, changes: [], notes: [], already: status }
  refuseOutOfOrder("finish", found)
  editor.set({ taskId: task.id, stepId }, "status", "done")
  editor.set({ taskId: task.id, stepId }, "completed_at", now)
  const lastDone = task.steps!.every((s) => stepStatus(s) === "done")
  return { taskId: task.id, changes: [{ id: stepId, from: status, to: "done" }], notes: [], lastDone }
}
