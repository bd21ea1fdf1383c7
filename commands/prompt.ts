import { parse, positionalsExactly } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { findProject } from "../lib/cli/project"
import { promptReport } from "../lib/ops/prompt"

export const meta = {
  usage: "flow prompt <task_id> [--resume] [--json]",
  description: `Prints the exact prompt an agent receives for the task: the project's GUIDELINES.md, the task's
instructions, acceptance criteria and notes, the tasks it builds on with their notes, its current step,
and the flow commands to call. With --resume, the shorter prompt that resumes the task's session for its
current step (what an agent gets after finishing the previous step). With --json, the prompt and what it
is for (lib/model/json-shapes.ts PromptReport).`,
  options: {
    resume: { type: "boolean", help: "the prompt that resumes the session for the current step" },
    json: { type: "boolean", help: "print JSON: task_id, kind (task or resume), step_id and the prompt" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [id] = positionalsExactly(positionals, ["task_id"], meta.usage)
  const report = await promptReport(findProject(ctx), id, { resume: values.resume })
  ctx.stdout(values.json ? `${JSON.stringify(report, null, 2)}\n` : report.prompt)
}
