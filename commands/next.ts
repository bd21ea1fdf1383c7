import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { taskLine } from "../lib/graph/task-lines"
import { nextTasks } from "../lib/ops/read"

export const meta = {
  usage: "flow next [<agent_name>] [--json]",
  description: `Prints the tasks that may be taken now, in the order to take them (phase, tasks without one
last, then file order), one line each, with ' (agent: <name>)' when the task is assigned.
A task is available when it is ready_for_agent, or todo with every dependency done; every ancestor's
dependencies are done too; it is not a checkpoint (a person completes those); and it has no subtasks
(its children are the work). With <agent_name>: only tasks assigned to that agent or to none.`,
  options: {
    json: { type: "boolean", help: "print the tasks as JSON: {tasks: [...]}" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const agent = positionals[0]
  if (agent !== undefined && agent.trim() === "") throw usage("the agent name is empty", `usage: ${meta.usage}`)
  const { report, available } = await nextTasks(findProject(ctx), agent)
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  if (available.length === 0) {
    ctx.stdout(agent === undefined ? "No tasks are available.\n" : `No tasks are available for ${agent}.\n`)
    return
  }
  let out = ""
  for (const { task } of available) out += `${taskLine(task)}${task.agent_name !== undefined ? ` (agent: ${task.agent_name})` : ""}\n`
  ctx.stdout(out)
}
