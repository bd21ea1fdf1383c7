// The fenced ```sh blocks of a task's instructions: what the built-in `script` agent runs (lib/agents/script-agent.ts)
// and what validate warns about where nothing would run them. One pass over the lines: the regular expression
// this replaces (`^(indent)(fence) sh …\n(body)^\1\2$`, lazily) rescanned the rest of the text for every fence
// left open, which made 50,000 unclosed fences quadratic. It finds the same blocks (test/shell-blocks.test.ts).

export type ShellBlock = { label?: string; body: string }

const OPENER = /^([ \t]*)(`{3,}|~{3,})[ \t]*(sh|bash|shell)(?:[ \t]+([A-Za-z][\w-]*))?[ \t]*$/
const CLOSER = /^[ \t]*(`{3,}|~{3,})[ \t]*$/

/**
 * Every ```sh (or ```bash, ```shell; ~~~ fences too) block, in order, with its label (```sh fix). A block closes
 * at the first later line holding only the same indentation and the same fence.
 */
export function fencedShellBlocks(markdown: string): ShellBlock[] {
  // Line starts and ends: a line ends at any of JavaScript's line terminators, as `^` and `$` do.
  const starts: number[] = []
  const ends: number[] = []
  for (let at = 0; ; ) {
    starts.push(at)
    const end = nextTerminator(markdown, at)
    ends.push(end)
    if (end >= markdown.length) break
    at = end + 1
  }
  // The lines that can close a block, by their indentation and fence, in order.
  const closers = new Map<string, { lines: number[]; next: number }>()
  const fenced: boolean[] = starts.map((start, l) => isFenceLine(markdown, start, ends[l]))
  for (let l = 0; l < starts.length; l++) {
    if (!fenced[l]) continue
    const line = markdown.slice(starts[l], ends[l])
    if (!CLOSER.test(line)) continue
    const key = line.replace(/[ \t]+$/, "")
    const entry = closers.get(key)
    if (entry) entry.lines.push(l)
    else closers.set(key, { lines: [l], next: 0 })
  }
  const blocks: ShellBlock[] = []
  for (let l = 0; l < starts.length; l++) {
    const m = fenced[l] ? OPENER.exec(markdown.slice(starts[l], ends[l])) : null
    if (!m) continue
    // The opening line must end with \n or \r\n; the body starts on the next line.
    const end = ends[l]
    const bodyLine = markdown[end] === "\n" ? l + 1 : markdown[end] === "\r" && markdown[end + 1] === "\n" ? l + 2 : -1
    if (bodyLine < 0 || bodyLine >= starts.length) continue
    const entry = closers.get(m[1] + m[2])
    if (!entry) continue
    while (entry.next < entry.lines.length && entry.lines[entry.next] < bodyLine) entry.next++
    if (entry.next >= entry.lines.length) continue
    const close = entry.lines[entry.next]
    blocks.push({ label: m[4], body: markdown.slice(starts[bodyLine], starts[close]) })
    l = close
  }
  return blocks
}

/** The bodies of the plain blocks (```sh), or with `label` only of those labelled so (```sh fix). */
export function shellBlocks(markdown: string, label?: string): string[] {
  return fencedShellBlocks(markdown)
    .filter((b) => b.label === label)
    .map((b) => b.body)
}

/** Whether the line's first character after spaces and tabs is a backtick or tilde: only such a line can open or close a block. */
function isFenceLine(text: string, start: number, end: number): boolean {
  let i = start
  while (i < end && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) i++
  const c = text.charCodeAt(i)
  return i < end && (c === 96 || c === 126)
}

function nextTerminator(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 10 || c === 13 || c === 0x2028 || c === 0x2029) return i
  }
  return text.length
}
