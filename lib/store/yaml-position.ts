// Positions in a YAML text. Bun.YAML.parse is fast but reports no positions, so when something is wrong
// the `yaml` package parses the text again: errors are rare, and exact line:column is worth the time.
import { isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from "yaml"
import type { Path, Position } from "./findings"

export type ParsedForPositions = { doc: Document; lines: LineCounter }

export function parseForPositions(text: string): ParsedForPositions {
  const lines = new LineCounter()
  // uniqueKeys is on by default: duplicate keys, which Bun.YAML silently merges, show up in doc.errors.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false })
  return { doc, lines }
}

/** Syntax problems of a text that does not parse, each with its position and yaml's message. */
export function syntaxErrors(parsed: ParsedForPositions): { message: string; position?: Position }[] {
  return parsed.doc.errors.map((e) => {
    let offset = e.pos?.[0]
    let message = e.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "")
    // yaml reports a quote never closed where the text ends; the fix is where the quote opens.
    const open = e.code === "MISSING_CHAR" && offset !== undefined ? openQuoteAt(parsed.doc, offset) : undefined
    if (open !== undefined) {
      offset = open
      message = `this ${message.includes("'") ? "'" : '"'} quote is never closed`
    }
    return { message, position: offset === undefined ? undefined : toPosition(parsed, offset) }
  })
}

/** The start of the quoted scalar that runs up to `end`: the opening quote of an unterminated string. */
function openQuoteAt(doc: Document, end: number): number | undefined {
  let start: number | undefined
  visit(doc, {
    Scalar(_, node) {
      if ((node.type === "QUOTE_DOUBLE" || node.type === "QUOTE_SINGLE") && node.range && node.range[0] < end && node.range[1] >= end) {
        start = node.range[0]
        return visit.BREAK
      }
    },
  })
  return start
}

/** Where the value (or with `atKey`, the key) at `path` starts; for a missing key, where its nearest parent starts. */
export function positionOf(parsed: ParsedForPositions, path: Path, atKey = false): Position | undefined {
  let node: unknown = parsed.doc.contents
  let found = node as Node | null
  for (const [depth, key] of path.entries()) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === key)
      const last = depth === path.length - 1
      node = (atKey && last ? undefined : pair?.value) ?? (pair?.key as Node | undefined)
    } else if (isSeq(node) && typeof key === "number") node = node.items[key]
    else node = undefined
    if (!node || !(node as Node).range) break
    found = node as Node
  }
  const offset = found?.range?.[0]
  return offset === undefined ? undefined : toPosition(parsed, offset)
}

function toPosition(parsed: ParsedForPositions, offset: number): Position {
  const { line, col } = parsed.lines.linePos(offset)
  return { line, column: col }
}
