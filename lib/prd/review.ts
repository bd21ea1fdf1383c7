// `flow refine`'s offline review of PRD.md (the plan's is in lib/plan/review-plan.ts), and what both reviews share:
// findings, each with a suggested fix as a change of lines that the person accepts, edits or skips. Pure: the
// command asks and writes.
import { inFormOf } from "../store/line-ending"
import { childrenOf, listItems, writtenLines, type Outline, type OutlineHeading } from "../markdown/markdown-outline"
import { splitLines } from "../markdown/markdown-blocks"
import { FLOW_SECTIONS, headingName, readPrd, REQUIREMENT_KINDS, SECTION_OF, sectionsOf, type FlowSection, type PrdDoc, type PrdHeading } from "./prd-sections"

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
    | "chained-phase"
    | "all-to-all-phase"
    | "files-overlap"
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

const GUIDANCE: Record<FlowSection, string> = {
  Overview: "One short paragraph: what this is, who it is for, and why it matters now.",
  "Problem Statement": "The problem users have today, with evidence; not the solution.",
  Requirements: "Functional and non-functional requirements.",
  "Functional Requirements": "FR-1: ... each specific, measurable and independent.",
  "Non-Functional Requirements": "NFR-1: ... performance, security, reliability targets, each with a number.",
  "Technical Constraints": "Must use, cannot use, integration points.",
  "Success Criteria": "- [ ] a checklist a reviewer can tick",
  "Out of Scope": "What this work will not do, each with the reason.",
  "Open Questions": "Each question with an owner; the answer under it when decided.",
}
const GROUPS: readonly FlowSection[] = ["Functional Requirements", "Non-Functional Requirements"]

/** The heading PRD.md has for each of flow's recommended sections, as `flow refine` reports it. */
export type SectionMatch = { section: FlowSection; heading: string; line: number }

/** Which heading of the PRD is taken for each of flow's sections (the first of its kinds), in flow's order. */
export function prdSectionMatches(text: string): SectionMatch[] {
  return sectionMatches(readPrd(text)).map(({ section, heading }) => ({ section, heading: heading.title, line: heading.line }))
}

/** Whether a match is a heading under another name than flow's ("Non-Goals" for Out of Scope): worth saying. */
export function renamed(match: SectionMatch): boolean {
  const plain = (t: string) =>
    headingName(t)
      .toLowerCase()
      .replace(/[^a-z]+/g, " ")
      .trim()
  return plain(match.heading) !== plain(match.section)
}

function sectionMatches(prd: PrdDoc): { section: FlowSection; heading: PrdHeading }[] {
  const out: { section: FlowSection; heading: PrdHeading }[] = []
  for (const section of FLOW_SECTIONS) {
    const heading =
      section === "Requirements"
        ? // Requirements is there when any requirement section is ("## Core Features" or "## User Stories").
          (sectionsOf(prd, "requirements")[0] ?? prd.headings.find((h) => h.top && h.kind !== undefined && REQUIREMENT_KINDS.has(h.kind)))
        : prd.headings.find((h) => h.top && h.kind !== undefined && SECTION_OF[h.kind] === section)
    if (heading) out.push({ section, heading })
  }
  return out
}

const ANSWERED = /\b(?:answer(?:ed)?|decided|decision|resolved|resolution)\b\s*[:=-]|(?:^|\s)(?:A:|→|=>)/i
const NUMBER = /\d/
// "- Priority: high" under a requirement is about the requirement, not one more of them.
const METADATA = /^(?:\*\*|__)?(?:priority|dependencies|depends on|requires|owner|status|verification|source|rationale|risk|notes?|files?)(?:\*\*|__)?\s*:/i
const TARGET_PLACEHOLDER = "(target: <number and unit>)"
const ANSWER_PLACEHOLDER = "<who decides, by when>"

/** Findings for the text of PRD.md, in line order (missing sections last). */
export function reviewPrd(text: string): ReviewFinding[] {
  const lines = splitLines(text)
  const prd = readPrd(text)
  const found = new Map(sectionMatches(prd).map((m) => [m.section, m.heading]))
  return sortFindings([
    ...sectionFindings(prd, found, lines),
    ...measureFindings(prd, lines),
    ...criteriaFindings(found.get("Success Criteria")),
    ...questionFindings(found.get("Open Questions"), lines),
  ])
}

type Found = Map<FlowSection, PrdHeading>

