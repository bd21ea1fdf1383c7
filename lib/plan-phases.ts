// Phase titles from the project's plan.md: SPEC section 1 gives its level-2 headings as
// `## Phase <n>: <phase title>` (generate's parser also reads `Phase 2 - API`, `Milestone 2. API`, `2. API`).
// list and show use them for group headers; a missing plan.md, or a phase with no such heading, simply has
// no title.
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { parsePlan } from "./plan-parse"

/** Phase number → title, from `<projectDir>/plan.md`; empty when the file is missing or unreadable. */
export function readPhaseTitles(projectDir: string): Map<number, string> {
  let text: string
  try {
    text = readFileSync(join(projectDir, "plan.md"), "utf8")
  } catch {
    return new Map()
  }
  return parsePhaseTitles(text)
}

/**
 * The first titled heading of each phase number wins. The headings are read by `flow generate`'s parser
 * (lib/plan-parse.ts), so a phase generate understands (`## Milestone 2. Billing`) has its title here too.
 */
export function parsePhaseTitles(text: string): Map<number, string> {
  const titles = new Map<number, string>()
  for (const phase of parsePlan(text).phases) if (phase.title && !titles.has(phase.n)) titles.set(phase.n, phase.title)
  return titles
}

/** The group header of list: `Phase <n>: <title>`, or `Phase <n>` when plan.md has no title for it. */
export function phaseHeader(phase: number, titles: Map<number, string>): string {
  const title = titles.get(phase)
  return title ? `Phase ${phase}: ${title}` : `Phase ${phase}`
}
