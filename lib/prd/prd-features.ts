// The features of a PRD, as `flow plan`'s skeleton makes sections of them (docs/PLANNING.md, "The offline
// skeleton"): a feature is a heading under the PRD's requirements (a "### 3. Search" under Core Features), or a
// labelled item of a requirement list ("FR-1: ...", "1. ...", "As a cook, I want ..."); a group of
// requirements written as plain bullets is one feature with the bullets as its work. Each feature comes with the
// text it owns, the files it names and the other features it says it depends on. Pure: no IO.
import { listItems, writtenLines, type ListItem } from "../markdown/markdown-outline"
import { trackBlocks, type PlanLine, type PlanNote } from "../markdown/markdown-blocks"
import { HEADING_DEPENDS, readLabel } from "../markdown/plan-labels"
import { prdChildren, REQUIREMENT_KINDS, sectionsOf, type PrdDoc, type PrdHeading } from "./prd-sections"

export type Feature = {
  title: string
  /** PRD.md line of its heading or item */
  line: number
  /** what other features call it, lowercased: its number ("3", "feature 3"), its label ("req-003"), its title */
  names: string[]
  /** its text as plan lines: the PRD's own text, sub-headings as bold lines */
  work: string[]
  /** files and folders it names in code spans */
  files: string[]
  /** what it says it depends on, as written ("Feature 1 (Workspaces)"), with the PRD line and the work line saying it */
  dependsOn: { refs: string[]; line: number; text?: string }[]
}

/** A group of features that becomes one phase; `whole` when the group is itself the one feature. */
export type FeatureGroup = { title: string; line: number; features: Feature[]; whole: boolean }

// "REQ-001", "FR-2", "US-10", "NFR-1.2", "**FR-1**": a requirement's label.
const LABEL = /^(?:\*\*|__)?([A-Z]{1,6}[-_ ]?\d+(?:\.\d+)*)(?:\*\*|__)?(?=\s*[:.)\-–—]|\s)\s*[:.)\-–—]?\s*/
// "3.1.2 ..." deeper than a chapter: an outline number of its own.
const OUTLINE_NUMBER = /^(?:(?:feature|section|epic|story)\s+)?(\d+(?:\.\d+)*)\.?(?:\s+|\s*[:)\-–—]\s*)/i
const STORY = /^(?:\*\*[^*]+\*\*\.?\s*)?as an?\s/i
// A line of PRD text that states a dependency: "Depends on: Feature 1", "- Dependencies: REQ-001", "Requires: ...",
// and in a German PRD "Abhängig von: 2.1", "Voraussetzung: REQ-001", "Baut auf: ...".
const DEPENDENCY =
  /^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:\*\*|__)?(?:depends\s+on|dependencies|dependency|requires|prerequisites?|blocked\s+by|builds\s+on|abh(?:ä|ae)ngig\s+von|abh(?:ä|ae)ngigkeit(?:en)?|voraussetzung(?:en)?|baut\s+auf)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.+?)\s*$/i

/** The groups of features of the PRD, in file order; `notes` get what could not be read. */
export function prdFeatures(prd: PrdDoc, notes: PlanNote[]): FeatureGroup[] {
  const groups: FeatureGroup[] = []
  for (const root of workRoots(prd)) collect(prd, root, groups, notes)
  return groups
}

/**
 * Where the work is: the requirement sections (features, functional and non-functional requirements, any
 * "... Requirements"); the user stories when no section lists features (otherwise they describe the same
 * features from the user's side); the goals when there is nothing else.
 */
export function workRoots(prd: PrdDoc): PrdHeading[] {
  const primary = sectionsOf(prd, "features", "functional", "non-functional", "requirements")
  const features = primary.some((h) => h.kind === "features" || h.kind === "functional")
  let roots = features ? primary : [...primary, ...sectionsOf(prd, "stories")]
  if (roots.length === 0) roots = sectionsOf(prd, "goals")
  roots.sort((a, b) => a.line - b.line)
  // A requirement section inside another ("### Functional Requirements" under "## Requirements") is read with it.
  const inside = new Set(roots.flatMap((r) => prdChildren(prd, r)))
  return roots.filter((r) => !inside.has(r))
}

/** The user stories the features were not made from: the checkpoint walks through them. */
export function storiesBeside(prd: PrdDoc, roots: readonly PrdHeading[]): PrdHeading | undefined {
  return sectionsOf(prd, "stories").find((s) => !roots.includes(s) && !roots.some((r) => prdChildren(prd, r).includes(s)))
}

