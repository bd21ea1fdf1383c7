// `flow assign <task_id> <agent_name>`: restricts a task to one named agent (SPEC 3.2 rule 4).
import { parse, positionalsExactly } from "../lib/cli"
import type { Ctx } from "../lib/context"
import { usage } from "../lib/errors"
import { findProject } from "../lib/project"
import { mutateTasks } from "../lib/tasks"
import { requireTask } from "../lib/task-lookup"

/** Agent names end up in prompts, logs and folder names: letters, digits, `.`, `_`, `-`. */
const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

export const meta = {
  usage: "flow assign <task_id> <agent_name>",
  description: `Sets the task's agent_name: only that agent runs it. The task's status is not changed (the
orchestrator moves it to assigned when it hands it over). Assigning a done task is allowed: it records who
should redo it if it is reopened. Agent names hold letters, digits, '.', '_' and '-', starting with a letter
or digit.`,
  options: {},
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { positionals } = parse(meta, args)
  const [id, agent] = positionalsExactly(positionals, ["task_id", "agent_name"], meta.usage)
  if (!AGENT_NAME.test(agent)) {
    throw usage(`'${agent}' is not a valid agent name`, "use letters, digits, '.', '_' and '-', starting with a letter or digit (for example claude or codex-2)")
  }
  const before = await mutateTasks(findProject(ctx), `flow assign ${id}`, (editor) => {
    const before = requireTask(editor.tasks, id).task.agent_name
    editor.set({ taskId: id }, "agent_name", agent)
    return before
  })
  if (before === agent) ctx.stdout(`${id} is already assigned to ${agent}\n`)
  else ctx.stdout(`${id}: assigned to ${agent}${before ? ` (was ${before})` : ""}\n`)
}
