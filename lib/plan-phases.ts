// Phase titles from the project's plan.md: SPEC section 1 gives its level-2 headings as
// `## Phase <n>: <phase title>`. list and show use them for group headers; a missing plan.md, or a phase
// with no such heading, simply has no title.
import { readFileSync } from "node:fs"
import { join } from "node:path"

// `## Phase 2: API layer`; also `Phase 2 - API`, `Phase 2. API` and `Phase 2 — API`, which generated plans
// sometimes write, and an optional closing `##`. A heading without a title (`## Phase 2`) gives no title.
const HEADING = /^##[ \t]+phase[ \t]+(\d+(?:\.\d+)?)(?:[ \t]*[:.\-–—][ \t]*|[ \t]+|$)(.*?)[ \t]*#*[ \t]*$/i
const FENCE = /^[ \t]{0,3}(```|~~~)/

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

/** The first titled heading of each phase number wins; headings inside fenced code blocks are not headings. */
export function parsePhaseTitles(text: string): Map<number, string> {
  const titles = new Map<number, string>()
  let fence: string | undefined
  for (const line of text.split(/\r?\n/)) {
    const f = FENCE.exec(line)
    if (f) {
      if (fence === undefined) fence = f[1]
      else if (f[1] === fence) fence = undefined
      continue
    }
    if (fence !== undefined || !line.startsWith("##")) continue
    const m = HEADING.exec(line)
    if (!m) continue
    const n = Number(m[1])
    const title = m[2].trim()
    if (title && !titles.has(n)) titles.set(n, title)
  }
  return titles
}

/** The group header of list: `Phase <n>: <title>`, or `Phase <n>` when plan.md has no title for it. */
export function phaseHeader(phase: number, titles: Map<number, string>): string {
  const title = titles.get(phase)
  return title ? `Phase ${phase}: ${title}` : `Phase ${phase}`
}
