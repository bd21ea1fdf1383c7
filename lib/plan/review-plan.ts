// `flow refine plan`'s offline review of plan.md: its shape as generate reads it, sections without work items,
// work items naming no file, and the graph's shape (lib/graph/parallelism.ts): phases that cannot run side by
// side, and sections that may run at once over the same files. Pure: the command asks and writes.
import { planToTasks } from "./generate"
import { listItems, writtenLines } from "../markdown/markdown-outline"
import { readBody } from "./plan-body"
import { labelOpensList, readLabel } from "../markdown/plan-labels"
import { parsePlan, type ParsedPlan, type PlanLine } from "./plan-parse"
import { short, sortFindings, type ReviewFinding } from "../prd/review"
import { splitLines } from "../markdown/markdown-blocks"
import { filesOverlaps, phaseShapes } from "../graph/parallelism"
import type { Task } from "../model/task-index"

/** Findings for the text of plan.md: its shape as generate reads it, empty sections, items naming no file. */
export function reviewPlan(text: string): ReviewFinding[] {
  const lines = splitLines(text)
  const parsed = parsePlan(text)
  const generated = planToTasks(parsed)
  // generate's "no work items" note is the review's own section-without-items finding, which can be edited.
  const notes = generated.notes.filter((n) => !n.message.endsWith("has no work items: its instructions are its title"))
  const out: ReviewFinding[] = notes.map((n) => ({
    rule: "plan-shape",
    line: n.line,
    message: n.message,
    suggestion: n.hint ?? "edit plan.md at that line",
  }))
  for (const section of parsed.sections) {
    const name = `${section.number ?? ""} ${section.title}`.trim()
    const bodies = [section.body, ...section.children.map((c) => c.body)]
    if (section.children.length === 0 && workLines(section.body).length === 0) {
      const at = section.line
      out.push({
        rule: "section-without-items",
        line: section.line,
        message: `section ${name} has no work items`,
        suggestion: "list the work as bullets, each naming the files or components it touches",
        edit: {
          question: `The work of ${name} (one item per line):`,
          change: (t) => ({ at, remove: 0, lines: t.split("\n").map((l) => `- ${l.replace(/^[-*+]\s+/, "")}`) }),
        },
      })
    }
    // A section with a 'Files:' line has named where its work goes.
    const files = readBody(section.body, name).files
    for (const body of files && files.files.length > 0 ? [] : bodies) {
      for (const item of listItems(workLines(body))) {
        if (namesAThing(item.text)) continue
        const at = item.line - 1
        const source = lines[at]
        out.push({
          rule: "item-without-file",
          line: item.line,
          message: `the work item '${short(item.text)}' in ${name} names no file or component`,
          suggestion: "name the file or component it touches, so the agent knows where to work",
          edit: {
            question: "Which file or component does it touch?",
            change: (t) => ({ at, remove: 1, lines: [`${source.trimEnd()} (${t.includes("`") ? t : `\`${t}\``})`] }),
          },
        })
      }
    }
  }
  // The graph's shape, read only from a plan generate takes: a cycle or an unknown reference would make it up.
  if (!generated.notes.some((n) => n.severity === "error")) out.push(...graphFindings(parsed, generated, generated.lines))
  return sortFindings(out)
}

/**
 * What keeps the plan's tasks from running side by side: a phase whose sections are all chained, one where each
 * section depends on the same several sections (one gate would do), and sections that may run at once (they
 * share a level) and name the same files in `Files:` (their merges are likely to conflict).
 */
function graphFindings(
  parsed: ParsedPlan,
  { tasks, sections }: { tasks: readonly Task[]; sections: readonly Task[] },
  lines: ReadonlyMap<string, number>,
): ReviewFinding[] {
  const out: ReviewFinding[] = []
  const phaseLine = (n: number) => parsed.phases.find((p) => p.n === n)?.line ?? lines.get(sections.find((t) => t.phase === n)!.id)
  // A phase's sections as plan.md has them, side by side: a join holds them as its subtasks.
  for (const shape of phaseShapes(sections)) {
    if (shape.shape === "chained")
      out.push({
        rule: "chained-phase",
        line: phaseLine(shape.phase),
        message: `the ${shape.tasks.length} sections of phase ${shape.phase} are all chained: only one of them can run at a time`,
        suggestion: "keep 'Depends on' for what a section really needs; sections that touch other files can run side by side",
      })
    else
      out.push({
        rule: "all-to-all-phase",
        line: phaseLine(shape.phase),
        message: `each of the ${shape.tasks.length} sections of phase ${shape.phase} depends on the same ${shape.on.length} sections (${shape.on.join(", ")}): ${shape.tasks.length * shape.on.length} edges where one gate would do`,
        suggestion: "end the earlier phase with a '(checkpoint)' section and let the sections depend on it, or name only what each section needs",
      })
  }
  for (const o of filesOverlaps(tasks))
    out.push({
      rule: "files-overlap",
      line: lines.get(o.b),
      message: `'${o.b}' and '${o.a}' may run at the same time and both touch ${o.files.map((f) => `'${f}'`).join(", ")}: their merges are likely to conflict`,
      suggestion: "make one depend on the other, or split the files so that each section has its own",
    })
  return out
}

/** Does a work item name a file, a path, a code identifier or a component? */
export function namesAThing(text: string): boolean {
  return (
    /`[^`]+`/.test(text) ||
    /\S\/\S/.test(text) ||
    /\b[\w-]+\.[a-z][a-z0-9]{0,4}\b/i.test(text.replace(/\b(?:e\.g|i\.e|etc)\./gi, "")) ||
    /\b[A-Z][a-z0-9]+[A-Z]\w*/.test(text) ||
    /\w\(\)/.test(text)
  )
}

/** A section's lines without its labelled blocks (Acceptance, Depends on): what remains is its work. */
function workLines(body: readonly PlanLine[]): PlanLine[] {
  const out: PlanLine[] = []
  let inLabel = false
  for (const l of body) {
    const label = readLabel(l.text)
    if (label) {
      inLabel = labelOpensList(label)
      continue
    }
    if (inLabel && (l.text.trim() === "" || /^\s*(?:[-*+]|\d+[.)])\s/.test(l.text))) continue
    inLabel = false
    out.push(l)
  }
  return writtenLines(out)
}
