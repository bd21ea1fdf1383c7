// `flow validate` as a function of the project: every finding in the task graph (tasks.yaml, or a shared
// project's graph in the file format `flow export` writes), for the command and for `flow mcp`'s validate tool.
import type { Project } from "../cli/project"
import type { Finding, ValidateReport } from "../model/json-shapes"
import { currentBranch, repoRoot } from "../git/git"
import { loadConfig } from "../config/config"
import { openStore } from "../store/open"
import { validateText } from "../validation/validate"
import { parallelism } from "../graph/parallelism"
import type { TaskFile } from "../model/task-index"
import { promptFindings } from "./prompt-fit"

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

/**
 * Checks the graph from scratch (never the validation cache) and remembers a text without errors as valid.
 * `shown` is where the graph is, as the command prints it (its findings' lines are lines of `text`).
 */
export async function validateProject(project: Project, cwd = project.dir): Promise<{ report: ValidateReport; text: string; shown: string }> {
  const store = await openStore(project)
  const text = await store.text()
  const checked = await validateText(text, { targets: await mergeTargets(project.dir, text), overlaps: true })
  const { taskCount } = checked
  const errors = checked.findings.filter((f) => f.severity === "error").length
  // Only a valid graph has prompts to measure.
  const findings = errors > 0 ? checked.findings : byLine([...checked.findings, ...(await promptFindings(project, text))])
  if (errors === 0) store.validated(text)
  // Only a graph without errors has a shape to report: a cycle or a missing task would make the chains up.
  const report: ValidateReport = { file: store.where, valid: errors === 0, tasks: taskCount, errors, warnings: findings.length - errors, findings }
  if (errors === 0) report.parallelism = parallelism((checked.data as TaskFile).tasks)
  return {
    report,
    text,
    shown: store.shown(cwd),
  }
}

function byLine(findings: Finding[]): Finding[] {
  return findings.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0))
}
