// One finding shape for validate's text and --json output and for the errors other commands raise.
import { createColors } from "picocolors"
import type { Colours } from "../terminal/colour"
import type { Finding } from "../model/json-shapes"
export type { Finding }

export type Path = (string | number)[]
export type Position = { line: number; column: number }

/**
 * What makes findings repeats of one another: the same kind in the same scope (a task's label, or none for the
 * whole file). Repeats become one finding with a count (collapse), so a flood of equal findings prints once.
 */
export type Group = { kind: string; scope?: string /** what tells repeats apart (a missing id): the first few are named */; item?: string }

/** A finding before its position in the file is known. */
export type RawFinding = Omit<Finding, "line" | "column"> & { path: Path; atKey?: boolean; group?: Group }

/**
 * Keeps the first finding of each group, in order, with `count` (how many it stands for) and the message saying
 * how many more there were; findings without a group are kept as they are. Linear in the number of findings.
 */
export function collapse<T extends Omit<Finding, "line" | "column"> & { group?: Group }>(findings: readonly T[]): Omit<T, "group">[] {
  const first = new Map<string, { at: number; count: number; scope?: string; items: string[] }>()
  const out: Omit<T, "group">[] = []
  for (const { group, ...f } of findings) {
    const key = group && `${group.kind}\0${group.scope ?? ""}`
    const seen = key === undefined ? undefined : first.get(key)
    if (seen) {
      seen.count++
      if (group?.item !== undefined && seen.items.length < 3) seen.items.push(group.item)
    } else {
      if (key !== undefined) first.set(key, { at: out.length, count: 1, scope: group?.scope, items: [] })
      out.push(f)
    }
  }
  for (const { at, count, scope, items } of first.values()) {
    if (count === 1) continue
    const named = items.length > 0 ? `: ${items.map((i) => `'${i}'`).join(", ")}${count - 1 > items.length ? ", ..." : ""}` : ""
    const more = `${(count - 1).toLocaleString("en")} more like it${scope ? ` in ${scope}` : ""}${named}`
    out[at] = { ...out[at], message: `${out[at].message} (and ${more})`, count }
  }
  return out
}

/** Text lines of one finding: the spec's `ERROR: <message>`, then where (with the source line), then how to fix it. */
export function formatFinding(f: Finding, file: string, text?: string, c: Colours = createColors(false)): string {
  const label = f.severity === "error" ? c.red(c.bold("ERROR")) : c.yellow(c.bold("WARNING"))
  const head = `${label}: ${f.message}\n`
  const position = f.line ? { line: f.line, column: f.column ?? 1 } : undefined
  const at = position ? `  at ${file}:${position.line}:${position.column}\n${text ? excerpt(text, position) : ""}` : ""
  const hint = f.hint ? `  ${c.dim("hint:")} ${f.hint}\n` : ""
  return head + at + hint
}

/** `2 errors, 1 warning`. */
export function summarize(findings: readonly Finding[]): string {
  const errors = findings.filter((f) => f.severity === "error").length
  const warnings = findings.length - errors
  return `${plural(errors, "error")}, ${plural(warnings, "warning")}`
}

/** "a, b and c" */
export function listed(names: readonly string[]): string {
  return names.length <= 1 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`
}

/** An excerpt shows at most this many characters of its line: a 358 KB line quoted per finding printed 29 GB. */
export const EXCERPT_WIDTH = 120

/** The source line and a caret under `column`, for error messages; a long line is cut to a window around the column. */
export function excerpt(text: string, position: Position): string {
  const start = lineStart(text, position.line)
  if (start < 0) return ""
  let end = text.indexOf("\n", start)
  if (end < 0) end = text.length
  if (end > start && text.charCodeAt(end - 1) === 13) end--
  const at = Math.max(0, position.column - 1)
  let from = start
  let to = end
  if (end - start > EXCERPT_WIDTH) {
    // The column sits a third of the way in, so the text before it (usually the key) shows too.
    from = Math.max(start, Math.min(start + at - Math.floor(EXCERPT_WIDTH / 3), end - EXCERPT_WIDTH))
    to = Math.min(end, from + EXCERPT_WIDTH)
    // Never cut a surrogate pair in half.
    if (isLowSurrogate(text.charCodeAt(from))) from++
    if (to < end && isLowSurrogate(text.charCodeAt(to))) to--
  }
  const before = from > start ? "…" : ""
  const source = `${before}${text.slice(from, to).replace(/\t/g, " ")}${to < end ? "…" : ""}`
  const gutter = String(position.line)
  return `  ${gutter} | ${source}\n  ${" ".repeat(gutter.length)} | ${" ".repeat(before.length + Math.max(0, start + at - from))}^\n`
}

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff

/** Line starts of the last text asked about: validate formats every finding against one text, each lookup O(1). */
let lines: { text: string; starts: number[] } | undefined

function lineStart(text: string, line: number): number {
  if (lines?.text !== text) {
    const starts = [0]
    for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1)
    lines = { text, starts }
  }
  return line >= 1 && line <= lines.starts.length ? lines.starts[line - 1] : -1
}
