import { copyFileSync, existsSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { writeFileAtomic } from "../lib/store/atomic-write"
import { parse } from "../lib/cli/args"
import { colours, type Colours } from "../lib/terminal/colour"
import { loadConfig } from "../lib/config/config"
import type { Ctx } from "../lib/cli/context"
import { Exit, FlowError, usage } from "../lib/cli/errors"
import { plural } from "../lib/validation/findings"
import type { RefineReport } from "../lib/model/json-shapes"
import { filesUnder, refinePrompt } from "../lib/plan/plan-prompt"
import { interactiveArgv, planningAgent, requireInstalled, type AgentChoice } from "../lib/plan/planning-agent"
import { runAttached } from "../lib/cli/proc"
import { findProject } from "../lib/cli/project"
import { applyChanges, prdSectionMatches, renamed, reviewPrd, type Change, type ReviewFinding, type SectionMatch } from "../lib/prd/review"
import { reviewPlan } from "../lib/plan/review-plan"

export const meta = {
  usage: "flow refine [prd|plan] [--apply] [--agent <name>] [--no-agent] [--json]",
  description: `Improves PRD.md or plan.md (by default plan.md once it is not empty, else PRD.md). First an offline
review: for the PRD, missing recommended sections (headings people commonly write are taken for them:
Non-Goals for Out of Scope, Success Metrics for Success Criteria, Core Features or User Stories for the
requirements; the review says which it took), empty ones, requirements without a measurable number, success
criteria that are not a checklist, open questions without an answer; for the plan, its shape as 'flow
generate' reads it, sections without work items, work items that name no file or component, phases whose
sections are all chained or each depend on the same several sections, and sections that may run at once
and name the same files.
On a terminal each finding is shown with its suggested fix, to accept, edit or skip; the accepted changes are
written back and the previous file is kept as <file>.bak. Then, with an agent CLI in flow.yaml, the
terminal is handed to that agent's own interactive session with a prompt to ask clarifying questions and
suggest improvements. Without a terminal the review is printed (or --json) and the exit code is 0;
--apply applies every suggested change without asking (with --json: the applied findings).`,
  options: {
    agent: { type: "string", arg: "name", help: "the flow.yaml agent to hand the terminal to after the review" },
    "no-agent": { type: "boolean", help: "stop after the offline review" },
    apply: { type: "boolean", help: "apply every suggested change without asking (no terminal needed; a backup is kept)" },
    json: { type: "boolean", help: "print the review as JSON (never interactive)" },
  },
} as const

type Target = "PRD.md" | "plan.md"

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const which = positionals[0]
  if (which !== undefined && which !== "prd" && which !== "plan") throw usage(`refine what? '${which}' is neither prd nor plan`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  const review = reviewOf(ctx, project.dir, which)
  const choice = planningAgent(loadConfig(project.dir), { name: values.agent, offline: values["no-agent"], offlineFlag: "--no-agent" })
  // Only the terminal session hands over; checked before the first question so no answer is lost to it.
  const handsOver = ctx.interactive && !values.json && !values.apply
  if (handsOver && choice.agent && interactiveArgv(choice.agent, "", project.dir))
    requireInstalled(choice.agent, ctx.env.PATH, "add --no-agent to review without it")
  const c = colours(ctx)
  if (values.apply) return applyAll(ctx, review, Boolean(values.json))
  if (values.json) {
    ctx.stdout(`${JSON.stringify(reportOf(review.file, review.findings, review.sections), null, 2)}\n`)
    return Exit.ok
  }
  if (!ctx.interactive) return printReview(ctx, review, choice, c)
  // Interactive from here on: ctx.interactive means stdin and stdout are a terminal (a prompt would hang otherwise).
  const clack = await import("@clack/prompts")
  await askEach(clack, review, c)
  return handOver(ctx, clack, choice, review.target, project.dir)
}

/** The file reviewed and its offline review: the findings, and for the PRD the headings taken for flow's sections. */
type Review = {
  target: Target
  file: string
  shown: string
  text: string
  findings: ReviewFinding[]
  sections?: SectionMatch[]
  /** "PRD.md:12: took 'Non-Goals' for Out of Scope", for each heading taken under another name, in line order */
  took: string[]
}

/** The file to refine (`which`, else plan.md once it is not empty, else PRD.md), read and reviewed. */
function reviewOf(ctx: Ctx, dir: string, which: string | undefined): Review {
  const planFile = join(dir, "plan.md")
  const target: Target =
    which === "prd" ? "PRD.md" : which === "plan" ? "plan.md" : existsSync(planFile) && readFileSync(planFile, "utf8").trim() !== "" ? "plan.md" : "PRD.md"
  const file = join(dir, target)
  const shown = relative(ctx.cwd, file) || file
  if (!existsSync(file)) {
    throw new FlowError(
      `${shown} does not exist`,
      Exit.failure,
      target === "PRD.md" ? "run 'flow create <name>' for a project with a PRD template" : "run 'flow plan' to write it from PRD.md",
    )
  }
  const text = readFileSync(file, "utf8")
  const findings = target === "PRD.md" ? reviewPrd(text) : reviewPlan(text)
  // What the review took each of flow's sections to be, said where a heading has another name.
  const sections = target === "PRD.md" ? prdSectionMatches(text) : undefined
  const took = (sections ?? [])
    .filter(renamed)
    .sort((a, b) => a.line - b.line)
    .map((m) => `${shown}:${m.line}: took '${m.heading}' for ${m.section}`)
  return { target, file, shown, text, findings, sections, took }
}

/** --apply, the flag that does the prompts' job without a terminal: every suggested change, none of the edits. */
function applyAll(ctx: Ctx, { file, shown, text, findings, sections }: Review, json: boolean): number {
  const changes = findings.filter((f) => f.change)
  if (changes.length > 0) {
    copyFileSync(file, `${file}.bak`)
    writeFileAtomic(
      file,
      applyChanges(
        text,
        changes.map((f) => f.change!),
      ),
    )
  }
  if (json) {
    ctx.stdout(`${JSON.stringify(reportOf(file, changes, sections), null, 2)}\n`)
    return Exit.ok
  }
  for (const f of changes) ctx.stdout(`applied: ${shown}${f.line ? `:${f.line}` : ""}: ${f.suggestion}\n`)
  const left = findings.length - changes.length
  ctx.stdout(
    changes.length > 0
      ? `Wrote ${shown}: ${plural(changes.length, "change")}; the previous version is in ${shown}.bak${left > 0 ? `; ${plural(left, "finding")} need${left === 1 ? "s" : ""} a person ('flow refine' in a terminal)` : ""}\n`
      : `${shown} is unchanged: no finding has a suggested change\n`,
  )
  return Exit.ok
}

/** The review printed, without a terminal to ask on. */
function printReview(ctx: Ctx, { target, shown, text, findings, took }: Review, choice: AgentChoice, c: Colours): number {
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  for (const t of took) ctx.stdout(`${t}\n`)
  ctx.stdout(`${shown}: ${findings.length === 0 ? "no findings" : plural(findings.length, "finding")}\n`)
  for (const f of findings) ctx.stdout(`\n${describe(f, shown, lines, c)}`)
  ctx.stdout(
    `\nRun 'flow refine ${target === "PRD.md" ? "prd" : "plan"}' in a terminal to accept, edit or skip each finding${choice.agent ? `, then talk it over with ${choice.agent.name} (${choice.agent.cli})` : ""}.\n`,
  )
  return Exit.ok
}

/** Each finding asked on the terminal (accept, edit, skip, stop); the accepted changes written, a backup kept. */
async function askEach(clack: typeof import("@clack/prompts"), { file, shown, text, findings, took }: Review, c: Colours): Promise<void> {
  clack.intro(`flow refine ${shown}`)
  if (took.length > 0) clack.log.info(took.join("\n"))
  const accepted: Change[] = []
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  if (findings.length === 0) clack.log.success("The offline review found nothing to change.")
  for (const [i, f] of findings.entries()) {
    clack.log.step(`${i + 1}/${findings.length} ${shown}${f.line ? `:${f.line}` : ""}: ${f.message}\n${describeChange(f, lines, c)}`.trimEnd())
    const options = [
      ...(f.change ? [{ value: "accept" as const, label: "Accept", hint: f.suggestion }] : []),
      ...(f.edit ? [{ value: "edit" as const, label: "Edit", hint: f.change ? "write your own fix" : f.suggestion }] : []),
      { value: "skip" as const, label: "Skip" },
      { value: "stop" as const, label: "Stop here", hint: "keep what was accepted, skip the rest" },
    ]
    const answer = await clack.select({ message: "This finding:", options })
    if (clack.isCancel(answer)) throw cancelled(clack, shown)
    if (answer === "stop") break
    if (answer === "accept") accepted.push(f.change!)
    if (answer === "edit") {
      const typed = await clack.text({
        message: f.edit!.question,
        initialValue: f.edit!.initial,
        validate: (v) => (v?.trim() ? undefined : "write something, or press Esc to stop"),
      })
      if (clack.isCancel(typed)) throw cancelled(clack, shown)
      accepted.push(f.edit!.change(typed.trim()))
    }
  }
  if (accepted.length > 0) {
    copyFileSync(file, `${file}.bak`)
    writeFileAtomic(file, applyChanges(text, accepted))
    clack.log.success(`Wrote ${shown}: ${plural(accepted.length, "change")}; the previous version is in ${shown}.bak`)
  } else if (findings.length > 0) clack.log.info(`${shown} is unchanged`)
}

async function handOver(ctx: Ctx, clack: typeof import("@clack/prompts"), choice: AgentChoice, target: Target, dir: string): Promise<number> {
  if (!choice.agent) {
    clack.outro(`No agent to talk it over with (${choice.reason}); add one to flow.yaml for an AI session`)
    return Exit.ok
  }
  const prompt = refinePrompt(target, {
    guidelines: existsSync(join(dir, "GUIDELINES.md")),
    designs: filesUnder(dir, "designs"),
    research: filesUnder(dir, "research"),
  })
  const argv = interactiveArgv(choice.agent, prompt, dir)
  if (!argv) {
    clack.outro(`${choice.agent.cli} is not started interactively by flow: start it yourself and paste the prompt below`)
    ctx.stdout(`${prompt}`)
    return Exit.ok
  }
  clack.outro(`Handing the terminal to ${choice.agent.name} (${choice.agent.cli}); leave its session to come back`)
  // The agent owns the terminal now: Ctrl-C is its to handle, and must not end flow underneath it.
  const stopIgnoring = ctx.onInterrupt?.(() => {})
  try {
    const code = await runAttached(argv, { cwd: dir, env: { FLOW_PROJECT: dir } })
    if (code !== 0) ctx.stderr(`${choice.agent.name} (${choice.agent.cli}) ended with exit ${code}\n`)
  } finally {
    stopIgnoring?.()
  }
  return Exit.ok
}

function reportOf(file: string, findings: readonly ReviewFinding[], sections: SectionMatch[] | undefined): RefineReport {
  return {
    file,
    ...(sections ? { sections } : {}),
    findings: findings.map((f) => ({
      rule: f.rule,
      line: f.line ?? null,
      message: f.message,
      suggestion: f.suggestion,
      change: f.change ? { line: f.change.at + 1, remove: f.change.remove, insert: f.change.lines } : null,
    })),
  }
}

function cancelled(clack: typeof import("@clack/prompts"), shown: string): FlowError {
  clack.cancel("Stopped")
  return new FlowError(`refine cancelled: ${shown} was left as it was`, Exit.cancelled)
}

/** One finding for the printed review: where, what, the fix in words, and the change as -/+ lines. */
function describe(f: ReviewFinding, shown: string, lines: readonly string[], c: Colours): string {
  return `${shown}${f.line ? `:${f.line}` : ""}: ${f.message}\n  ${c.dim("fix:")} ${f.suggestion}\n${describeChange(f, lines, c)}`
}

function describeChange(f: ReviewFinding, lines: readonly string[], c: Colours): string {
  if (!f.change) return ""
  const removed = lines.slice(f.change.at, f.change.at + f.change.remove).map((l) => `  ${c.red(`- ${l}`)}\n`)
  const added = f.change.lines.map((l) => `  ${c.green(`+ ${l}`)}\n`)
  return [...removed, ...added].join("")
}
