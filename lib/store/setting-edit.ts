// flow.yaml's `state:` and `project:` set by `flow share` and removed by `flow unshare`, as line edits that
// keep every other byte of the file (its comments are the person's). Each is a top-level one-line setting;
// a file where they are something else is left to the person, with an error that says so.
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Exit, FlowError } from "../cli/errors"
import { writeFileAtomic } from "./atomic-write"
import { lineEnding } from "./line-ending"
import { renderScalar } from "./task-edit"

export type SharedKeys = { state: string; project: string }

/** flow.yaml's text with `state:` and `project:` set to `keys`, or removed when `keys` is undefined. */
export function withSharedKeys(text: string, keys: SharedKeys | undefined): string {
  const eol = lineEnding(text || "\n")
  let out = text
  for (const key of ["state", "project"] as const) {
    const line = new RegExp(`^${key}[ \\t]*:.*(?:\\r?\\n|$)`, "m")
    const value = keys?.[key]
    const replacement = value === undefined ? "" : `${key}: ${renderScalar(value)}${eol}`
    if (line.test(out)) out = out.replace(line, () => replacement)
    else if (value !== undefined) out = `${out}${out === "" || out.endsWith("\n") ? "" : eol}${replacement}`
  }
  const read = (Bun.YAML.parse(out) ?? {}) as Record<string, unknown>
  if (read.state !== keys?.state || read.project !== keys?.project) {
    throw new FlowError(
      "flow.yaml's state: or project: is not a one-line setting at the top level, so flow cannot change it without changing more",
      Exit.invalid,
      keys ? `set them by hand: state: ${keys.state} and project: ${keys.project}` : "remove state: and project: by hand",
    )
  }
  return out
}

/** Writes the project's flow.yaml with the shared keys set (or removed), atomically; returns the text it replaced. */
export function writeSharedKeys(dir: string, keys: SharedKeys | undefined): string | undefined {
  const file = join(dir, "flow.yaml")
  const before = existsSync(file) ? readFileSync(file, "utf8") : undefined
  if (before === undefined && keys === undefined) return undefined
  const text = withSharedKeys(before ?? "", keys)
  if (text !== before) writeFileAtomic(file, text)
  return before
}
