// A task's full prompt for a real project: lib/prompts/prompt.ts's builder fed with what lives on disk (the
// project's GUIDELINES.md, its folder name, the task's questions from .flow/state.db). The orchestrator,
// `flow prompt` and the inspector all call this, so the text a person previews is the text an agent gets.
import { readFileSync } from "node:fs"
import { basename, join } from "node:path"
import type { Project } from "../cli/project"
import { previewPrepared, type Prepared } from "../worktree/prepare"
import { taskPrompt, type PromptInput } from "./prompt"
import { branchOf } from "../git/workspace"
import type { RunState } from "../state/run-state"
import { openExistingState } from "../state/state"
import type { Indexed } from "../model/task-index"

export type ProjectPromptOptions = {
  /** where the agent works; without it, the branch the orchestrator would give the task */
  workspace?: PromptInput["workspace"]
  /** an open state database; without one the project's is opened for the call, if it has one */
  db?: RunState
  /** what the run prepared in the worktree; without it, what flow.yaml would prepare (lib/worktree/prepare.ts) */
  prepared?: Prepared
  /** the agent has flow's MCP server: the prompt names tools instead of commands */
  tools?: boolean
}

export async function projectTaskPrompt(project: Project, index: Map<string, Indexed>, taskId: string, options: ProjectPromptOptions = {}): Promise<string> {
  let questions: PromptInput["questions"] = []
  if (options.db) questions = await options.db.questions.forTask(taskId)
  else {
    using db = await openExistingState(project)
    if (db) questions = await db.questions.forTask(taskId)
  }
  // The branch line is part of what the run sends, so the preview names the branch the run would use.
  const task = index.get(taskId)?.task
  const workspace = options.workspace ?? (task ? { branch: branchOf(task) } : undefined)
  const prepared = options.prepared ?? (task ? await previewPrepared(project, task) : undefined)
  return taskPrompt({
    index,
    taskId,
    guidelines: readGuidelines(project.dir),
    projectName: basename(project.dir),
    workspace,
    questions,
    prepared,
    tools: options.tools,
  })
}

/** The project's GUIDELINES.md, which opens every prompt; undefined without one. */
export function readGuidelines(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, "GUIDELINES.md"), "utf8")
  } catch {
    return undefined // a project without guidelines is fine: the prompt has the rest
  }
}
