// A Markdown file as a flat list of ATX headings, each with its own lines up to the next heading, and the
// list items of a block of lines. A `#` inside a code block or an HTML comment is not a heading. Used to read PRD.md
// (flow plan's skeleton, flow refine's review) and plan.md (the review).
import { splitLines, trackBlocks, type PlanLine } from "./markdown-blocks"

export type OutlineHeading = {
  level: number
  title: string
  line: number
  /** the lines after the heading up to the next heading of any level */
  lines: PlanLine[]
}

export type Outline = {
  /** lines before the first heading */
  preamble: PlanLine[]
  headings: OutlineHeading[]
}

const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/

/** The headings of `text` in order, each with its own lines. */
export function outline(text: string): Outline {
  const out: Outline = { preamble: [], headings: [] }
  const blocks = trackBlocks()
  splitLines(text).forEach((raw, i) => {
    const line = { n: i + 1, text: raw }
    const target = out.headings.at(-1)?.lines ?? out.preamble
    const h = blocks.line(raw) ? null : raw.match(HEADING)
    if (h) out.headings.push({ level: h[1].length, title: (h[2] ?? "").trim(), line: line.n, lines: [] })
    else target.push(line)
  })
  return out
}

/** The headings nested under `parent` (deeper levels, up to the next heading of its level or higher). */
export function childrenOf(doc: Outline, parent: OutlineHeading): OutlineHeading[] {
  const start = doc.headings.indexOf(parent)
  const out: OutlineHeading[] = []
  for (const h of doc.headings.slice(start + 1)) {
    if (h.level <= parent.level) break
    out.push(h)
  }
  return out
}

/** The first heading of `level` whose title matches. */
export function findHeading(doc: Outline, level: number, pattern: RegExp): OutlineHeading | undefined {
  return doc.headings.find((h) => h.level === level && pattern.test(h.title))
}

export type ListItem = {
  line: number
  /** the item's text, without its bullet, number or checkbox; wrapped lines joined */
  text: string
  checkbox?: "open" | "done"
  /** a numbered item (`1.`, `2)`) rather than a bullet */
  ordered: boolean
  /** deeper lines under the item (nested lists, paragraphs), dedented to the item's content */
  nested: string[]
  /** the column where the item's text starts: nested lines are dedented to it */
  column: number
  /** the number of the item's last line (nested lines included) */
  end: number
}

const ITEM = /^(\s*)([-*+]|\d+[.)])\s+(?:\[([ xX])\]\s+)?(.*)$/

/** The top-level list items of a block of lines; HTML comments and text outside lists are skipped. */
export function listItems(lines: readonly PlanLine[]): ListItem[] {
  const items: ListItem[] = []
  let base: number | undefined
  const blocks = trackBlocks()
  for (const { n, text } of lines) {
    const block = blocks.line(text)
    if (block === "comment") continue
    // A code block is not a list, even when it holds lines starting with '-' (YAML, diffs).
    if (block === "code") {
      const last = items.at(-1)
      if (last) {
        last.nested.push(text.slice(Math.min(text.length - text.trimStart().length, last.column)))
        last.end = n
      }
      continue
    }
    const m = text.match(ITEM)
    const indent = text.length - text.trimStart().length
    if (m && (base === undefined || indent <= base)) {
      base = indent
      items.push({
        line: n,
        text: m[4].trim(),
        checkbox: m[3] === undefined ? undefined : m[3] === " " ? "open" : "done",
        ordered: /\d/.test(m[2]),
        nested: [],
        column: indent + m[2].length + 1,
        end: n,
      })
      continue
    }
    const last = items.at(-1)
    if (!last || text.trim() === "") continue
    if (indent > (base ?? 0)) {
      if (m || last.nested.length > 0) last.nested.push(text.slice(Math.min(indent, last.column)))
      else last.text += ` ${text.trim()}`
      last.end = n
    } else base = undefined // a paragraph ends the list
  }
  return items
}

/** Non-blank lines that are not HTML comments: the text a person actually wrote. */
export function writtenLines(lines: readonly PlanLine[]): PlanLine[] {
  const blocks = trackBlocks()
  return lines.filter(({ text }) => blocks.line(text) !== "comment" && text.trim() !== "")
}
