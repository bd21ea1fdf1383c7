// `flow ready | start | done | block | todo <task_id>`: one module for the five status verbs (SPEC 3.2).
import { parse, positionalsExactly, type Command } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { changeStatus } from "../lib/ops/change"
import { agentFence } from "../lib/ops/fence"
import { formatChange, VERB_STATUS, type StatusVerb } from "../lib/store/transitions"

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

const LEAVING_DONE = `
A task that was done takes back what that allowed: its dependents that are ready_for_agent go back to todo in
the same write (those already started are named on stderr and left as they are).`

/** The command `flow <verb>`. */
export function statusCommand(verb: StatusVerb): Command {
  const to = VERB_STATUS[verb]
  const meta = {
    usage: `flow ${verb} <task_id>${verb === "block" ? " [<reason>]" : ""}${verb === "done" ? " [--force]" : ""} [--json]`,
    description: `${DESCRIPTIONS[verb]}${verb === "done" ? "" : LEAVING_DONE}\nA task already ${to} is left as it is (exit 0). Each change is printed as '<id>: <from> → <to>'.`,
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
    const result = await changeStatus(findProject(ctx), verb, id, {
      reason,
      agent: ctx.env.FLOW_AGENT,
      force: values.force === true,
      fence: agentFence(ctx.env),
    })
    if (values.json) return ctx.stdout(`${JSON.stringify(result.report, null, 2)}\n`)
    for (const w of result.warnings) ctx.stderr(`warning: ${w}\n`)
    if (result.changes.length === 0) ctx.stdout(`${id} is already ${to}${reason ? `; added the note 'Blocked: ${reason}'` : ""}\n`)
    for (const c of result.changes) ctx.stdout(`${formatChange(c)}\n`)
    if (reason && result.changes.length > 0) ctx.stdout(`${id}: added the note 'Blocked: ${reason}'\n`)
    for (const n of result.notes) ctx.stderr(`note: ${n}\n`)
  }
  return { meta, run }
}
