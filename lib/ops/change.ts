// The writes of the task commands (ready, start, done, block, todo, note, step start|done) as functions of the
// project: each is one locked write through mutateTasks, so a failed one writes nothing. `flow <verb>` prints
// the result; `flow mcp`'s tools return it as a ChangeReport.
import { isoSeconds } from "../cli/clock"
import type { Project } from "../cli/project"
import { requireTask } from "../graph/task-lookup"
import type { ChangeReport } from "../model/json-shapes"
import { mergePending, pendingNote } from "../run/merge-pending"
import { mutateTasks } from "../store/tasks"
import {
  applyStatus,
  type Change,
  finishStep,
  listWithStatus,
  startStep,
  type StatusVerb,
  type StepResult,
  unfinishedDependencies,
  VERB_STATUS,
} from "../store/transitions"

/** A status change: the changes in order, the note it appended, and what the command says besides. */
export type StatusChange = {
  changes: Change[]
  /** the note appended to ai_notes (`Blocked: <reason>`), if any */
  added?: string
  /** said before the changes: a dependency that is not done yet */
  warnings: string[]
  /** said after: a parent checkpoint waiting for review, a merge still pending */
  notes: string[]
}

/**
 * `flow <verb> <id> [<reason>]`: the status with every cascade (lib/store/transitions.ts), in one write. A
 * block `reason` is appended as `Blocked: <reason>`, even to a task already blocked. `agent` is the caller's
 * FLOW_AGENT: a person marking a task done is told when its branch still waits to be merged, an agent is not
 * (the run that started it merges its branch as soon as it exits).
 */
export async function changeStatus(project: Project, verb: StatusVerb, id: string, opts: { reason?: string; agent?: string } = {}): Promise<StatusChange> {
  const to = VERB_STATUS[verb]
  const reason = opts.reason?.trim()
  const result = await mutateTasks(project, `flow ${verb} ${id}`, (editor) => {
    // Taken under the lock, so timestamps follow the order of the writes.
    const now = isoSeconds()
    const task = requireTask(editor.tasks, id, (stepId, taskId) =>
      verb === "done" || verb === "start" ? `run 'flow step ${verb} ${stepId}'` : `run 'flow ${verb} ${taskId}' for the whole task`,
    ).task
    const waiting = verb === "start" && task.status !== to ? unfinishedDependencies(editor, task) : []
    const applied = applyStatus(editor, id, to, now)
    // A reason on a task that is already blocked is still recorded: dropping the user's words would be worse.
    if (reason) editor.append({ taskId: id }, "ai_notes", `Blocked: ${reason}`)
    return { ...applied, waiting, task }
  })
  const warnings = result.waiting.length > 0 ? [`${id} depends on ${listWithStatus(result.waiting)}, not done yet; started anyway`] : []
  const notes = [...result.notes]
  if (verb === "done" && !opts.agent) {
    // Done means merged (docs/RUN.md): a branch with work the target lacks is merged by the next run.
    const pending = (await mergePending(project, [{ ...result.task, status: "done" }])).get(id)
    if (pending) notes.push(pendingNote(id, pending))
  }
  return { changes: result.changes, added: reason ? `Blocked: ${reason}` : undefined, warnings, notes }
}

/** `flow note <id> <text>`: appends the text to the task's ai_notes. */
export async function addNote(project: Project, id: string, text: string): Promise<StatusChange> {
  await mutateTasks(project, `flow note ${id}`, (editor) => {
    requireTask(editor.tasks, id)
    editor.append({ taskId: id }, "ai_notes", text)
  })
  return { changes: [], added: text, warnings: [], notes: [] }
}

/** `flow step start|done <step_id>` (lib/store/transitions.ts startStep, finishStep), in one write. */
export async function changeStep(project: Project, sub: "start" | "done", stepId: string): Promise<StepResult> {
  // The time is taken under the lock, so a step never ends before it starts.
  return mutateTasks(project, `flow step ${sub} ${stepId}`, (editor) =>
    sub === "start" ? startStep(editor, stepId, isoSeconds()) : finishStep(editor, stepId, isoSeconds()),
  )
}

/** What `flow step done` says after the last step. */
export function lastStepDone(taskId: string): string {
  return `All steps of ${taskId} are done; the orchestrator merges and marks the task done.`
}

/** A status change as a tool returns it. */
export function statusChangeReport(id: string, c: StatusChange): ChangeReport {
  return { id, changes: c.changes, note: c.added ?? null, messages: [...c.warnings, ...c.notes] }
}

/** A step change as a tool returns it. */
export function stepChangeReport(stepId: string, r: StepResult): ChangeReport {
  return { id: stepId, changes: r.changes, note: null, messages: [...r.notes, ...(r.lastDone ? [lastStepDone(r.taskId)] : [])] }
}
