import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { Exit, usage } from "../lib/cli/errors"
import { colours } from "../lib/terminal/colour"
import { formatFinding, plural, summarize } from "../lib/validation/findings"
import { findProject } from "../lib/cli/project"
import { validateProject } from "../lib/ops/validate"
import { parallelismText } from "../lib/graph/parallelism"

export const meta = {
  usage: "flow validate [--json]",
  description: `Checks tasks.yaml and prints every finding in file order, each with its line, then a summary.
Errors: YAML syntax, a missing 'tasks' list, missing required fields (id, title, status, instructions),
duplicate task or step ids, ids that are not kebab-case, wrong types, statuses outside their lists,
dependencies on missing tasks or on the task itself, circular dependencies, a validation_task_id that
names no task. Warnings: fields flow does not know (they are kept), a dependency listed twice, a
\`\`\`sh block in the instructions of a parent of subtasks (flow never runs a parent), a task whose prompt is
longer than the CLI of an agent in flow.yaml that may take it reads.
Repeats of one kind in one task are one finding with their count; long lines are cut around the column.
A graph without errors is followed by its parallelism: the critical path (with its time where the tasks'
times are known), the widest level (how many tasks could run at once) and the edges per task.
Exit 0 when there are no errors (warnings allowed), 1 when there are.`,
  options: {
    json: { type: "boolean", help: "print the findings as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  const { report, text, shown } = await validateProject(project, ctx.cwd)
  const { findings, errors } = report
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
  } else {
    const c = colours(ctx)
    for (const f of findings) ctx.stdout(formatFinding(f, shown, text, c))
    if (findings.length > 0) ctx.stdout("\n")
    ctx.stdout(`${shown}: ${plural(report.tasks, "task")} checked\n${summarize(findings)}\n`)
    if (report.parallelism && report.tasks > 0) ctx.stdout(parallelismText(report.parallelism))
  }
  return errors === 0 ? Exit.ok : Exit.failure
}
