// Phase titles from the project's plan.md: SPEC section 1 gives its level-2 headings as
// `## Phase <n>: <phase title>` (generate's parser also reads `Phase 2 - API`, `Milestone 2. API`, `2. API`),
// and from tasks.yaml's optional `phases:` list. list, show and the view use them for group headers; a
// phase named in neither simply has no title.
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { parsePlan } from "./plan-parse"
import type { TaskFile } from "../model/task-index"

/**
 * Phase number → title: tasks.yaml's own `phases:` list (for a file written by hand), overlaid with
 * `<projectDir>/plan.md`'s headings, which win where both name a phase (plan.md is what `flow generate`
 * makes tasks.yaml from). A missing or unreadable plan.md leaves tasks.yaml's titles.
 */
export function readPhaseTitles(projectDir: string, file?: Pick<TaskFile, "phases">): Map<number, string> {
  const titles = new Map<number, string>()
  for (const p of file?.phases ?? []) if (p.title.trim() && !titles.has(p.number)) titles.set(p.number, p.title.trim())
  let text: string
  try {
    text = readFileSync(join(projectDir, "plan.md"), "utf8")
  } catch {
    return titles
  }
  for (const [n, title] of parsePhaseTitles(text)) titles.set(n, title)
  return titles
}

/**
 * The first titled heading of each phase number wins. The headings are read by `flow generate`'s parser
 * (lib/plan/plan-parse.ts), so a phase generate understands (`## Milestone 2. Billing`) has its title here too.
 */
export function parsePhaseTitles(text: string): Map<number, string> {
  const titles = new Map<number, string>()
  for (const phase of parsePlan(text).phases) if (phase.title && !titles.has(phase.n)) titles.set(phase.n, phase.title)
  return titles
}

/** The group header of list: `Phase <n>: <title>`, or `Phase <n>` when no title is known. */
export function phaseHeader(phase: number, titles: Map<number, string>): string {
  const title = titles.get(phase)
  return title ? `Phase ${phase}: ${title}` : `Phase ${phase}`
}
