import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { statusArg } from "../lib/graph/status-arg"
import { mergePending } from "../lib/landing/merge-pending"
import { taskLine } from "../lib/graph/task-lines"
import { listGroups, listReport, type ListGroup } from "../lib/ops/read"
import { workedByMark } from "../lib/run/worked-by"

export const meta = {
  usage: "flow list [<status>] [--json]",
  description: `Prints every task, one line each: [<status>] <id> <title> (depends: <ids>; past six, the first
five and how many more), grouped by the phase of its top-level task, phases in ascending order, each under a header 'Phase <n>: <title>' (the
title from a '## Phase <n>: <title>' heading in plan.md), tasks without a phase last under 'No phase'.
Subtasks follow their parent, indented two spaces per level. A checkpoint's line ends in (checkpoint); a
task a 'flow run' agent has or had ends in (working: <agent>), (stopped: <agent>) when its run is gone
and the next run resumes it, or (by <agent>) for the agent that had it last.
<status> (todo, ready_for_agent, assigned, in_progress, done, blocked) shows only tasks with that status;
a shown subtask is then indented below its nearest shown ancestor.`,
  options: {
    json: { type: "boolean", help: "print the groups as JSON: {phases: [{phase, title, tasks}]}" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  // The filter is checked before the file is read: a typo is a usage error whatever state the file is in.
  const filter = positionals[0] === undefined ? undefined : statusArg(positionals[0], meta.usage)
  const project = findProject(ctx)
  const { groups, index } = await listGroups(project, filter)
  if (values.json) {
    ctx.stdout(`${JSON.stringify(listReport(groups), null, 2)}\n`)
    return
  }
  if (groups.length === 0) {
    ctx.stdout(filter === undefined ? "No tasks.\n" : `No tasks with status ${filter}.\n`)
    return
  }
  const pending = await mergePending(
    project,
    [...index.values()].map((e) => e.task),
  )
  const line = ({ entry: { task }, indent, worker }: ListGroup["rows"][number]) =>
    `${"  ".repeat(indent)}${taskLine(task, pending.has(task.id) ? "done, merge pending" : task.status)}${workedByMark(worker)}`
  ctx.stdout(`${groups.map((g) => `${g.title}\n${g.rows.map(line).join("\n")}\n`).join("\n")}`)
}
