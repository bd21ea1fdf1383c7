// How much one note may add to the prompts of agents (docs/AGENTS.md, "How the prompt reaches the CLI"): a note
// from a person (`flow note`, a block reason) or from an agent through flow's MCP server, which takes 4 MiB.
import { usage } from "../cli/errors"

/**
 * The most one note may hold, in UTF-8 bytes: half of what Codex, of the CLIs that read a prompt from stdin
 * the one that takes least, reads in a turn (1,048,576 characters). A note goes into its task's prompt and,
 * on one line, into the prompt of every task that depends on it, beside their own text.
 */
export const NOTE_MAX_BYTES = 512 * 1024

/** Refuses (a usage error, nothing written) a note longer than NOTE_MAX_BYTES; `what` names it in the message. */
export function checkNoteSize(text: string, what = "the note"): void {
  const bytes = Buffer.byteLength(text)
  if (bytes <= NOTE_MAX_BYTES) return
  throw usage(
    `${what} is ${bytes.toLocaleString("en")} bytes, more than a note may hold (${NOTE_MAX_BYTES.toLocaleString("en")} bytes, 512 KiB): notes go into the prompts of agents`,
    "put the long text in a file of the repository and name that file in the note",
  )
}
