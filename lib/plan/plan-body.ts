// The text under one plan heading → a task's instructions, acceptance criteria and references. The work
// items are kept as written (bullets, numbered lists, nested lists, code blocks): an agent reads Markdown
// well, and rewording would lose detail. Only the labelled lines are taken out of the text.
import { trackBlocks } from "../markdown/markdown-blocks"
import { type Label, looksLikeLabel, readLabel } from "../markdown/plan-labels"
import type { PlanLine, PlanNote } from "./plan-parse"

/** A `Depends on:` or `Validated by:` line: what it names, and where. */
export type PlanRefs = { refs: string[]; line: number }

export type PlanBody = {
  /** Markdown, dedented; "" when the heading has no text */
  instructions: string
  acceptance: string[]
  dependsOn?: PlanRefs
  validatedBy?: PlanRefs
  /** from `Files:`: the files and folders the work touches, as written */
  files?: { files: string[]; line: number }
  notes: PlanNote[]
}

const LIST_ITEM = /^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*)$/
const NONE = /^(?:none|nothing|-|n\/a|no dependencies)\.?$/i

/** A body as it is read: after a label, the list items that follow belong to it until a line that is not one. */
type Reading = {
  body: PlanBody
  list?: { kind: "acceptance" | "depends" | "files"; indent: number; items: number }
  /** a bare 'Depends on:' and where it is, until a list item gives it references */
  bareDepends?: number
}

/** Reads a heading's lines; `where` names the heading in notes ("section 1.2"). */
export function readBody(lines: readonly PlanLine[], where: string): PlanBody {
  const r: Reading = { body: { instructions: "", acceptance: [], notes: [] } }
  const kept: PlanLine[] = []
  const blocks = trackBlocks()
  for (const line of lines) {
    const text = line.text
    if (blocks.line(text)) {
      r.list = undefined
      kept.push(line)
      continue
    }
    const label = readLabel(text)
    if (label) {
      takeLabel(r, label, line, where)
      continue
    }
    if (r.list && takeListLine(r, text)) continue
    if (looksLikeLabel(text)) {
      r.body.notes.push({
        severity: "warning",
        line: line.n,
        message: `${where}: '${text.trim()}' reads like a label but is not one: it stays in the instructions`,
        hint: "write 'Depends on: 1.2, 2.1' (section numbers or task ids), 'Validated by: 2.3' or 'Done when:' with the colon, or reword the line",
      })
    }
    kept.push(line)
  }
  if (r.bareDepends !== undefined && r.body.dependsOn?.refs.length === 0) {
    // Read as "none", an empty label would silently drop the default dependencies on the previous phase.
    r.body.dependsOn = undefined
    r.body.notes.push({
      severity: "warning",
      line: r.bareDepends,
      message: `'Depends on' in ${where} names nothing: the default dependencies are used`,
      hint: "list the section numbers after it ('Depends on: 1.2'), or write 'Depends on: none' for none",
    })
  }
  r.body.instructions = tidy(kept)
  return r.body
}

/** A labelled line: what follows the label on it, and the list it opens when nothing does. */
function takeLabel(r: Reading, { kind, rest }: Label, line: PlanLine, where: string): void {
  const body = r.body
  const indent = indentOf(line.text)
  if (kind === "depends") {
    if (body.dependsOn) body.notes.push({ severity: "warning", line: line.n, message: `${where} has a second 'Depends on' line; both are used` })
    const refs = splitRefs(rest)
    body.dependsOn = { refs: [...(body.dependsOn?.refs ?? []), ...refs], line: line.n }
    r.list = rest ? undefined : { kind: "depends", indent, items: 0 }
    r.bareDepends = rest ? undefined : line.n
  } else if (kind === "files") {
    body.files = { files: [...(body.files?.files ?? []), ...splitFiles(rest)], line: line.n }
    r.list = rest ? undefined : { kind: "files", indent, items: 0 }
  } else if (kind === "validated") {
    const refs = splitRefs(rest)
    if (refs.length !== 1) {
      body.notes.push({
        severity: "error",
        line: line.n,
        message: `'Validated by' in ${where} must name exactly one task (it names ${refs.length})`,
        hint: "write 'Validated by: <n>.<m>' with the section of the task that checks this one",
      })
    } else body.validatedBy = { refs, line: line.n }
    r.list = undefined
  } else {
    if (rest) body.acceptance.push(rest)
    r.list = { kind: "acceptance", indent, items: 0 }
  }
}

