// The one line that names a step in `flow show`, `flow step list` and generate's notes: a step's instruction
// often opens with its code (the `script` agent runs ```sh blocks), and "```sh" names nothing.

const FENCE = /^(`{3,}|~{3,})/

/**
 * The first line of the instruction outside a fenced code block, trimmed; for an instruction that is only
 * code, the first line of that code; "" for an empty one.
 */
export function stepTitle(instruction: string): string {
  let fence: string | undefined
  let firstCode: string | undefined
  for (const raw of instruction.split("\n")) {
    const line = raw.trim()
    const marker = line.match(FENCE)?.[1]
    if (fence) {
      // A fence closes with the same character, at least as long, and nothing after it (CommonMark).
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.slice(marker.length).trim() === "") fence = undefined
      else if (line) firstCode ??= line
    } else if (marker) fence = marker
    else if (line) return line
  }
  return firstCode ?? ""
}
