import { readFileSync } from "node:fs"
import { relative } from "node:path"
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { Exit, FlowError, usage } from "../lib/cli/errors"
import { colours } from "../lib/terminal/colour"
import { formatFinding, plural, summarize } from "../lib/store/findings"
import type { ValidateReport } from "../lib/model/json-shapes"
import { findProject } from "../lib/cli/project"
import { rememberValid } from "../lib/store/valid-cache"
import { validateText } from "../lib/store/validate"
import { loadConfig } from "../lib/store/config"
import { currentBranch, repoRoot } from "../lib/run/git"

export const meta = {
  usage: "flow validate [--json]",
  description: `Checks tasks.yaml and prints every finding in file order, each with its line, then a summary.
Errors: YAML syntax, a missing 'tasks' list, missing required fields (id, title, status, instructions),
duplicate task or step ids, ids that are not kebab-case, wrong types, statuses outside their lists,
dependencies on missing tasks or on the task itself, circular dependencies, a validation_task_id that
names no task. Warnings: fields flow does not know (they are kept), a dependency listed twice, a
\`\`\`sh block in the instructions of a parent of subtasks (flow never runs a parent).
Repeats of one kind in one task are one finding with their count; long lines are cut around the column.
Exit 0 when there are no errors (warnings allowed), 1 when there are.`,
  options: {
    json: { type: "boolean", help: "print the findings as JSON" },
  },
} as const

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

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  let text: string
  try {
    text = readFileSync(project.tasksFile, "utf8")
  } catch {
    throw new FlowError(`${project.tasksFile} does not exist`, Exit.invalid, "run 'flow generate' to make it from plan.md")
  }
  const { findings, taskCount } = await validateText(text, { targets: await mergeTargets(project.dir, text) })
  const errors = findings.filter((f) => f.severity === "error").length
  if (errors === 0) rememberValid(project.stateDir, text)
  if (values.json) {
    const report: ValidateReport = { file: project.tasksFile, valid: errors === 0, tasks: taskCount, errors, warnings: findings.length - errors, findings }
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
  } else {
    const shown = relative(ctx.cwd, project.tasksFile) || project.tasksFile
    const c = colours(ctx)
    for (const f of findings) ctx.stdout(formatFinding(f, shown, text, c))
    if (findings.length > 0) ctx.stdout("\n")
    ctx.stdout(`${shown}: ${plural(taskCount, "task")} checked\n${summarize(findings)}\n`)
  }
  return errors === 0 ? Exit.ok : Exit.failure
}