function collect(prd: PrdDoc, heading: PrdHeading, out: FeatureGroup[], notes: PlanNote[]): void {
  const subs = directChildren(prd, heading)
  const items = listItems(heading.lines)
  const labelled = items.length > 0 && items.every(isRequirementItem)
  const group: FeatureGroup = { title: heading.name, line: heading.line, features: [], whole: false }
  if (labelled) group.features.push(...items.map((item) => itemFeature(item)))
  if (subs.length === 0) {
    if (labelled) out.push(group)
    else {
      const own = headingFeature(heading, [])
      if (own.work.length === 0) {
        notes.push({
          severity: "warning",
          line: heading.line,
          message: `PRD.md lists nothing under '${heading.name}': it gives no section`,
          hint: "write each requirement as a list item, or each feature as a heading with its work under it",
        })
        return
      }
      out.push({ ...group, features: [own], whole: true })
    }
    return
  }
  // Plain bullets above the sub-headings are one more feature, named after the heading.
  if (!labelled && writtenLines(heading.lines).some((l) => /^\s*(?:[-*+]|\d+[.)])\s/.test(l.text))) group.features.push(headingFeature(heading, []))
  out.push(group)
  for (const sub of subs) {
    if (isGroup(prd, sub)) collect(prd, sub, out, notes)
    else group.features.push(headingFeature(sub, prdChildren(prd, sub)))
  }
  if (group.features.length === 0) out.splice(out.indexOf(group), 1)
}

/** The headings one level below `heading` (the shallowest level among its children). */
function directChildren(prd: PrdDoc, heading: PrdHeading): PrdHeading[] {
  const all = prdChildren(prd, heading)
  const level = Math.min(...all.map((h) => h.level))
  return all.filter((h) => h.level === level)
}

/** A sub-heading that holds requirements of its own: named as a requirement group, or over numbered or labelled headings. */
function isGroup(prd: PrdDoc, heading: PrdHeading): boolean {
  if (heading.kind !== undefined && REQUIREMENT_KINDS.has(heading.kind)) return true
  const subs = prdChildren(prd, heading)
  return subs.length > 0 && directChildren(prd, heading).every((h) => LABEL.test(h.name) || /^\d+\.\d+/.test(h.title))
}

/** A list item that is a requirement of its own: labelled, numbered, or a user story. */
function isRequirementItem(item: ListItem): boolean {
  return item.ordered || LABEL.test(item.text) || STORY.test(item.text)
}

function itemFeature(item: ListItem): Feature {
  const label = item.text.match(LABEL)?.[1]
  const title = itemTitle(item.text)
  const feature: Feature = { title, line: item.line, names: names(title, label, undefined), work: [], files: [], dependsOn: [] }
  const nested = [...item.nested]
  // An acceptance list under the item ("- Acceptance criteria:" and its items) becomes the section's own.
  const at = nested.findIndex((l) => /^\S/.test(l) && readLabel(l)?.kind === "acceptance")
  let acceptance: string[] = []
  if (at >= 0) {
    const label = readLabel(nested[at])!
    let end = at + 1
    while (end < nested.length && (/^\s/.test(nested[end]) || nested[end].trim() === "")) end++
    acceptance = [...(label.rest ? [`- ${label.rest}`] : []), ...dedent(nested.slice(at + 1, end))]
    nested.splice(at, end - at)
  }
  const lines = [{ n: item.line, text: `- ${item.text}` }, ...nested.map((l) => ({ n: item.line, text: `  ${l}` }))]
  feature.work = ownText(lines, feature)
  if (acceptance.length > 0) feature.work.push("", "Done when:", ...acceptance)
  return feature
}

/**
 * A heading and the text under it (its own lines and its sub-headings', sub-headings as bold lines; an
 * acceptance sub-heading as a `Done when:` label). `subs` are the sub-headings that are part of it.
 */
function headingFeature(heading: PrdHeading, subs: readonly PrdHeading[]): Feature {
  let name = heading.name
  const dependsOn: Feature["dependsOn"] = []
  const inTitle = name.match(HEADING_DEPENDS)
  if (inTitle) {
    dependsOn.push({ refs: splitRefs(inTitle[2]), line: heading.line })
    name = `${name.slice(0, inTitle.index)} ${name.slice(inTitle.index! + inTitle[0].length)}`.trim()
  }
  const label = name.match(LABEL)?.[1]
  const title = label ? name.slice(name.match(LABEL)![0].length).trim() || label : name
  const number = heading.title.match(OUTLINE_NUMBER)?.[1]
  const feature: Feature = { title, line: heading.line, names: names(title, label, number), work: [], files: [], dependsOn }
  const lines: PlanLine[] = [...heading.lines]
  for (const sub of subs) {
    const acceptance = readLabel(sub.title)?.kind === "acceptance"
    lines.push({ n: sub.line, text: "" }, { n: sub.line, text: acceptance ? "Done when:" : `**${sub.name}**` }, ...sub.lines)
  }
  feature.work = ownText(lines, feature)
  // The label stays with the work, where a reader of the task can trace it back to the PRD.
  if (label && title !== label) feature.work.unshift(`${label}: ${title}`, ...(feature.work.length > 0 ? [""] : []))
  return feature
}