/** A line after a label's list began: true when it belongs to the list (an item, a blank, a wrapped criterion); else the list ends. */
function takeListLine(r: Reading, text: string): boolean {
  const list = r.list!
  const body = r.body
  if (text.trim() === "") return true
  const item = text.match(LIST_ITEM)
  if (item && item[1].length >= list.indent) {
    if (list.kind === "acceptance") body.acceptance.push(item[2].trim())
    else if (list.kind === "files") body.files!.files.push(...splitFiles(item[2]))
    else {
      body.dependsOn!.refs.push(...splitRefs(item[2]))
      r.bareDepends = undefined
    }
    list.items++
    return true
  }
  if (list.kind === "acceptance" && list.items > 0 && indentOf(text) > list.indent) {
    // A wrapped criterion: its continuation line joins it.
    body.acceptance[body.acceptance.length - 1] += ` ${text.trim()}`
    return true
  }
  r.list = undefined
  return false
}

/** `1.2, 2.1 and api-layer` → ["1.2", "2.1", "api-layer"]; `none` → []. */
function splitRefs(text: string): string[] {
  const cleaned = text.trim()
  if (cleaned === "" || NONE.test(cleaned)) return []
  return (
    cleaned
      .replace(/\([^)]*\)/g, "") // "1.2 (the schema)": a remark, not a reference
      .split(/\s*(?:,|;|\s+and\s+|\s+&\s+)\s*/)
      .map((r) =>
        r
          .replace(/[`*_]/g, "")
          .replace(/^(?:section|task|step)\s+/i, "")
          .replace(/^#/, "")
          .replace(/\.$/, "")
          .trim(),
      )
      // "1.2 Schema": the number is the reference, the title a reminder.
      .map((r) => r.match(/^(\d+\.\d+(?:\.\d+)?)\s/)?.[1] ?? r)
      .filter((r) => r !== "" && !NONE.test(r))
  )
}

/** "`src/a.ts`, lib/b/ (the store); docs/x.md" → ["src/a.ts", "lib/b/", "docs/x.md"]; "none" → []. */
function splitFiles(text: string): string[] {
  if (NONE.test(text.trim())) return []
  return (
    text
      .replace(/\([^)]*\)/g, "")
      .split(/\s*[,;]\s*/)
      // A glob keeps its stars: only quotes, code marks and emphasis around the whole entry go.
      .map((f) =>
        f
          .trim()
          .replace(/^(?:\*\*|__)(.*)(?:\*\*|__)$/, "$1")
          .replace(/[`"']/g, "")
          .replace(/[.]$/, "")
          .trim(),
      )
      .filter((f) => f !== "" && !NONE.test(f))
  )
}

function indentOf(text: string): number {
  return text.length - text.trimStart().length
}

/** Dedented Markdown without blank lines at either end or runs of blank lines (code blocks kept exactly). */
function tidy(lines: readonly PlanLine[]): string {
  const indents = lines.filter((l) => l.text.trim() !== "").map((l) => indentOf(l.text.replace(/\t/g, "    ")))
  const cut = indents.length ? Math.min(...indents) : 0
  const out: string[] = []
  const blocks = trackBlocks()
  for (const { text } of lines) {
    if (blocks.open?.kind === "code") {
      // Inside a code block only the common indentation goes; tabs stay tabs (a Makefile needs them).
      const line = text.slice(Math.min(cut, text.length - text.replace(/^ +/, "").length))
      out.push(line)
      blocks.line(line)
      continue
    }
    const expanded = text.replace(/^\t+/, (t) => "    ".repeat(t.length))
    const line = expanded.slice(Math.min(cut, indentOf(expanded)))
    blocks.line(line)
    const trimmed = line.trimEnd()
    if (trimmed === "" && (out.length === 0 || out.at(-1) === "")) continue
    out.push(trimmed)
  }
  while (out.at(-1) === "") out.pop()
  if (out.length === 0) return ""
  // One bullet alone is one instruction: the bullet mark adds nothing (and would need quotes in YAML).
  if (out.length === 1) return out[0].match(/^[-*+]\s+(?:\[[ xX]\]\s+)?(.*)$/)?.[1] ?? out[0]
  return `${out.join("\n")}\n`
}
