// `flow plan` without an agent: a plan.md skeleton made only of what PRD.md says (docs/PLANNING.md, "The offline
// skeleton"). A phase per group of features, a section per feature (its own text as the work, the files it
// names as `Files:`, the features it depends on as `Depends on:`), and the success criteria as the checks of a
// last checkpoint. It invents nothing, and a PRD with no requirement it can read gives no plan at all: a
// placeholder section would be a task an agent "does".
import { listItems } from "../markdown/markdown-outline"
import { looksLikeLabel, readLabel } from "../markdown/plan-labels"
import type { PlanNote } from "./plan-parse"
import { trackBlocks } from "../markdown/markdown-blocks"
import { prdFeatures, storiesBeside, workRoots, type Feature, type FeatureGroup } from "../prd/prd-features"
import { prdChildren, readPrd, sectionsOf, type PrdDoc } from "../prd/prd-sections"

/** The skeleton's text, or none when the PRD holds no requirement to plan (the notes say why). */
export type Skeleton = { text?: string; notes: PlanNote[]; phases: number; sections: number }

/** The skeleton plan.md for a PRD's text; `notes` name what the PRD lacks (with PRD.md lines). */
export function planSkeleton(prdText: string): Skeleton {
  const prd = readPrd(prdText)
  const notes: PlanNote[] = []
  const groups = mergeWholeGroups(prdFeatures(prd, notes))
  if (groups.length === 0) {
    notes.push({
      severity: "error",
      message: "PRD.md has no requirement flow can read: no plan was written",
      hint: "write each feature as a heading under '## Requirements' or '## Core Features' with its work as a list under it (or each requirement as an item such as '- FR-1: ...'), then run 'flow plan' again",
    })
    return { notes, phases: 0, sections: 0 }
  }
  const numbers = new Map<Feature, string>()
  for (const [p, g] of groups.entries()) for (const [i, f] of g.features.entries()) numbers.set(f, `${p + 1}.${i + 1}`)
  const byName = new Map<string, Feature>()
  for (const f of numbers.keys()) for (const name of f.names) if (!byName.has(name)) byName.set(name, f)

  const out = [
    "# Implementation Plan",
    "",
    "<!-- Drafted offline by 'flow plan' from PRD.md: a phase per group of features, a section per feature with the PRD's own text, 'Depends on' from what the PRD says ('none' where it says nothing) and 'Files' from the files it names. Name the files and components of each section, split or merge sections, then run 'flow generate'. -->",
  ]
  groups.forEach((group, p) => {
    out.push("", `## Phase ${p + 1}: ${group.title}`)
    for (const feature of group.features) {
      const { deps, resolved } = resolveDeps(feature, byName, numbers, notes)
      out.push("", `### ${numbers.get(feature)} ${feature.title}`, `Depends on: ${deps.length > 0 ? deps.join(", ") : "none"}`)
      if (feature.files.length > 0) out.push(`Files: ${feature.files.map((f) => `\`${f}\``).join(", ")}`)
      if (feature.work.length === 0) {
        notes.push({
          severity: "warning",
          line: feature.line,
          message: `'${feature.title}' has no text under it: its section's work is its title`,
          hint: "write what the feature does under its heading",
        })
        out.push(`- ${feature.title}`)
      } else {
        const work: string[] = []
        const blocks = trackBlocks()
        for (const line of feature.work) {
          if (blocks.line(line)) work.push(line)
          else if (resolved.has(line)) continue
          else if (line !== "" || (work.length > 0 && work.at(-1) !== "")) work.push(defuse(line))
        }
        out.push(...work)
      }
    }
  })
  const phases = groups.length + 1
  out.push("", `## Phase ${phases}: Acceptance`, "", `### ${phases}.1 Check the success criteria (checkpoint)`)
  out.push("- A person checks every success criterion of PRD.md against the running product")
  const stories = storiesBeside(prd, workRoots(prd))
  if (stories) out.push(`- A person walks through the user stories of PRD.md (line ${stories.line}) in the running product`)
  out.push("", "Done when:")
  const criteria = successCriteria(prd, notes)
  if (criteria.length > 0) out.push(...criteria.map((c) => defuse(`- ${c}`)))
  else out.push("- every requirement above is met (PRD.md lists no success criteria)")
  const sections = groups.reduce((n, g) => n + g.features.length, 0) + 1
  return { text: `${out.join("\n")}\n`, notes, phases, sections }
}

