// Positions in a YAML text. Bun.YAML.parse is fast but reports no positions, so when something is wrong
// the `yaml` package parses the text again: errors are rare, and exact line:column is worth the time.
import { isMap, isScalar, isSeq, LineCounter, parseDocument, visit, YAMLParseError, type Document, type Node } from "yaml"
import { partitionPoint } from "../cli/partition-point"
import type { Path, Position } from "./findings"

export type ParsedForPositions = { doc: Document; lines: LineCounter }

export function parseForPositions(text: string): ParsedForPositions {
  const lines = new LineCounter()
  // Duplicate keys, which Bun.YAML silently merges, must show up in doc.errors. yaml's own check (uniqueKeys)
  // compares each key with every earlier one of its mapping: a task of 25,000 keys took 13 s. This one is linear.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false })
  doc.errors.push(...duplicateKeys(doc))
  return { doc, lines }
}

/** yaml's DUPLICATE_KEY errors (a scalar key equal to an earlier one of the same mapping), with a Set per mapping. */
function duplicateKeys(doc: Document): YAMLParseError[] {
  const out: YAMLParseError[] = []
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>()
      for (const { key } of map.items) {
        if (!isScalar(key)) continue
        if (seen.has(key.value)) {
          const at = key.range?.[0] ?? 0
          out.push(new YAMLParseError([at, at + 1], "DUPLICATE_KEY", "Map keys must be unique"))
        } else seen.add(key.value)
      }
    },
  })
  return out
}

/** Syntax problems of a text that does not parse, each with its position and yaml's message. */
export function syntaxErrors(parsed: ParsedForPositions): { message: string; position?: Position }[] {
  let quotes: [number, number][] | undefined
  return parsed.doc.errors.map((e) => {
    let offset = e.pos?.[0]
    let message = e.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "")
    // yaml reports a quote never closed where the text ends; the fix is where the quote opens.
    if (e.code === "MISSING_CHAR" && offset !== undefined) quotes ??= quotedRanges(parsed.doc)
    const open = e.code === "MISSING_CHAR" && offset !== undefined ? openQuoteAt(quotes!, offset) : undefined
    if (open !== undefined) {
      offset = open
      message = `this ${message.includes("'") ? "'" : '"'} quote is never closed`
    }
    return { message, position: offset === undefined ? undefined : toPosition(parsed, offset) }
  })
}

/** The ranges of the quoted scalars, in file order: found once, however many errors ask (a visit per error was quadratic). */
function quotedRanges(doc: Document): [number, number][] {
  const out: [number, number][] = []
  visit(doc, {
    Scalar(_, node) {
      if ((node.type === "QUOTE_DOUBLE" || node.type === "QUOTE_SINGLE") && node.range) out.push([node.range[0], node.range[1]])
    },
  })
  return out.sort((a, b) => a[0] - b[0])
}

/** The start of the quoted scalar that runs up to `end`: the opening quote of an unterminated string. */
function openQuoteAt(quotes: [number, number][], end: number): number | undefined {
  // Scalars do not overlap: the last one starting before `end` is the only candidate.
  const q = quotes[partitionPoint(quotes.length, (i) => quotes[i][0] < end) - 1]
  return q && q[1] >= end ? q[0] : undefined
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
