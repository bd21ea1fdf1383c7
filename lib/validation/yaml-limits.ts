// What tasks.yaml may not be, checked on the raw text before anything parses it, in one linear pass:
// - nesting deeper than MAX_NESTING (an indentation, a run of `- `, or `[`/`{` depth): parsers recurse per
//   level, and a hostile file would overflow the stack or use gigabytes (1,000,000 levels: 1.76 GB);
// - a lone CR as a line break: Bun.YAML reads it as one, the `yaml` package that flow edits with does not,
//   so flow could not write the file it had accepted.
// And whether the text may hold YAML anchors or aliases, which validate then looks for in the parsed
// document (flow edits values in place and cannot edit through an alias). docs/STATUS-RULES.md.
import type { Finding } from "./findings"

/** Deeper than this is refused: 32 levels of subtasks need about 200 columns. */
export const MAX_NESTING = 400

const SPACE = 32
const NL = 10
const CR = 13

/** Findings for a text no parser should be given; empty when it may be parsed. */
export function textLimitFindings(text: string): Finding[] {
  let line = 1
  let lineStart = 0
  let flowDepth = 0
  for (let i = 0; i < text.length; ) {
    // At the start of a line: its indentation, then any `- ` items opened on it.
    let j = i
    while (j < text.length && text.charCodeAt(j) === SPACE) j++
    while (text.charCodeAt(j) === 45 && text.charCodeAt(j + 1) === SPACE) {
      j += 2
      while (j < text.length && text.charCodeAt(j) === SPACE) j++
    }
    if (j - lineStart > MAX_NESTING) return [tooDeep(line, j - lineStart + 1, `it is indented ${j - lineStart} columns`)]
    for (; j < text.length; j++) {
      const c = text.charCodeAt(j)
      if (c === NL) break
      if (c === CR && text.charCodeAt(j + 1) !== NL) {
        return [
          {
            severity: "error",
            line,
            column: j - lineStart + 1,
            message: "The file uses a lone CR (carriage return) as a line break",
            hint: "save it with LF (or CRLF) line endings; flow edits the file line by line and reads only those",
          },
        ]
      }
      if (c === 91 || c === 123) {
        if (++flowDepth > MAX_NESTING) return [tooDeep(line, j - lineStart + 1, `its brackets nest more than ${MAX_NESTING} deep`)]
      } else if ((c === 93 || c === 125) && flowDepth > 0) flowDepth--
    }
    i = j + 1
    lineStart = i
    line++
  }
  return []
}

function tooDeep(line: number, column: number, why: string): Finding {
  return {
    severity: "error",
    line,
    column,
    message: `The file nests too deeply at this line (${why}; flow reads at most ${MAX_NESTING} levels)`,
    hint: "flatten the structure: deeply nested subtasks are better as tasks with depends_on",
  }
}

/** True when some `&name` or `*name` may be a YAML anchor or alias (text in strings may look like one: a false alarm costs one slow parse). */
export function mayHaveAnchors(text: string): boolean {
  for (let at = 0; ; ) {
    const amp = text.indexOf("&", at)
    const star = text.indexOf("*", at)
    const i = amp < 0 ? star : star < 0 ? amp : Math.min(amp, star)
    if (i < 0) return false
    const before = i === 0 ? NL : text.charCodeAt(i - 1)
    const after = text.charCodeAt(i + 1)
    // An anchor or alias token follows a separator and is followed by a name character.
    if (
      (before === SPACE || before === NL || before === 91 || before === 123 || before === 44 || before === 9) &&
      after > SPACE &&
      after !== 42 &&
      after !== 38
    )
      return true
    at = i + 1
  }
}
