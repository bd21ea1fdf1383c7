// Positions in a YAML text. Bun.YAML.parse is fast but reports no positions, so when something is wrong
// the `yaml` package parses the text again: errors are rare, and exact line:column is worth the time.
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from "yaml"
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
    const offset = e.pos?.[0]
    const message = e.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "")
    return { message, position: offset === undefined ? undefined : toPosition(parsed, offset) }
  })
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
