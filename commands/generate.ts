import { existsSync, readFileSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { parse } from "../lib/cli"
import { colours } from "../lib/colour"
import type { Ctx } from "../lib/context"
import { Exit, FlowError, usage } from "../lib/errors"
import { plural } from "../lib/findings"
import { generateTasks } from "../lib/generate"
import type { GenerateReport } from "../lib/json-shapes"
import { formatNote } from "../lib/plan-notes"
import { findProject, projectAt, type Project } from "../lib/project"
import { replaceTasks } from "../lib/tasks"

export const meta = {
  usage: "flow generate [<plan-file>] [--dry-run] [--json]",
  description: `Turns plan.md (or <plan-file>) into tasks.yaml, offline and deterministically: every
'### <n>.<m> <title>' section becomes a task in phase <n> whose id is its title in kebab-case (or the
{#id} at the end of the heading); its text becomes the instructions; the items under 'Acceptance:' or
'Done when:' become acceptance_criteria; 'Depends on: 1.2, 2.1' becomes depends_on (by default a task
depends on the last tasks of the previous phase); 'Validated by: 2.3' becomes validation_task_id; a
'(checkpoint)' in the heading makes a checkpoint; '#### Step <k>: ...' headings become steps and
'#### <n>.<m>.<k> <title>' headings subtasks. docs/PLANNING.md has every rule.
Generating again keeps the status, notes, times and step progress of every task whose id is still there,
and lists what was added, removed and kept. Text that fits no section is reported with its line; an error
in the plan (an unknown reference, a duplicate id, a cycle) stops the command before it writes anything.`,
  options: {
    "dry-run": { type: "boolean", help: "print the tasks.yaml it would write, and write nothing" },
    json: { type: "boolean", help: "print the outcome as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const project = projectWithPlan(ctx)
  const planFile = positionals[0] ? resolve(ctx.cwd, positionals[0]) : join(project.dir, "plan.md")
  const shownPlan = relative(ctx.cwd, planFile) || planFile
  const shownTasks = relative(ctx.cwd, project.tasksFile) || project.tasksFile
  let planText: string
  try {
    planText = readFileSync(planFile, "utf8")
  } catch (e) {
    throw new FlowError(`cannot read ${shownPlan}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`, Exit.failure,
      "write the plan first ('flow plan' drafts it from PRD.md)")
  }
  const dryRun = Boolean(values["dry-run"])
  const c = colours(ctx)

  const report = await replaceTasks(project, "flow generate", async (current) => {
    const g = await generateTasks(planText, current?.data)
    const ok = g.text !== undefined
    const report: GenerateReport = {
      plan: planFile,
      file: project.tasksFile,
      written: ok && !dryRun && g.text !== current?.text,
      dry_run: dryRun,
      tasks: ok ? countTasks(g.tasks) : 0,
      phases: ok ? new Set(g.tasks.map((t) => t.phase).filter((p) => p !== undefined)).size : 0,
      added: ok ? g.added : [],
      removed: ok ? g.removed : [],
      kept: ok ? g.kept : [],
      notes: g.notes,
      ...(dryRun && ok ? { text: g.text } : {}),
    }
    return { text: dryRun ? undefined : g.text, result: report }
  })

  const failed = report.notes.some((n) => n.severity === "error")
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return failed ? Exit.failure : Exit.ok
  }
  for (const note of report.notes) ctx.stderr(formatNote(note, shownPlan, c))
  if (failed) {
    const errors = report.notes.filter((n) => n.severity === "error").length
    throw new FlowError(`${shownPlan} has ${plural(errors, "error")}: ${shownTasks} was not written`, Exit.failure, "fix the plan at the lines above and run 'flow generate' again")
  }
  const say = dryRun ? ctx.stderr : ctx.stdout
  if (dryRun) ctx.stdout(report.text ?? "")
  const what = `${plural(report.tasks, "task")}${report.phases ? ` in ${plural(report.phases, "phase")}` : ""} from ${shownPlan}`
  say(`${dryRun ? `Would write ${shownTasks}` : report.written ? `Wrote ${shownTasks}` : `${shownTasks} is up to date`}: ${what}\n`)
  if (report.kept.length === 0 && report.removed.length === 0) return Exit.ok
  if (report.added.length) say(`  added: ${report.added.join(", ")}\n`)
  if (report.removed.length) say(`  removed: ${report.removed.map((r) => `${r.id} (was ${r.status})`).join(", ")}\n`)
  if (report.kept.length) say(`  kept with their progress: ${report.kept.join(", ")}\n`)
  return Exit.ok
}

function countTasks(tasks: readonly { subtasks?: readonly unknown[] }[]): number {
  return tasks.reduce((n, t) => n + 1 + countTasks((t.subtasks ?? []) as { subtasks?: unknown[] }[]), 0)
}

/** The project; a folder holding only plan.md counts as one, so a plan can be turned into tasks anywhere. */
function projectWithPlan(ctx: Ctx): Project {
  try {
    return findProject(ctx)
  } catch (e) {
    if (e instanceof FlowError && !ctx.env.FLOW_PROJECT && existsSync(join(ctx.cwd, "plan.md"))) return projectAt(resolve(ctx.cwd), ctx.env)
    throw e
  }
}
