// One finding shape for validate's text and --json output and for the errors other commands raise.
import { createColors } from "picocolors"
import type { Colours } from "../terminal/colour"
import type { Finding } from "../model/json-shapes"
export type { Finding }

export type Path = (string | number)[]
export type Position = { line: number; column: number }

/** A finding before its position in the file is known. */
export type RawFinding = Omit<Finding, "line" | "column"> & { path: Path; atKey?: boolean }

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

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`
}

/** The source line and a caret under `column`, for error messages. */
export function excerpt(text: string, position: Position): string {
  const start = nthLineStart(text, position.line)
  if (start < 0) return ""
  const end = text.indexOf("\n", start)
  const source = text
    .slice(start, end < 0 ? undefined : end)
    .replace(/\r$/, "")
    .replace(/\t/g, " ")
  const gutter = String(position.line)
  return `  ${gutter} | ${source}\n  ${" ".repeat(gutter.length)} | ${" ".repeat(Math.max(0, position.column - 1))}^\n`
}

function nthLineStart(text: string, line: number): number {
  let offset = 0
  for (let i = 1; i < line; i++) {
    offset = text.indexOf("\n", offset) + 1
    if (offset === 0) return -1
  }
  return offset
}