/**
 * The feature's lines as plan text: comments and blank runs dropped, dependency lines taken out (into
 * `dependsOn`), the files of its code spans noted. Other label-like lines are kept here and defused by the
 * skeleton's writer.
 */
function ownText(lines: readonly PlanLine[], feature: Feature): string[] {
  const out: string[] = []
  const blocks = trackBlocks()
  lines.forEach(({ n, text }) => {
    const block = blocks.line(text)
    if (block === "comment") return
    if (!block) {
      const dep = text.match(DEPENDENCY)
      if (dep) {
        // Kept in the text until the skeleton knows whether it names features.
        feature.dependsOn.push({ refs: splitRefs(dep[1]), line: n, text: text.trimEnd() })
        out.push(text.trimEnd())
        return
      }
      for (const span of text.matchAll(/`([^`\s]+)`/g)) if (isPath(span[1]) && !feature.files.includes(span[1])) feature.files.push(span[1])
    }
    if (text.trim() === "" && (out.length === 0 || out.at(-1)!.trim() === "")) return
    out.push(block ? text : text.trimEnd())
  })
  while (out.length > 0 && out.at(-1)!.trim() === "") out.pop()
  return out
}

/** Whether a code span names a file or folder: `src/a.ts`, `server/files/`, `relay.toml`; not `relay upgrade` or `?`. */
function isPath(span: string): boolean {
  if (/:\/\/|^[-$<]|[<>{}()=?*]/.test(span)) return false
  return /^[\w.-]+(?:\/[\w.-]+)*\/?$/.test(span) && (span.includes("/") || /^[\w-]+\.[a-z][a-z0-9]{0,4}$/i.test(span))
}

function splitRefs(text: string): string[] {
  // Separators inside a remark ("Feature 1 (Workspaces and members)") do not separate.
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === "(") depth++
    else if (c === ")") depth = Math.max(0, depth - 1)
    else if (depth === 0) {
      const sep = text.slice(i).match(/^(?:\s*[,;]\s*|\s+(?:and|&)\s+)/)
      if (sep) {
        parts.push(text.slice(start, i))
        i += sep[0].length - 1
        start = i + 1
      }
    }
  }
  parts.push(text.slice(start))
  return parts
    .map((r) =>
      r
        .replace(/[`*_]/g, "")
        .replace(/[.\s]+$/, "")
        .trim(),
    )
    .filter((r) => r !== "" && !/^(?:none|n\/a|-)$/i.test(r))
}

/** The names a feature can be referred to by, lowercased. */
function names(title: string, label: string | undefined, number: string | undefined): string[] {
  const out = [title.toLowerCase()]
  if (label) out.push(label.toLowerCase(), label.toLowerCase().replace(/[-_ ]/g, ""))
  if (number) out.push(number, `feature ${number}`, `section ${number}`, `story ${number}`)
  return out
}

/** `**Save a recipe.** As a cook, ...` → `Save a recipe`; `FR-1: a user can ...; ...` → `A user can ...`. */
export function itemTitle(text: string): string {
  const plain = text
    .replace(LABEL, "")
    .replace(/\*\*|__/g, "")
    .split(/(?<=[.;:!?])\s|\s[–—]\s/)[0]
    .replace(/[.;:!?]$/, "")
    .trim()
  const words = plain.split(/\s+/)
  const title = words.length > TITLE_WORDS ? words.slice(0, TITLE_WORDS).join(" ") : plain
  return title.charAt(0).toUpperCase() + title.slice(1)
}

const TITLE_WORDS = 16

function dedent(lines: readonly string[]): string[] {
  const indents = lines.filter((l) => l.trim() !== "").map((l) => l.length - l.trimStart().length)
  const cut = indents.length > 0 ? Math.min(...indents) : 0
  return lines.filter((l) => l.trim() !== "").map((l) => l.slice(cut))
}
