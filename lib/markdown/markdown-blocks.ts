// Code blocks and HTML comment blocks, followed line by line: inside them a `#` is not a heading and a
// `Depends on:` is not a label. Shared by every reader of plan.md and PRD.md so that they agree.

/** A Markdown file's lines, without a byte order mark (some Windows editors write one) or a last empty line. */
/** One line of a Markdown file with its 1-based number. */
export type PlanLine = { n: number; text: string }

/**
 * Something the reader of plan.md (or of the PRD its skeleton is made from) should know; errors stop
 * `flow generate` before it writes. Here, below both readers, because both report them.
 */
export type PlanNote = { severity: "error" | "warning"; line?: number; message: string; hint?: string }

export function splitLines(text: string): string[] {
  const lines = text
    .replace(/^\uFEFF/, "")
    .replace(/\r\n?/g, "\n")
    .split("\n")
  if (lines.at(-1) === "") lines.pop()
  return lines
}

export const FENCE = /^\s*(`{3,}|~{3,})/

export type BlockKind = "code" | "comment"

export type Blocks = {
  /** The kind of block this line opens, is inside of or closes; undefined for an ordinary line. */
  line(text: string): BlockKind | undefined
  /** The block left open by the lines so far, with the line that opened it (as counted by `line` calls). */
  readonly open: { kind: BlockKind; marker: string; at: number } | undefined
}

/** A fresh follower of code fences and `<!-- ... -->` blocks. */
export function trackBlocks(): Blocks {
  let open: Blocks["open"]
  let count = 0
  return {
    get open() {
      return open
    },
    line(text) {
      count++
      if (open?.kind === "code") {
        const close = text.match(FENCE)
        if (close && close[1][0] === open.marker[0] && close[1].length >= open.marker.length && text.trim() === close[1]) open = undefined
        return "code"
      }
      if (open?.kind === "comment") {
        if (text.includes("-->")) open = undefined
        return "comment"
      }
      const fence = text.match(FENCE)
      if (fence) {
        open = { kind: "code", marker: fence[1], at: count }
        return "code"
      }
      const comment = text.match(/^\s*<!--/)
      if (comment) {
        // Only a comment that does not close on its own line (after its opening) spans lines.
        if (!text.slice(comment[0].length).includes("-->")) open = { kind: "comment", marker: "<!--", at: count }
        return "comment"
      }
      return undefined
    },
  }
}
