// Notes about plan.md and PRD.md, printed as compilers print them: `plan.md:12: warning: ...` and a hint.
import { createColors } from "picocolors"
import type { Colours } from "../terminal/colour"
import type { PlanNote } from "./plan-parse"

/** One note as text lines; `file` is the name shown before the line number. */
export function formatNote(note: PlanNote, file: string, c: Colours = createColors(false)): string {
  const label = note.severity === "error" ? c.red(c.bold("error")) : c.yellow(c.bold("warning"))
  return `${file}${note.line ? `:${note.line}` : ""}: ${label}: ${note.message}\n${note.hint ? `  ${c.dim("hint:")} ${note.hint}\n` : ""}`
}
