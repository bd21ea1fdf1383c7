// `flow plan` without an agent: a plan.md skeleton made only of what PRD.md says. A phase per requirement
// group, a section per requirement (its text as the work item), and the success criteria as the checks of
// a last checkpoint phase. It invents nothing: the files and components are left for a person to name.
import { childrenOf, findHeading, listItems, outline, writtenLines, type ListItem, type Outline, type OutlineHeading } from "./markdown-outline"
import { looksLikeLabel, readLabel } from "./plan-labels"
import type { PlanNote } from "./plan-parse"

export type Skeleton = { text: string; notes: PlanNote[]; phases: number; sections: number }

const TITLE_WORDS = 16

/** The skeleton plan.md for a PRD's text; `notes` name what the PRD lacks (with PRD.md lines). */
export function planSkeleton(prd: string): Skeleton {
  const doc = outline(prd)
  const notes: PlanNote[] = []
  const groups = requirementGroups(doc, notes)
  const out = [
    "# Implementation Plan",
    "",
    "<!-- Drafted offline by 'flow plan' from PRD.md: a phase per requirement group, a section per requirement. Name the files and components of each section, split or merge sections, then run 'flow generate'. -->",
  ]
  let phase = 0
  let sections = 0
  for (const group of groups) {
    phase++
    out.push("", `## Phase ${phase}: ${group.title}`)
    if (group.items.length === 0) {
      sections++
      out.push(
        "",
        `### ${phase}.1 ${group.title}`,
        `- Write the ${group.title.toLowerCase()} in PRD.md (none are listed yet), then run 'flow plan --force' again`,
      )
      notes.push({
        severity: "warning",
        line: group.line,
        message: `PRD.md lists no items under '${group.title}': its phase has a placeholder section`,
        hint: "write each requirement as a list item under its heading",
      })
      continue
    }
    group.items.forEach((item, i) => {
      sections++
      out.push("", `### ${phase}.${i + 1} ${sectionTitle(item.text)}`, defuse(`- ${item.text}`), ...item.nested.map((l) => defuse(`  ${l}`)))
    })
  }
  const criteria = successCriteria(doc, notes)
  phase++
  sections++
  out.push(
    "",
    `## Phase ${phase}: Acceptance`,
    "",
    `### ${phase}.1 Check the success criteria (checkpoint)`,
    "- A person checks every success criterion of PRD.md against the running product",
    "",
    "Done when:",
  )
  if (criteria.length > 0) out.push(...criteria.map((c) => defuse(`- ${c.text}`)))
  else out.push("- every requirement above is met (PRD.md lists no success criteria)")
  return { text: `${out.join("\n")}\n`, notes, phases: phase, sections }
}

type Group = { title: string; line: number; items: ListItem[] }

/** The requirement groups: the sub-headings of `## Requirements`, or that heading alone, or any `## ... Requirements`. */
function requirementGroups(doc: Outline, notes: PlanNote[]): Group[] {
  const top = findHeading(doc, 2, /^requirements\b/i)
  if (top) {
    const subs = childrenOf(doc, top).filter((h) => h.level === top.level + 1)
    if (subs.length > 0) {
      // Items written under '## Requirements' before its first sub-heading are requirements too.
      const direct = listItems(top.lines)
      return [...(direct.length > 0 ? [{ title: top.title, line: top.line, items: direct }] : []), ...subs.map((h) => group(doc, h))]
    }
    return [group(doc, top)]
  }
  const loose = doc.headings.filter((h) => h.level === 2 && /requirements/i.test(h.title))
  if (loose.length > 0) return loose.map((h) => group(doc, h))
  notes.push({
    severity: "warning",
    message: "PRD.md has no 'Requirements' section: the plan has one placeholder phase",
    hint: "add '## Requirements' with '### Functional Requirements' and '### Non-Functional Requirements'",
  })
  return [{ title: "Requirements", line: 1, items: [] }]
}

function group(doc: Outline, heading: OutlineHeading): Group {
  // Items may sit in deeper sub-headings ("#### Export"); each heading's list counts.
  const children = childrenOf(doc, heading)
  let items = listItems([heading, ...children].flatMap((h) => h.lines))
  // Requirements written as headings ("#### FR-1: Export") with prose under them: a heading is an item.
  if (items.length === 0) {
    items = children.map((h) => ({
      line: h.line,
      text: h.title,
      nested: writtenLines(h.lines).map((l) => l.text.trim()),
      column: 0,
      end: h.lines.at(-1)?.n ?? h.line,
    }))
  }
  return { title: heading.title.replace(/\s*\(optional\)\s*$/i, ""), line: heading.line, items }
}

function successCriteria(doc: Outline, notes: PlanNote[]): ListItem[] {
  const heading = findHeading(doc, 2, /^success criteria\b/i)
  if (!heading) {
    notes.push({
      severity: "warning",
      message: "PRD.md has no 'Success Criteria' section: the last phase checks the requirements instead",
      hint: "add '## Success Criteria' as a checklist ('- [ ] ...')",
    })
    return []
  }
  const items = listItems([heading, ...childrenOf(doc, heading)].flatMap((h) => h.lines))
  if (items.length === 0)
    notes.push({
      severity: "warning",
      line: heading.line,
      message: "PRD.md lists no success criteria",
      hint: "write them as a checklist: '- [ ] all FR items pass their acceptance tests'",
    })
  return items
}

/**
 * A PRD line as plan text that generate reads as text: a requirement such as "Depends on: the billing API"
 * would otherwise be read as a label naming sections, and the skeleton must always be a plan generate takes.
 */
function defuse(line: string): string {
  if (!readLabel(line) && !looksLikeLabel(line)) return line
  return line.replace(/^\s*(?:(?:[-*+]|\d+[.)])\s+)?/, (lead) => `${lead}From PRD.md: `)
}

/** `FR-1: a user can export a report as CSV within 2 s; ...` → `A user can export a report as CSV within 2 s`. */
function sectionTitle(text: string): string {
  const plain = text
    .replace(/^\s*(?:\*\*|__)?[A-Z]{1,5}-?\d+(?:\.\d+)*(?:\*\*|__)?\s*[:.)\-–—]\s*/, "")
    .replace(/\*\*|__/g, "")
    .split(/(?<=[.;:!?])\s|\s[–—]\s/)[0]
    .replace(/[.;:!?]$/, "")
    .trim()
  const words = plain.split(/\s+/)
  const title = words.length > TITLE_WORDS ? words.slice(0, TITLE_WORDS).join(" ") : plain
  return title.charAt(0).toUpperCase() + title.slice(1)
}
