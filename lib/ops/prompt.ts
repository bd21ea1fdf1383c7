// `flow prompt` as a function of the project: the exact text an agent receives, for the command, the
// inspector's preview and `flow mcp`'s prompt tool and resource.
import { FlowError } from "../cli/errors"
import { hint, run } from "../cli/hint"
import type { Project } from "../cli/project"
import { requireTask } from "../graph/task-lookup"
import type { PromptReport } from "../model/json-shapes"
import { indexTasks } from "../model/task-index"
import { projectTaskPrompt } from "../prompts/project-prompt"
import { currentStep, stepPrompt } from "../prompts/prompt"
import { openStore } from "../store/open"

/**
 * The prompt of task `id`: the whole one a session starts with, or with `resume` the shorter one that resumes
 * its session for the current step (a FlowError when the task has no step left). `tools`: the prompt an agent
 * given flow's MCP server gets, naming tools instead of commands.
 */
export async function promptReport(project: Project, id: string, opts: { resume?: boolean; tools?: boolean } = {}): Promise<PromptReport> {
  const index = indexTasks((await (await openStore(project)).read()).data)
  const { task } = requireTask(index, id)
  if (opts.resume) {
    const step = currentStep(task)
    if (!step) {
      throw new FlowError(
        task.steps?.length ? `every step of '${id}' is done` : `task '${id}' has no steps`,
        undefined,
        hint`${run("prompt", { task_id: id })} for the task's prompt`,
      )
    }
    return { task_id: id, kind: "resume", step_id: step.id, prompt: stepPrompt(task, step, opts.tools) }
  }
  const prompt = await projectTaskPrompt(project, index, id, { tools: opts.tools })
  return { task_id: id, kind: "task", step_id: currentStep(task)?.id ?? null, prompt }
}
