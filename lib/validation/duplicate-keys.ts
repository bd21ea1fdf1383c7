// Bun.YAML.parse silently keeps the last of two equal keys in one mapping, which would drop a user's value
// without a word. The `yaml` package reports them, but it is ten times slower, so this scan decides whether
// the slow parse is needed. It reads block-style YAML line by line and only has to err on the side of
// suspicion: a false alarm costs one slow parse, which then finds nothing.

const SPACE = 32
const DASH = 45
const COLON = 58
const HASH = 35
const CR = 13

/** True when some block mapping in `text` may hold the same key twice. */
export function mayHaveDuplicateKeys(text: string): boolean {
  // Open mappings, innermost last: the column their keys start at and the keys seen so far.
  const indents: number[] = []
  const keySets: Set<string>[] = []
  let blockScalarParent = -1 // indentation of the key that opened a `|` or `>` block, or -1
  let start = 0
  const length = text.length
  while (start < length) {
    let end = text.indexOf("\n", start)
    if (end < 0) end = length
    const lineStart = start
    start = end + 1

    let i = lineStart
    while (i < end && text.charCodeAt(i) === SPACE) i++
    const first = text.charCodeAt(i)
    if (i === end || first === HASH || first === CR) continue
    let col = i - lineStart
    if (blockScalarParent >= 0) {
      if (col > blockScalarParent) continue
      blockScalarParent = -1
    }
    if (col === 0 && (text.startsWith("---", i) || text.startsWith("...", i))) {
      indents.length = keySets.length = 0
      continue
    }
    // Each `- ` opens a new item whose mapping (if any) starts after the dash.
    while (text.charCodeAt(i) === DASH && (i + 1 === end || text.charCodeAt(i + 1) === SPACE)) {
      while (indents.length > 0 && indents[indents.length - 1] > col) indents.pop(), keySets.pop()
      i++
      while (i < end && text.charCodeAt(i) === SPACE) i++
      col = i - lineStart
      indents.push(col)
      keySets.push(new Set())
    }
    const colon = keyEnd(text, i, end)
    if (colon < 0) continue
    const key = normalize(text.slice(i, colon))
    while (indents.length > 0 && indents[indents.length - 1] > col) indents.pop(), keySets.pop()
    if (indents.length === 0 || indents[indents.length - 1] < col) {
      indents.push(col)
      keySets.push(new Set())
    }
    const keys = keySets[keySets.length - 1]
    if (keys.has(key)) return true
    keys.add(key)
    let v = colon + 1
    while (v < end && text.charCodeAt(v) === SPACE) v++
    const c = text[v]
    if (c === "|" || c === ">") blockScalarParent = col
  }
  return false
}

/** Where the `:` ending a mapping key that starts at `i` is, or -1 when the line holds no key there. */
function keyEnd(text: string, i: number, end: number): number {
  const q = text[i]
  // Every scan stops at the line's end: an unbounded indexOf would make lines without ':' quadratic.
  if (q === '"' || q === "'") {
    let close = i + 1
    while (close < end && text[close] !== q) close++
    if (close >= end) return -1
    let j = close + 1
    while (j < end && text.charCodeAt(j) === SPACE) j++
    return text.charCodeAt(j) === COLON && (j + 1 === end || isBlank(text.charCodeAt(j + 1))) ? j : -1
  }
  if ("{[&*!|>%@`#".includes(q)) return -1
  for (let j = i; j < end; j++) {
    if (text.charCodeAt(j) === COLON && (j + 1 === end || isBlank(text.charCodeAt(j + 1)))) return j
  }
  return -1
}

const isBlank = (c: number) => c === SPACE || c === CR || c === 9

/** `"id"`, `'id'` and `id` are one key. */
function normalize(raw: string): string {
  const key = raw.trimEnd()
  const q = key[0]
  return (q === '"' || q === "'") && key.endsWith(q) ? key.slice(1, -1) : key
}