/** flow's recommended sections the PRD lacks (each with the heading to add) or has empty. */
function sectionFindings(prd: PrdDoc, found: Found, lines: string[]): ReviewFinding[] {
  const doc = prd.doc
  const out: ReviewFinding[] = []
  // The generic "## Requirements" heading, where missing requirement groups go.
  const requirements = sectionsOf(prd, "requirements").find((h) => h.level === prd.chapter) ?? sectionsOf(prd, "requirements")[0]
  const seen = new Set<PrdHeading>()
  for (const section of FLOW_SECTIONS) {
    const heading = found.get(section)
    const group = GROUPS.includes(section)
    if (!heading) {
      if (group && !found.has("Requirements")) continue // reported with Requirements
      const level = group && requirements ? requirements.level + 1 : prd.chapter
      const at = group && requirements ? endOf(doc, requirements, lines.length) : lines.length
      const hashes = "#".repeat(level)
      // A missing Requirements section comes with its two groups, which are reported with it.
      const groups = section === "Requirements" ? GROUPS.flatMap((g) => ["", `${"#".repeat(level + 1)} ${g}`, `<!-- ${GUIDANCE[g]} -->`]) : []
      // Inserted before a heading, the new section needs a blank line of its own below it.
      const after = at < lines.length ? [""] : []
      out.push({
        rule: "missing-section",
        message: `the recommended section '${section}' is missing`,
        suggestion: `add '${hashes} ${section}'`,
        change: { at, remove: 0, lines: ["", `${hashes} ${section}`, `<!-- ${GUIDANCE[section]} -->`, ...groups, ...after] },
        edit: {
          question: `What goes under '${section}'?`,
          change: (t) => ({ at, remove: 0, lines: ["", `${hashes} ${section}`, ...t.split("\n"), ...groups, ...after] }),
        },
      })
      continue
    }
    // One heading taken for two sections ("## Core Features" for Requirements and Functional) is looked at once.
    if (seen.has(heading)) continue
    seen.add(heading)
    const content = writtenLines([heading, ...childrenOf(doc, heading)].flatMap((h) => h.lines))
    // An empty parent with sub-sections is reported through them.
    const hasSubsections = childrenOf(doc, heading).length > 0
    if (content.length === 0 && !hasSubsections) {
      const at = heading.line // after the heading line
      out.push({
        rule: "empty-section",
        line: heading.line,
        message: `'${heading.title}' is empty`,
        suggestion: `write it: ${GUIDANCE[section]}`,
        edit: { question: `What goes under '${heading.title}'? (${GUIDANCE[section]})`, change: (t) => ({ at, remove: 0, lines: t.split("\n") }) },
      })
    }
  }
  return out
}

/** Requirement list items without a number a test could check. */
function measureFindings(prd: PrdDoc, lines: string[]): ReviewFinding[] {
  const doc = prd.doc
  const out: ReviewFinding[] = []
  // Measurable numbers are asked of requirement lists ("FR-1: ..."), not of features and stories, which describe.
  const measured = sectionsOf(prd, "requirements", "functional", "non-functional")
  const checked = new Set(measured.flatMap((h) => [h, ...childrenOf(doc, h)]))
  for (const h of checked) {
    for (const item of listItems(h.lines)) {
      if (METADATA.test(item.text)) continue
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
  return out
}

/** Success criteria that are not checklist items. */
function criteriaFindings(criteria: PrdHeading | undefined): ReviewFinding[] {
  const out: ReviewFinding[] = []
  if (criteria) {
    for (const l of writtenLines(criteria.lines)) {
      // A table of metrics is a fine way to write them; its rows are no list items to tick.
      if (/^\s*\|/.test(l.text)) continue
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
  return out
}

/** Open questions without an answer (or with flow's placeholder still in place of one). */
function questionFindings(questions: PrdHeading | undefined, lines: string[]): ReviewFinding[] {
  const out: ReviewFinding[] = []
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
  return out
}

/** The text with the changes applied, in its own line ending and byte order mark; changes are independent and refer to the original line numbers. */
export function applyChanges(text: string, changes: readonly Change[]): string {
  const lines = splitLines(text)
  const ordered = changes.map((c, i) => ({ c, i })).sort((a, b) => b.c.at - a.c.at || b.i - a.i)
  for (const { c } of ordered) lines.splice(c.at, c.remove, ...c.lines)
  return inFormOf(text, `${lines.join("\n")}\n`)
}

/** Findings in line order (those without a line last), equal lines in the order they were found. */
export function sortFindings(findings: ReviewFinding[]): ReviewFinding[] {
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

/** A text cut to 60 characters for a message. */
export function short(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}
