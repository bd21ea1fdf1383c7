// The writes of the task commands (ready, start, done, block, todo, note, step start|done) as functions of the
// project: each is one atomic change of the task store (lib/store/store.ts), so a failed one writes nothing, and each builds its
// WriteReport inside the write (lib/store/write-report.ts). `flow <verb>` prints the result (the report with
// --json); `flow mcp`'s tools return the report.
import { isoSeconds } from "../cli/clock"
import { hint, run } from "../cli/hint"
import type { Project } from "../cli/project"
import { requireTask } from "../graph/task-lookup"
import type { Task } from "../model/task-index"
import type { WriteReport } from "../model/json-shapes"
import { mergePending, pendingNote } from "../landing/merge-pending"
import { checkNoteSize } from "../store/note-limit"
import { openStore } from "../store/open"
import type { Fence } from "../store/store"
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
import { writeReport } from "../store/write-report"

/** A status change: the changes in order, what the command says before them (`warnings`) and after (`notes`), and its report. */
export type StatusChange = { changes: Change[]; task: Task; warnings: string[]; notes: string[]; report: WriteReport }

/**
 * `flow <verb> <id> [<reason>]`: the status with every cascade (lib/store/transitions.ts), in one write; `force`
 * marks a task done with subtasks or steps open. A block `reason` is appended as `Blocked: <reason>`, even to a
 * task already blocked. `agent` is the caller's FLOW_AGENT: a person marking a task done is told when its
 * branch still waits to be merged, an agent is not (the run that started it merges its branch as it exits).
 */
export async function changeStatus(
  project: Project,
  verb: StatusVerb,
  id: string,
  opts: { reason?: string; agent?: string; force?: boolean; fence?: Fence } = {},
): Promise<StatusChange> {
  const to = VERB_STATUS[verb]
  const reason = opts.reason?.trim()
  if (reason) checkNoteSize(reason, "the reason")
  const store = await openStore(project)
  const result = await store.mutate(
    `flow ${verb} ${id}`,
    (editor) => {
      // Taken under the lock, so timestamps follow the order of the writes.
      const now = isoSeconds()
      const task = requireTask(editor.tasks, id, (stepId, taskId) =>
        verb === "done" || verb === "start" ? hint`${run(`step ${verb}`, { step_id: stepId })}` : hint`${run(verb, { task_id: taskId })} for the whole task`,
      ).task
      const waiting = verb === "start" && task.status !== to ? unfinishedDependencies(editor, task) : []
      const applied = applyStatus(editor, id, to, now, { force: opts.force === true })
      // A reason on a task that is already blocked is still recorded: dropping the user's words would be worse.
      if (reason) editor.append({ taskId: id }, "ai_notes", `Blocked: ${reason}`)
      const warnings = [
        ...(waiting.length > 0 ? [`${id} depends on ${listWithStatus(waiting)}, not done yet; started anyway`] : []),
        ...(applied.warnings ?? []),
      ]
      return { ...applied, warnings, task, report: writeReport(editor, id, applied.changes, [...warnings, ...applied.notes]) }
    },
    opts.fence,
  )
  if (verb === "done" && !opts.agent) {
    // Done means merged (docs/RUN.md): a branch with work the target lacks is merged by the next run.
    const pending = (await mergePending(project, [{ ...result.task, status: "done" }])).get(id)
    if (pending) {
      result.notes.push(pendingNote(id, pending))
      result.report.notes.push(pendingNote(id, pending))
    }
  }
  return result
}

/** `flow note <id> <text>`: appends the text to the task's ai_notes. */
export async function addNote(project: Project, id: string, text: string, fence?: Fence): Promise<WriteReport> {
  checkNoteSize(text)
  const store = await openStore(project)
  return store.mutate(
    `flow note ${id}`,
    (editor) => {
      requireTask(editor.tasks, id)
      editor.append({ taskId: id }, "ai_notes", text)
      return writeReport(editor, id, [])
    },
    fence,
  )
}

/** `flow step start|done <step_id>` (lib/store/transitions.ts startStep, finishStep), in one write. */
export async function changeStep(project: Project, sub: "start" | "done", stepId: string, fence?: Fence): Promise<StepResult & { report: WriteReport }> {
  const store = await openStore(project)
  // The time is taken under the lock, so a step never ends before it starts.
  return store.mutate(
    `flow step ${sub} ${stepId}`,
    (editor) => {
      const result = sub === "start" ? startStep(editor, stepId, isoSeconds()) : finishStep(editor, stepId, isoSeconds())
      return { ...result, report: writeReport(editor, result.taskId, result.changes, result.notes) }
    },
    fence,
  )
}