/**
 * Runs of groups that are each one feature (a "Performance Requirements" list) share one phase: three phases of
 * one section each say less than one phase of three.
 */
function mergeWholeGroups(groups: FeatureGroup[]): FeatureGroup[] {
  const out: FeatureGroup[] = []
  for (const g of groups) {
    const last = out.at(-1)
    if (g.whole && last?.whole) {
      last.features.push(...g.features)
      last.title = "Requirements"
    } else out.push({ ...g, features: [...g.features] })
  }
  return out
}

/** The section numbers a feature depends on; the dependency lines that named only features are left out of its text. */
function resolveDeps(
  feature: Feature,
  byName: ReadonlyMap<string, Feature>,
  numbers: ReadonlyMap<Feature, string>,
  notes: PlanNote[],
): { deps: string[]; resolved: Set<string> } {
  const found: string[] = []
  const resolved = new Set<string>()
  for (const dep of feature.dependsOn) {
    let all = dep.refs.length > 0
    for (const ref of dep.refs) {
      const target = lookUp(ref, byName)
      if (target && target !== feature) {
        const n = numbers.get(target)!
        if (!found.includes(n)) found.push(n)
      } else all = false
    }
    if (all && dep.text !== undefined) resolved.add(dep.text)
    if (!all)
      notes.push({
        severity: "warning",
        line: dep.line,
        message: `'${feature.title}' depends on '${dep.refs.join(", ")}', which names no feature of PRD.md: the plan does not wait for it`,
        hint: "name the feature by its number, label or title ('Depends on: Feature 2', 'Dependencies: REQ-004')",
      })
  }
  return { deps: found, resolved }
}

/** A feature by what the PRD calls it: "Feature 1 (Workspaces)" by "feature 1", else by "workspaces". */
function lookUp(ref: string, byName: ReadonlyMap<string, Feature>): Feature | undefined {
  const plain = (t: string) => t.toLowerCase().replace(/\s+/g, " ").trim()
  const remark = ref.match(/\(([^)]*)\)/)?.[1]
  const bare = plain(ref.replace(/\([^)]*\)/g, ""))
  return byName.get(bare) ?? byName.get(bare.replace(/[-_ ]/g, "")) ?? (remark ? byName.get(plain(remark)) : undefined)
}

/** The success criteria: every list item of the success sections, prefixed with the sub-heading it is under ("Must Have: ..."). */
function successCriteria(prd: PrdDoc, notes: PlanNote[]): string[] {
  const sections = sectionsOf(prd, "success")
  if (sections.length === 0) {
    notes.push({
      severity: "warning",
      message: "PRD.md has no 'Success Criteria' section (nor Success Metrics or Acceptance Criteria): the last phase checks the requirements instead",
      hint: "add '## Success Criteria' as a checklist ('- [ ] ...')",
    })
    return []
  }
  const out: string[] = []
  for (const section of sections) {
    out.push(...listItems(section.lines).map((i) => i.text))
    for (const sub of prdChildren(prd, section)) out.push(...listItems(sub.lines).map((i) => `${sub.name}: ${i.text}`))
  }
  if (out.length === 0)
    notes.push({
      severity: "warning",
      line: sections[0].line,
      message: "PRD.md lists no success criteria",
      hint: "write them as a checklist: '- [ ] all FR items pass their acceptance tests'",
    })
  return out
}

/**
 * A PRD line as plan text that generate reads as text: a requirement such as "Depends on: the billing API"
 * would otherwise be read as a label naming sections, and the skeleton must always be a plan generate takes.
 * An acceptance label at the start of a line stays one: it is the section's `Done when:`.
 */
function defuse(line: string): string {
  const label = readLabel(line)
  if (label?.kind === "acceptance" && /^\S/.test(line) && !/^(?:[-*+]|\d+[.)])\s/.test(line)) return line
  if (!label && !looksLikeLabel(line)) return line
  return line.replace(/^\s*(?:(?:[-*+]|\d+[.)])\s+)?/, (lead) => `${lead}From PRD.md: `)
}
