// `flow refine`'s offline review of PRD.md and plan.md: findings, each with a suggested fix as a change of
// lines that the person accepts, edits or skips. Pure: the command asks and writes.
import { inFormOf } from "../store/line-ending"
import { planToTasks } from "./generate"
import { childrenOf, listItems, outline, writtenLines, type Outline, type OutlineHeading } from "./markdown-outline"
import { splitLines } from "./markdown-blocks"
import { labelOpensList, readLabel } from "./plan-labels"
import { parsePlan, type PlanLine } from "./plan-parse"

/** A change of lines: `remove` lines from index `at` (0-based) are replaced by `lines`. */
export type Change = { at: number; remove: number; lines: string[] }

export type ReviewFinding = {
  rule:
    | "missing-section"
    | "empty-section"
    | "unmeasurable-requirement"
    | "criteria-not-checklist"
    | "unanswered-question"
    | "section-without-items"
    | "item-without-file"
    | "plan-shape"
  line?: number
  message: string
  /** the fix, in words */
  suggestion: string
  /** the suggested change; absent when only the person can write the fix (they may still edit) */
  change?: Change
  /**
   * how a person's own text becomes the change (the "edit" choice); absent when there is nothing to write.
   * `initial` is what the field starts with: the current text of the line it replaces, without its list mark.
   */
  edit?: { question: string; initial?: string; change: (text: string) => Change }
}

const PRD_SECTIONS: { title: string; guidance: string; parent?: string }[] = [
  { title: "Overview", guidance: "One short paragraph: what this is, who it is for, and why it matters now." },
  { title: "Problem Statement", guidance: "The problem users have today, with evidence; not the solution." },
  { title: "Requirements", guidance: "Functional and non-functional requirements." },
  { title: "Functional Requirements", guidance: "FR-1: ... each specific, measurable and independent.", parent: "Requirements" },
  { title: "Non-Functional Requirements", guidance: "NFR-1: ... performance, security, reliability targets, each with a number.", parent: "Requirements" },
  { title: "Technical Constraints", guidance: "Must use, cannot use, integration points." },
  { title: "Success Criteria", guidance: "- [ ] a checklist a reviewer can tick" },
  { title: "Out of Scope", guidance: "What this work will not do, each with the reason." },
  { title: "Open Questions", guidance: "Each question with an owner; the answer under it when decided." },
]

const ANSWERED = /\b(?:answer(?:ed)?|decided|decision|resolved|resolution)\b\s*[:=-]|(?:^|\s)(?:A:|→|=>)/i
const NUMBER = /\d/
const TARGET_PLACEHOLDER = "(target: <number and unit>)"
const ANSWER_PLACEHOLDER = "<who decides, by when>"

