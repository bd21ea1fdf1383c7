// A file flow rewrites (tasks.yaml, PRD.md, plan.md) keeps the line ending and the byte order mark it has: a
// person on Windows (or with core.autocrlf) must not find LF lines mixed into a CRLF file after flow wrote it
// (issue 26 item 9), nor an editor's BOM gone (issue 31).

/** The file's line ending, read from its first line: CRLF or LF (LF for a file of one line). */
export function lineEnding(text: string): "\r\n" | "\n" {
  const nl = text.indexOf("\n")
  return nl > 0 && text[nl - 1] === "\r" ? "\r\n" : "\n"
}

/** `text` (written with LF) with `eol` line endings. */
export function withLineEnding(text: string, eol: "\r\n" | "\n"): string {
  return eol === "\n" ? text : text.replace(/\r?\n/g, eol)
}

const BOM = "\uFEFF"

/** `text` (written with LF, no byte order mark) in the form of `original`: its line ending, and its byte order mark if it has one. */
export function inFormOf(original: string, text: string): string {
  const body = withLineEnding(text, lineEnding(original))
  return original.startsWith(BOM) && !body.startsWith(BOM) ? BOM + body : body
}
