import { parse, positionalsExactly } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError } from "../lib/cli/errors"
import type { PromptReport } from "../lib/model/json-shapes"
import { findProject } from "../lib/cli/project"
import { projectTaskPrompt } from "../lib/run/project-prompt"
import { currentStep, stepPrompt } from "../lib/run/prompt"
import { indexTasks } from "../lib/model/task-index"
import { requireTask } from "../lib/graph/task-lookup"
import { readTasks } from "../lib/store/tasks"

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
  const project = findProject(ctx)
  const { data } = await readTasks(project)
  const index = indexTasks(data)
  const { task } = requireTask(index, id)
  if (values.resume) {
    const step = currentStep(task)
    if (!step) {
      throw new FlowError(
        task.steps?.length ? `every step of '${id}' is done` : `task '${id}' has no steps`,
        undefined,
        `run 'flow prompt ${id}' for the task's prompt`,
      )
    }
    return print(ctx, Boolean(values.json), { task_id: id, kind: "resume", step_id: step.id, prompt: stepPrompt(task, step) })
  }
  const prompt = await projectTaskPrompt(project, index, id)
  print(ctx, Boolean(values.json), { task_id: id, kind: "task", step_id: currentStep(task)?.id ?? null, prompt })
}

function print(ctx: Ctx, json: boolean, report: PromptReport): void {
  ctx.stdout(
    json
      ? `${JSON.stringify(report, null, 2)}
`
      : report.prompt,
  )
}
