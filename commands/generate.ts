import { existsSync, readFileSync, rmSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { parse } from "../lib/cli/args"
import { colours } from "../lib/terminal/colour"
import type { Ctx } from "../lib/cli/context"
import { Exit, FlowError, usage } from "../lib/cli/errors"
import { plural } from "../lib/validation/findings"
import { showProgress } from "../lib/agents/agent-progress"
import { loadConfig } from "../lib/config/config"
import { ENRICH_FILE, enrichPrompt, readEnrichment, type Enrichment } from "../lib/plan/enrich"
import { generateTasks } from "../lib/plan/generate"
import { parallelism, parallelismText } from "../lib/graph/parallelism"
import type { PlanNote } from "../lib/plan/plan-parse"
import { planningAgent, requireInstalled } from "../lib/plan/planning-agent"
import { runTurn } from "../lib/run/worker/agent-runner"
import { ensureStateDir } from "../lib/store/valid-cache"
import type { GenerateReport } from "../lib/model/json-shapes"
import { formatNote } from "../lib/plan/plan-notes"
import { findProject, projectAt, type Project } from "../lib/cli/project"
import { openStore } from "../lib/store/open"
import { inFormOf } from "../lib/store/line-ending"

export const meta = {
  usage: "flow generate [<plan-file>] [--enrich] [--agent <name>] [--dry-run] [--json]",
  description: `Turns plan.md (or <plan-file>) into tasks.yaml, offline and deterministically: every
'### <n>.<m> <title>' section becomes a task in phase <n> whose id is its title in kebab-case, at most 24
characters (or the {#id} in the heading); its text becomes the instructions; the items under 'Acceptance:'
or 'Done when:' become acceptance_criteria; 'Depends on: 1.2, 2.1' becomes depends_on; 'Files: a.ts, lib/'
becomes files; 'Validated by: 2.3' becomes validation_task_id; a '(checkpoint)' in the heading makes a
checkpoint; '#### Step <k>: ...' headings become steps and '#### <n>.<m>.<k> <title>' headings subtasks.
A section without 'Depends on' waits for the previous phase's gate (its checkpoint, or the one section it
ends in; a phase that ends in several becomes one task, 'phase-<n>', whose subtasks its sections are) and
for a checkpoint before it in its own phase; a checkpoint without one waits for everything open before it.
docs/PLANNING.md has every rule.
With --enrich (or --agent <name>) an agent CLI then proposes sharper instructions and acceptance criteria
as JSON, which flow checks and lays over the generated tasks; ids and dependencies stay the plan's.
Generating again keeps the status, notes, times and step progress (steps matched by their text) of every
task whose id is still there, and lists what was added, removed and kept; a ready task the plan gives a new
dependency that is not done goes back to todo. The output ends with the graph's parallelism: its critical
path, its widest level and its edges per task. Text that fits no section is reported with its line; an
error in the plan (an unknown reference, a duplicate id, a cycle) stops the command before it writes anything.`,
  options: {
    enrich: { type: "boolean", help: "then let the first agent CLI of flow.yaml propose better instructions and acceptance criteria" },
    agent: { type: "string", arg: "name", help: "the flow.yaml agent that proposes them (implies --enrich)" },
    "dry-run": { type: "boolean", help: "print the tasks.yaml it would write, and write nothing" },
    json: { type: "boolean", help: "print the outcome as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const project = projectWithPlan(ctx, positionals[0] !== undefined)
  const planFile = positionals[0] ? resolve(ctx.cwd, positionals[0]) : join(project.dir, "plan.md")
  const shownPlan = relative(ctx.cwd, planFile) || planFile
  const store = await openStore(project)
  const shownTasks = store.shown(ctx.cwd)
  const planText = readPlan(planFile, shownPlan)
  const dryRun = Boolean(values["dry-run"])
  const c = colours(ctx)
  // The agent works before the lock is taken: it may take minutes, and agents of a run may be writing.
  const proposals = values.enrich || values.agent !== undefined ? await propose(ctx, project, planText, values.agent, Boolean(values.json)) : undefined

  const report = await store.replace("flow generate", async (current) => {
    const g = await generateTasks(planText, current?.data, proposals?.enrichment, shownPlan)
    // A CRLF file stays CRLF, and a BOM stays: the plan's tasks are rendered with LF and none.
    if (g.text !== undefined && current) g.text = inFormOf(current.text, g.text)
    g.notes.push(...(proposals?.notes ?? []))
    const ok = g.text !== undefined
    const report: GenerateReport = {
      plan: planFile,
      file: store.where,
      written: ok && !dryRun && g.text !== current?.text,
      dry_run: dryRun,
      tasks: ok ? countTasks(g.tasks) : 0,
      phases: ok ? new Set(g.tasks.map((t) => t.phase).filter((p) => p !== undefined)).size : 0,
      added: ok ? g.added : [],
      removed: ok ? g.removed : [],
      kept: ok ? g.kept : [],
      requeued: ok ? g.requeued : [],
      joins: ok ? g.joins : [],
      ...(proposals ? { enriched: ok ? g.enriched : [], enriched_by: proposals.agent } : {}),
      notes: g.notes,
      ...(ok ? { parallelism: parallelism(g.tasks) } : {}),
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
    throw new FlowError(
      `${shownPlan} has ${plural(errors, "error")}: ${shownTasks} was not written`,
      Exit.failure,
      "fix the plan at the lines above and run 'flow generate' again",
    )
  }
  printGenerated(ctx, report, dryRun, shownPlan, shownTasks)
  return Exit.ok
}

function readPlan(planFile: string, shownPlan: string): string {
  try {
    return readFileSync(planFile, "utf8")
  } catch (e) {
    throw new FlowError(
      `cannot read ${shownPlan}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`,
      Exit.failure,
      "write the plan first ('flow plan' drafts it from PRD.md)",
    )
  }
}

/** What was written (or would be, with --dry-run: the file on stdout, the summary on stderr), the changes, the parallelism. */
function printGenerated(ctx: Ctx, report: GenerateReport, dryRun: boolean, shownPlan: string, shownTasks: string): void {
  const say = dryRun ? ctx.stderr : ctx.stdout
  if (dryRun) ctx.stdout(report.text ?? "")
  const what = `${plural(report.tasks, "task")}${report.phases ? ` in ${plural(report.phases, "phase")}` : ""} from ${shownPlan}`
  say(`${dryRun ? `Would write ${shownTasks}` : report.written ? `Wrote ${shownTasks}` : `${shownTasks} is up to date`}: ${what}\n`)
  if (report.joins.length > 0) say(`  one task for each phase that ends in several sections, which the next phase waits for: ${report.joins.join(", ")}\n`)
  if (report.enriched_by) say(`  enriched by ${report.enriched_by}: ${report.enriched?.length ? report.enriched.join(", ") : "no task"}\n`)
  if (report.kept.length > 0 || report.removed.length > 0) {
    if (report.added.length) say(`  added: ${report.added.join(", ")}\n`)
    if (report.removed.length) say(`  removed: ${report.removed.map((r) => `${r.id} (was ${r.status})`).join(", ")}\n`)
    if (report.kept.length) say(`  kept with their progress: ${report.kept.join(", ")}\n`)
    if (report.requeued.length) say(`  back to todo, a new dependency is not done: ${report.requeued.join(", ")}\n`)
  }
  if (report.parallelism && report.tasks > 0) say(parallelismText(report.parallelism))
}

function countTasks(tasks: readonly { subtasks?: readonly unknown[] }[]): number {
  return tasks.reduce((n, t) => n + 1 + countTasks((t.subtasks ?? []) as { subtasks?: unknown[] }[]), 0)
}

/**
 * The project; outside one, the working folder when it holds plan.md or a plan file is named, so a plan can be
 * turned into tasks anywhere.
 */
function projectWithPlan(ctx: Ctx, planNamed: boolean): Project {
  try {
    return findProject(ctx)
  } catch (e) {
    if (e instanceof FlowError && !ctx.env.FLOW_PROJECT && (planNamed || existsSync(join(ctx.cwd, "plan.md")))) return projectAt(resolve(ctx.cwd), ctx.env)
    throw e
  }
}

/** Runs the agent on the deterministic tasks and reads its proposals; a failed agent is an error before any write. */
async function propose(
  ctx: Ctx,
  project: Project,
  planText: string,
  name: string | undefined,
  quiet: boolean,
): Promise<{ agent: string; enrichment: Enrichment; notes: PlanNote[] } | undefined> {
  const first = await generateTasks(planText)
  if (first.text === undefined) return undefined // the plan's own errors are reported by the normal pass
  const choice = planningAgent(loadConfig(project.dir), { name })
  if (!choice.agent)
    throw usage(
      `--enrich needs an agent CLI: ${choice.reason}`,
      "add an agent (for example 'cli: claude') to flow.yaml, or run 'flow generate' without --enrich",
    )
  const agent = choice.agent
  requireInstalled(agent, ctx.env.PATH, "run 'flow generate' without --enrich")
  ensureStateDir(project.stateDir)
  const file = join(project.dir, ENRICH_FILE)
  rmSync(file, { force: true })
  const abort = new AbortController()
  const stop = ctx.onInterrupt?.(() => abort.abort())
  const progress = quiet ? { event: () => {}, stop: () => {} } : await showProgress(ctx, `${agent.name} (${agent.cli}) is reviewing the tasks`)
  try {
    const turn = await runTurn({
      agent,
      prompt: enrichPrompt(first.tasks),
      script: "",
      cwd: project.dir,
      env: { FLOW_PROJECT: project.dir },
      signal: abort.signal,
      onEvent: progress.event,
    })
    if (abort.signal.aborted) throw new FlowError(`cancelled: ${agent.name} was stopped; tasks.yaml was not written`, Exit.cancelled)
    if (turn.code !== 0 || !existsSync(file)) {
      progress.stop(`${agent.name} failed`)
      const why = turn.code !== 0 ? `failed with exit ${turn.code}` : `finished without writing ${ENRICH_FILE}`
      throw new FlowError(
        `${agent.name} (${agent.cli}) ${why}; tasks.yaml was not written${turn.tail ? `; its last output:\n${turn.tail}` : ""}`,
        Exit.failure,
        "try again, or run 'flow generate' without --enrich",
      )
    }
    progress.stop(`${agent.name} proposed changes`, turn.seconds)
    const ids = new Set<string>()
    const walk = (list: readonly { id: string; subtasks?: unknown[] }[] | undefined) =>
      list?.forEach((t) => {
        ids.add(t.id)
        walk(t.subtasks as typeof list)
      })
    walk(first.tasks)
    return { agent: agent.name, ...readEnrichment(readFileSync(file, "utf8"), ids) }
  } finally {
    stop?.()
    rmSync(file, { force: true })
  }
}
