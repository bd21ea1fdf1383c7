import { copyFileSync, existsSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { writeFileAtomic } from "../lib/store/atomic-write"
import { parse } from "../lib/cli/args"
import { type Colours, colours } from "../lib/terminal/colour"
import { type AgentConfig, loadConfig } from "../lib/config/config"
import type { Ctx } from "../lib/cli/context"
import { Exit, FlowError, usage } from "../lib/cli/errors"
import { plural } from "../lib/validation/findings"
import { planToTasks } from "../lib/plan/generate"
import type { PlanReport } from "../lib/model/json-shapes"
import { formatNote } from "../lib/plan/plan-notes"
import { parsePlan, type PlanNote } from "../lib/plan/plan-parse"
import { filesUnder, planPrompt } from "../lib/plan/plan-prompt"
import { planSkeleton } from "../lib/plan/plan-skeleton"
import { type AgentChoice, planningAgent, requireInstalled } from "../lib/plan/planning-agent"
import { findProject } from "../lib/cli/project"
import { runTurn } from "../lib/run/worker/agent-runner"
import { showProgress } from "../lib/agents/agent-progress"

export const meta = {
  usage: "flow plan [--agent <name>] [--offline] [--force] [--json]",
  description: `Writes plan.md from PRD.md. With an agent CLI configured in flow.yaml (the first one that is not
a 'script' agent, or --agent <name>), the agent writes it: flow gives it PRD.md, GUIDELINES.md and the names
of the files under designs/ and research/, and the exact plan shape; a spinner shows the time and what the
agent does (on a terminal). Without one, or with --offline, flow writes a skeleton from PRD.md alone: a phase
per requirement group, a section per requirement, and the success criteria as the checks of a last
checkpoint phase. Either way the result's shape is checked as 'flow generate' reads it, and what is off is
reported with plan.md line numbers (exit 1 when generate could not use it).
A plan.md that is not empty is replaced only with --force, and then kept as plan.md.bak.`,
  options: {
    agent: { type: "string", arg: "name", help: "the flow.yaml agent that writes the plan" },
    offline: { type: "boolean", help: "write the skeleton from PRD.md without an agent" },
    force: { type: "boolean", help: "replace a plan.md that is not empty (the old one is kept as plan.md.bak)" },
    json: { type: "boolean", help: "print the outcome as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  if (values.offline && values.agent !== undefined)
    throw usage("--agent and --offline exclude each other", "--agent <name> writes the plan with that agent; --offline writes the skeleton without one")
  const project = findProject(ctx)
  const files = planFiles(ctx, project.dir, Boolean(values.force))
  const choice = planningAgent(loadConfig(project.dir), { name: values.agent, offline: values.offline })
  if (choice.agent) requireInstalled(choice.agent, ctx.env.PATH, "run 'flow plan --offline' for a skeleton from PRD.md")
  const c = colours(ctx)
  const started = performance.now()
  const prdNotes = choice.agent ? [] : writeSkeleton(ctx, files, Boolean(values.json), c)
  if (choice.agent) await writeByAgent(ctx, project.dir, choice.agent, files, Boolean(values.json))
  return reportPlan(ctx, files, choice, { prdNotes, started, json: Boolean(values.json), c })
}

/** PRD.md and plan.md: their paths as shown, the PRD's text, and the plan's before flow writes it. */
type PlanFiles = { shown: (file: string) => string; prdFile: string; planFile: string; backupFile: string; prd: string; previous: string }

/** Reads PRD.md and plan.md; refuses a missing PRD, and a plan that is not empty without --force. */
function planFiles(ctx: Ctx, dir: string, force: boolean): PlanFiles {
  const shown = (file: string) => relative(ctx.cwd, file) || file
  const prdFile = join(dir, "PRD.md")
  const planFile = join(dir, "plan.md")
  if (!existsSync(prdFile))
    throw new FlowError(
      `${shown(prdFile)} does not exist: there is nothing to plan from`,
      Exit.failure,
      "write the requirements in PRD.md first ('flow create' makes a template)",
    )
  const previous = existsSync(planFile) ? readFileSync(planFile, "utf8") : ""
  if (previous.trim() !== "" && !force) {
    throw new FlowError(
      `${shown(planFile)} is not empty; it was left as it is`,
      Exit.failure,
      "run 'flow plan --force' to replace it (the old one is kept as plan.md.bak), or 'flow refine plan' to improve it",
    )
  }
  return { shown, prdFile, planFile, backupFile: `${planFile}.bak`, prd: readFileSync(prdFile, "utf8"), previous }
}

/** The plan being replaced, kept as plan.md.bak. */
function keepBackup(files: PlanFiles): void {
  if (files.previous.trim() !== "") copyFileSync(files.planFile, files.backupFile)
}

/** The offline skeleton from PRD.md, written; its notes about the PRD returned. A PRD with nothing to plan is refused. */
function writeSkeleton(ctx: Ctx, files: PlanFiles, json: boolean, c: Colours): PlanNote[] {
  const skeleton = planSkeleton(files.prd)
  if (skeleton.text === undefined) {
    // Nothing is written: a plan of placeholders would become tasks an agent "does".
    const refusal = skeleton.notes.find((n) => n.severity === "error")!
    if (!json) for (const n of skeleton.notes.filter((n) => n !== refusal)) ctx.stderr(formatNote(n, files.shown(files.prdFile), c))
    throw new FlowError(refusal.message.replace("PRD.md", files.shown(files.prdFile)), Exit.failure, refusal.hint)
  }
  keepBackup(files)
  writeFileAtomic(files.planFile, skeleton.text)
  return skeleton.notes
}

/** The planning agent writes plan.md; a cancel, a failure or no plan written is an error, the previous plan kept. */
async function writeByAgent(ctx: Ctx, dir: string, agent: AgentConfig, files: PlanFiles, json: boolean): Promise<void> {
  const { planFile, previous } = files
  keepBackup(files)
  const prompt = planPrompt({ guidelines: existsSync(join(dir, "GUIDELINES.md")), designs: filesUnder(dir, "designs"), research: filesUnder(dir, "research") })
  const abort = new AbortController()
  const stopListening = ctx.onInterrupt?.(() => abort.abort())
  const progress = json ? { event: () => {}, stop: () => {} } : await showProgress(ctx, `${agent.name} (${agent.cli}) is writing plan.md`)
  const stampBefore = fileStamp(planFile)
  let turn: Awaited<ReturnType<typeof runTurn>>
  try {
    turn = await runTurn({ agent, prompt, script: "", cwd: dir, env: { FLOW_PROJECT: dir }, signal: abort.signal, onEvent: progress.event })
  } finally {
    stopListening?.()
  }
  const written = existsSync(planFile) ? readFileSync(planFile, "utf8") : ""
  // An agent that stopped before writing anything leaves the previous plan in place, not an empty file.
  // One that wrote the same text again did its job (the file was written: its stamp changed).
  const asItWas = written.trim() === "" || (written === previous && fileStamp(planFile) === stampBefore)
  if (written.trim() === "" && previous.trim() !== "") writeFileAtomic(planFile, previous)
  if (abort.signal.aborted) {
    progress.stop("cancelled")
    throw new FlowError(`cancelled: ${agent.name} was stopped`, Exit.cancelled, asItWas ? "plan.md is as it was" : "plan.md holds what the agent wrote so far")
  }
  if (turn.code !== 0 || asItWas) {
    progress.stop(`${agent.name} failed`)
    const why = turn.code !== 0 ? `${agent.name} (${agent.cli}) failed with exit ${turn.code}` : `${agent.name} (${agent.cli}) finished without writing plan.md`
    throw new FlowError(
      `${why}${turn.tail ? `; its last output:\n${indent(turn.tail)}` : ""}`,
      Exit.failure,
      `plan.md ${asItWas ? "is as it was" : "holds what the agent wrote"}; try again, or run 'flow plan --offline' for a skeleton from PRD.md`,
    )
  }
  progress.stop(`${agent.name} wrote plan.md`, turn.seconds)
}

/** The shape check (what `flow generate` would say about the plan), printed or as JSON; exit 1 when generate could not use it. */
function reportPlan(ctx: Ctx, files: PlanFiles, choice: AgentChoice, o: { prdNotes: PlanNote[]; started: number; json: boolean; c: Colours }): number {
  const { shown, prdFile, planFile, backupFile, previous } = files
  const planText = readFileSync(planFile, "utf8")
  const parsed = parsePlan(planText)
  const planNotes = planToTasks(parsed).notes
  const failed = planNotes.some((n) => n.severity === "error")
  const report: PlanReport = {
    file: planFile,
    written_by: choice.agent ? choice.agent.name : "offline",
    reason: choice.reason,
    phases: parsed.phases.length,
    sections: parsed.sections.length,
    backup: previous.trim() !== "" ? backupFile : null,
    seconds: Math.round(performance.now() - o.started) / 1000,
    notes: [...o.prdNotes.map((n) => ({ ...n, file: "PRD.md" as const })), ...planNotes.map((n) => ({ ...n, file: "plan.md" as const }))],
  }
  if (o.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return failed ? Exit.failure : Exit.ok
  }
  for (const n of o.prdNotes) ctx.stderr(formatNote(n, shown(prdFile), o.c))
  for (const n of planNotes) ctx.stderr(formatNote(n, shown(planFile), o.c))
  const how = choice.agent ? `by ${choice.agent.name} (${choice.agent.cli})` : `offline, a skeleton from PRD.md's requirements (${choice.reason})`
  ctx.stdout(`Wrote ${shown(planFile)} ${how}: ${plural(report.phases, "phase")}, ${plural(report.sections, "section")}\n`)
  if (report.backup) ctx.stdout(`The previous plan is in ${shown(report.backup)}\n`)
  if (failed)
    throw new FlowError(
      `${shown(planFile)} is not in the shape 'flow generate' reads`,
      Exit.failure,
      "fix it at the lines above (or run 'flow refine plan'), then 'flow generate'",
    )
  ctx.stdout(
    choice.agent
      ? "Next: review it ('flow refine plan'), then 'flow generate'\n"
      : "Next: name the files and components of each section ('flow refine plan' helps), then 'flow generate'\n",
  )
  return Exit.ok
}

/** The file's identity and modification time to the nanosecond: any write changes it, even of the same bytes. */
function fileStamp(file: string): string | undefined {
  const s = statSync(file, { bigint: true, throwIfNoEntry: false })
  return s ? `${s.ino}:${s.mtimeNs}:${s.ctimeNs}` : undefined
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n")
}
