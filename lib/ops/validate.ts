// `flow validate` as a function of the project: every finding in tasks.yaml, for the command and for
// `flow mcp`'s validate tool.
import { readFileSync } from "node:fs"
import { Exit, FlowError } from "../cli/errors"
import type { Project } from "../cli/project"
import type { ValidateReport } from "../model/json-shapes"
import { currentBranch, repoRoot } from "../run/git"
import { loadConfig } from "../store/config"
import { rememberValid } from "../store/valid-cache"
import { validateText } from "../store/validate"

/**
 * The branch finished work merges into (flow.yaml's merge_target, else the project repository's current
 * branch), looked up only when a task names a worktree: validate stays one read of one file otherwise.
 */
async function mergeTargets(dir: string, text: string): Promise<string[]> {
  if (!/^\s*worktree\s*:/m.test(text)) return []
  let target: string | undefined
  try {
    target = loadConfig(dir).merge_target
  } catch {} // flow.yaml's own errors are for the commands that read it
  if (target) return [target]
  const root = await repoRoot(dir)
  const branch = root ? await currentBranch(root).catch(() => undefined) : undefined
  return branch ? [branch] : []
}

/** Checks tasks.yaml from scratch (never the validation cache) and remembers a file without errors as valid. */
export async function validateProject(project: Project): Promise<{ report: ValidateReport; text: string }> {
  let text: string
  try {
    text = readFileSync(project.tasksFile, "utf8")
  } catch {
    throw new FlowError(`${project.tasksFile} does not exist`, Exit.invalid, "run 'flow generate' to make it from plan.md")
  }
  const { findings, taskCount } = await validateText(text, { targets: await mergeTargets(project.dir, text) })
  const errors = findings.filter((f) => f.severity === "error").length
  if (errors === 0) rememberValid(project.stateDir, text)
  return { report: { file: project.tasksFile, valid: errors === 0, tasks: taskCount, errors, warnings: findings.length - errors, findings }, text }
}
