// `flow assign <task_id> <agent_name>`: restricts a task to one named agent (SPEC 3.2 rule 4).
import { AGENT_NAME, AGENT_NAME_HINT } from "../lib/cli/agent-name"
import { parse, positionalsExactly } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { openStore } from "../lib/store/open"
import { requireTask } from "../lib/graph/task-lookup"
import { writeReport } from "../lib/store/write-report"

export const meta = {
  usage: "flow assign <task_id> <agent_name> | flow assign <task_id> --clear [--json]",
  description: `Sets the task's agent_name: only that agent runs it. The task's status is not changed (the
orchestrator moves it to assigned when it hands it over). Assigning a done task is allowed: it records who
should redo it if it is reopened. Agent names hold up to 64 letters, digits, '.', '_' and '-', starting with
a letter or digit. --clear removes agent_name: any agent may take the task again.`,
  options: {
    clear: { type: "boolean", help: "remove the task's agent_name instead of setting one" },
    json: { type: "boolean", help: "print the task as the write left it: {changes, tasks, notes} (lib/model/json-shapes.ts WriteReport)" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const clear = values.clear === true
  const [id, agent] = positionalsExactly(positionals, clear ? ["task_id"] : ["task_id", "agent_name"], meta.usage)
  if (!clear && !AGENT_NAME.test(agent)) throw usage(`'${agent}' is not a valid agent name`, AGENT_NAME_HINT)
  const store = await openStore(findProject(ctx))
  const { before, report } = await store.mutate(`flow assign ${id}${clear ? " --clear" : ""}`, (editor) => {
    const before = requireTask(editor.tasks, id).task.agent_name
    editor.set({ taskId: id }, "agent_name", clear ? undefined : agent)
    return { before, report: writeReport(editor, id, []) }
  })
  if (values.json) ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
  else if (clear) ctx.stdout(before ? `${id}: no longer assigned (was ${before})\n` : `${id} is not assigned to any agent\n`)
  else if (before === agent) ctx.stdout(`${id} is already assigned to ${agent}\n`)
  else ctx.stdout(`${id}: assigned to ${agent}${before ? ` (was ${before})` : ""}\n`)
}
