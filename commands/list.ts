import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import type { ListedTask, ListReport } from "../lib/model/json-shapes"
import { phaseHeader, readPhaseTitles } from "../lib/plan/plan-phases"
import { findProject } from "../lib/cli/project"
import { statusArg } from "../lib/graph/status-arg"
import { indexTasks } from "../lib/model/task-index"
import { mergePending } from "../lib/run/merge-pending"
import { taskLine, taskSummary } from "../lib/graph/task-lines"
import { readTasks } from "../lib/store/tasks"
import { readWork, workedBy, workedByMark } from "../lib/run/worked-by"

export const meta = {
  usage: "flow list [<status>] [--json]",
  description: `Prints every task, one line each: [<status>] <id> <title> (depends: <ids>), grouped by the
phase of its top-level task, phases in ascending order, each under a header 'Phase <n>: <title>' (the
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

type Group = { phase: number | null; lines: string[]; tasks: ListedTask[] }

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  // The filter is checked before the file is read: a typo is a usage error whatever state the file is in.
  const filter = positionals[0] === undefined ? undefined : statusArg(positionals[0], meta.usage)
  const json = values.json === true
  const project = findProject(ctx)
  const { data } = await readTasks(project)
  const groups = new Map<number | null, Group>()
  // Per task id: the indentation its shown children get (the number of shown ancestors, itself included),
  // and the phase of its top-level task, which decides the group of every descendant.
  const childIndent = new Map<string, number>()
  const groupOf = new Map<string, Group>()
  const index = indexTasks(data)
  // One read of the run state for every task (a few queries, never one per task).
  const [pending, work] = await Promise.all([
    json
      ? new Map()
      : mergePending(
          project,
          [...index.values()].map((e) => e.task),
        ),
    readWork(project),
  ])
  for (const { task, parent, depth } of index.values()) {
    let group: Group
    let indent = 0
    if (parent === undefined) {
      const phase = task.phase ?? null
      group = groups.get(phase) ?? { phase, lines: [], tasks: [] }
      groups.set(phase, group)
    } else {
      group = groupOf.get(parent.id) as Group
      indent = childIndent.get(parent.id) as number
    }
    groupOf.set(task.id, group)
    const shown = filter === undefined || task.status === filter
    childIndent.set(task.id, shown ? indent + 1 : indent)
    if (!shown) continue
    const worker = workedBy(task, work)
    if (json) group.tasks.push({ ...taskSummary(task, parent, depth), worked_by: worker })
    else group.lines.push(`${"  ".repeat(indent)}${taskLine(task, pending.has(task.id) ? "done, merge pending" : task.status)}${workedByMark(worker)}`)
  }
  const ordered = [...groups.values()]
    .filter((g) => (json ? g.tasks : g.lines).length > 0)
    .sort((a, b) => (a.phase ?? Number.POSITIVE_INFINITY) - (b.phase ?? Number.POSITIVE_INFINITY))
  const titles = ordered.some((g) => g.phase !== null) ? readPhaseTitles(project.dir, data) : new Map<number, string>()
  const header = (g: Group) => (g.phase === null ? "No phase" : phaseHeader(g.phase, titles))
  if (json) {
    const report: ListReport = { phases: ordered.map((g) => ({ phase: g.phase, title: header(g), tasks: g.tasks })) }
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  if (ordered.length === 0) {
    ctx.stdout(filter === undefined ? "No tasks.\n" : `No tasks with status ${filter}.\n`)
    return
  }
  ctx.stdout(`${ordered.map((g) => `${header(g)}\n${g.lines.join("\n")}\n`).join("\n")}`)
}
