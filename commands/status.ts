// `flow ready | start | done | block | todo <task_id>`: one module for the five status verbs (SPEC 3.2).
import { isoSeconds } from "../lib/cli/clock"
import { parse, positionalsExactly, type Command } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { mergePending, pendingNote } from "../lib/run/merge-pending"
import { mutateTasks } from "../lib/store/tasks"
import { requireTask } from "../lib/graph/task-lookup"
import { applyStatus, formatChange, listWithStatus, unfinishedDependencies, VERB_STATUS, type StatusVerb } from "../lib/store/transitions"
import { writeReport } from "../lib/store/write-report"

const DESCRIPTIONS: Record<StatusVerb, string> = {
  ready: `Sets the task to ready_for_agent, whatever its status: the orchestrator may hand it to an agent.`,
  start: `Sets the task to in_progress and started_at to now (what 'flow reset --stuck' measures). Used by the
agent. Dependencies that are not done do not stop it, but are named in a warning.`,
  done: `Sets the task to done with completed_at. In the same write, every todo task whose dependencies are now
all done becomes ready_for_agent, and a parent whose subtasks are now all done becomes done too (up the
tree). A parent whose subtasks are not all done, and a task whose steps are not all done, are refused
unless --force.`,
  block: `Sets the task to blocked: it needs a human. A <reason> (several words are joined) is appended to the
task's ai_notes as 'Blocked: <reason>'.`,
  todo: `Sets the task to todo: the orchestrator picks it up again on its next run, once its dependencies are done.`,
}

/** The command `flow <verb>`. */
export function statusCommand(verb: StatusVerb): Command {
  const to = VERB_STATUS[verb]
  const meta = {
    usage: `flow ${verb} <task_id>${verb === "block" ? " [<reason>]" : ""}${verb === "done" ? " [--force]" : ""} [--json]`,
    description: `${DESCRIPTIONS[verb]}\nA task already ${to} is left as it is (exit 0). Each change is printed as '<id>: <from> → <to>'.`,
    options: {
      json: { type: "boolean", help: "print what changed as JSON: {changes, tasks, notes} (lib/model/json-shapes.ts WriteReport)" },
      ...(verb === "done" ? { force: { type: "boolean" as const, help: "mark it done even with subtasks or steps not done" } } : {}),
    },
  } as const
  async function run(ctx: Ctx, args: string[]): Promise<void> {
    const { values, positionals } = parse(meta, args)
    const [id, ...words] = verb === "block" ? positionals : positionalsExactly(positionals, ["task_id"], meta.usage)
    if (!id) throw usage("missing <task_id>", `usage: ${meta.usage}`)
    const reason = words.join(" ").trim()
    const project = findProject(ctx)
    const result = await mutateTasks(project, `flow ${verb} ${id}`, (editor) => {
      // Taken under the lock, so timestamps follow the order of the writes.
      const now = isoSeconds()
      const task = requireTask(editor.tasks, id, (stepId, taskId) =>
        verb === "done" || verb === "start" ? `run 'flow step ${verb} ${stepId}'` : `run 'flow ${verb} ${taskId}' for the whole task`,
      ).task
      const waiting = verb === "start" && task.status !== to ? unfinishedDependencies(editor, task) : []
      const applied = applyStatus(editor, id, to, now, { force: values.force === true })
      // A reason on a task that is already blocked is still recorded: dropping the user's words would be worse.
      if (reason) editor.append({ taskId: id }, "ai_notes", `Blocked: ${reason}`)
      const warnings = waiting.length > 0 ? [`${id} depends on ${listWithStatus(waiting)}, not done yet; started anyway`] : []
      return { ...applied, warnings, task, report: writeReport(editor, id, applied.changes, [...warnings, ...applied.notes]) }
    })
    let pending: string | undefined
    if (verb === "done" && !ctx.env.FLOW_AGENT) {
      // Done means merged (docs/RUN.md): a branch with work the target lacks is merged by the next run.
      // Not said to an agent: the run that started it merges its branch as soon as it exits.
      const found = (await mergePending(project, [{ ...result.task, status: "done" }])).get(id)
      if (found) pending = pendingNote(id, found)
    }
    if (values.json) {
      if (pending) result.report.notes.push(pending)
      return ctx.stdout(`${JSON.stringify(result.report, null, 2)}\n`)
    }
    for (const w of result.warnings) ctx.stderr(`warning: ${w}\n`)
    if (result.changes.length === 0) ctx.stdout(`${id} is already ${to}${reason ? `; added the note 'Blocked: ${reason}'` : ""}\n`)
    for (const c of result.changes) ctx.stdout(`${formatChange(c)}\n`)
    if (reason && result.changes.length > 0) ctx.stdout(`${id}: added the note 'Blocked: ${reason}'\n`)
    for (const n of result.notes) ctx.stderr(`note: ${n}\n`)
    if (pending) ctx.stderr(`note: ${pending}\n`)
  }
  return { meta, run }
}