/** Findings for the text of PRD.md, in line order (missing sections last). */
export function reviewPrd(text: string): ReviewFinding[] {
  const lines = splitLines(text)
  const doc = outline(text)
  const out: ReviewFinding[] = []
  const find = (title: string, level: number) => doc.headings.find((h) => h.level === level && normal(h.title).startsWith(normal(title)))
  const requirements = find("Requirements", 2)
  for (const section of PRD_SECTIONS) {
    const level = section.parent ? 3 : 2
    const heading = find(section.title, level) ?? (section.parent ? undefined : find(section.title, 3))
    if (!heading) {
      if (section.parent && !requirements) continue // reported with its parent
      const at = section.parent ? endOf(doc, requirements!, lines.length) : lines.length
      const hashes = "#".repeat(level)
      // A missing Requirements section comes with its two groups, which are reported with it.
      const groups =
        section.title === "Requirements"
          ? PRD_SECTIONS.filter((g) => g.parent === "Requirements").flatMap((g) => ["", `### ${g.title}`, `<!-- ${g.guidance} -->`])
          : []
      // Inserted before a heading, the new section needs a blank line of its own below it.
      const after = at < lines.length ? [""] : []
      out.push({
        rule: "missing-section",
        message: `the recommended section '${section.title}' is missing`,
        suggestion: `add '${hashes} ${section.title}'`,
        change: { at, remove: 0, lines: ["", `${hashes} ${section.title}`, `<!-- ${section.guidance} -->`, ...groups, ...after] },
        edit: {
          question: `What goes under '${section.title}'?`,
          change: (t) => ({ at, remove: 0, lines: ["", `${hashes} ${section.title}`, ...t.split("\n"), ...groups, ...after] }),
        },
      })
      continue
    }
    const content = writtenLines([heading, ...childrenOf(doc, heading)].flatMap((h) => h.lines))
    // An empty parent with sub-sections is reported through them.
    const hasSubsections = childrenOf(doc, heading).length > 0
    if (content.length === 0 && !hasSubsections) {
      const at = heading.line // after the heading line
      out.push({
        rule: "empty-section",
        line: heading.line,
        message: `'${heading.title}' is empty`,
        suggestion: `write it: ${section.guidance}`,
        edit: { question: `What goes under '${heading.title}'? (${section.guidance})`, change: (t) => ({ at, remove: 0, lines: t.split("\n") }) },
      })
    }
  }
  if (requirements) {
    const groups = childrenOf(doc, requirements)
    for (const h of [requirements, ...groups]) {
      for (const item of listItems(h.lines)) {
        if (NUMBER.test(item.text.replace(/^\W*[A-Z]{1,5}-?\d+(?:\.\d+)*\W*/, ""))) continue
        const source = lines[item.line - 1]
        const at = item.line - 1
        // A placeholder flow added before is still a finding, but adding another one would fix nothing.
        const flagged = source.includes(TARGET_PLACEHOLDER)
        out.push({
          rule: "unmeasurable-requirement",
          line: item.line,
          message: `the requirement '${short(item.text)}' has no measurable number`,
          suggestion: flagged
            ? `replace '${TARGET_PLACEHOLDER}' with the number`
            : "add a target with a number (a time, a size, a count, a rate) that a test can check",
          ...(flagged ? {} : { change: { at, remove: 1, lines: [`${source.trimEnd()} ${TARGET_PLACEHOLDER}`] } }),
          edit: {
            question: "The requirement, with a number:",
            initial: item.text,
            // The line keeps its own list mark: one typed as well ("- FR-3: ...") is not doubled.
            change: (t) => ({ at, remove: 1, lines: [`${bulletOf(source)}${withoutMark(t)}`] }),
          },
        })
      }
    }
  }
  const criteria = find("Success Criteria", 2)
  if (criteria) {
    for (const l of writtenLines(criteria.lines)) {
      const item = l.text.match(/^(\s*)(?:[-*+]|\d+[.)])\s+(\[[ xX]\]\s+)?(.*)$/)
      if (item?.[2]) continue
      const at = l.n - 1
      const body = item ? item[3] : l.text.trim()
      out.push({
        rule: "criteria-not-checklist",
        line: l.n,
        message: `the success criterion '${short(body)}' is not a checklist item`,
        suggestion: "write it as '- [ ] ...' so a reviewer can tick it",
        change: { at, remove: 1, lines: [`${item ? item[1] : ""}- [ ] ${body}`] },
        edit: {
          question: "The criterion, as a checkable statement:",
          initial: body,
          change: (t) => ({ at, remove: 1, lines: [`${item ? item[1] : ""}- [ ] ${withoutMark(t)}`] }),
        },
      })
    }
  }
  const questions = find("Open Questions", 2)
  if (questions) {
    for (const item of listItems(questions.lines)) {
      const indent = " ".repeat(item.column)
      const placeholder = lines.slice(item.line, item.end).findIndex((l) => l.includes(ANSWER_PLACEHOLDER))
      if (placeholder >= 0) {
        const at = item.line + placeholder
        out.push({
          rule: "unanswered-question",
          line: at + 1,
          message: `the open question '${short(item.text)}' has no answer yet`,
          suggestion: `replace '${ANSWER_PLACEHOLDER}' with the answer`,
          edit: { question: `Answer to '${short(item.text)}':`, change: (t) => ({ at, remove: 1, lines: [`${indent}- Answer: ${withoutAnswer(t)}`] }) },
        })
        continue
      }
      if (ANSWERED.test(item.text) || item.nested.some((n) => ANSWERED.test(n))) continue
      const at = item.end // after the item and its nested lines
      out.push({
        rule: "unanswered-question",
        line: item.line,
        message: `the open question '${short(item.text)}' has no answer`,
        suggestion: "answer it (or name who decides, and by when) under the question",
        change: { at, remove: 0, lines: [`${indent}- Answer: ${ANSWER_PLACEHOLDER}`] },
        edit: { question: `Answer to '${short(item.text)}':`, change: (t) => ({ at, remove: 0, lines: [`${indent}- Answer: ${withoutAnswer(t)}`] }) },
      })
    }
  }
  return sortFindings(out)
}

/** Findings for the text of plan.md: its shape as generate reads it, empty sections, items naming no file. */
export function reviewPlan(text: string): ReviewFinding[] {
  const lines = splitLines(text)
  const parsed = parsePlan(text)
  // generate's "no work items" note is the review's own section-without-items finding, which can be edited.
  const notes = planToTasks(parsed).notes.filter((n) => !n.message.endsWith("has no work items: its instructions are its title"))
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
    for (const body of bodies) {
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
  return sortFindings(out)
}

/** The text with the changes applied, in its own line ending and byte order mark; changes are independent and refer to the original line numbers. */
export function applyChanges(text: string, changes: readonly Change[]): string {
  const lines = splitLines(text)
  const ordered = changes.map((c, i) => ({ c, i })).sort((a, b) => b.c.at - a.c.at || b.i - a.i)
  for (const { c } of ordered) lines.splice(c.at, c.remove, ...c.lines)
  return inFormOf(text, `${lines.join("\n")}\n`)
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

function sortFindings(findings: ReviewFinding[]): ReviewFinding[] {
  return findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => (a.f.line ?? Infinity) - (b.f.line ?? Infinity) || a.i - b.i)
    .map(({ f }) => f)
}

/** The index of the line after `heading`'s whole section (its children included). */
function endOf(doc: Outline, heading: OutlineHeading, total: number): number {
  const next = doc.headings.slice(doc.headings.indexOf(heading) + 1).find((h) => h.level <= heading.level)
  return next ? next.line - 1 : total
}

/** Typed text without a list mark and checkbox in front: the line being replaced supplies its own. */
function withoutMark(text: string): string {
  return text.replace(/^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?/, "")
}

/** Typed text without the `- Answer:` that flow writes in front of it. */
function withoutAnswer(text: string): string {
  return withoutMark(text).replace(/^answer\s*:\s*/i, "")
}

function bulletOf(line: string): string {
  return line.match(/^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?/)?.[0] ?? "- "
}

function normal(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z]+/g, " ")
    .trim()
}

function short(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}
