// How long a prompt each CLI takes (docs/AGENTS.md, "How the prompt reaches the CLI"). A prompt on the command
// line is one argument, and Linux refuses to start a program with an argument over 128 KiB (E2BIG); a prompt
// on stdin is bounded by what the CLI reads, checked in each CLI's source at the version its adapter names.
import type { Adapter, PromptLimit } from "./types"

/** Linux's cap on one argument (MAX_ARG_STRLEN: 32 pages of 4 KiB), its closing NUL included. */
const MAX_ARG_STRLEN = 131_072

/** The limit of a prompt passed as one argument, that argument being `prefix` and the prompt (`--prompt=`). */
export function argvLimit(prefix = ""): PromptLimit {
  return {
    bytes: MAX_ARG_STRLEN - 1 - Buffer.byteLength(prefix),
    why: "the prompt is one argument of its command line, and Linux takes at most 128 KiB in one",
  }
}

/** The prompt's size in the unit limits are counted in: UTF-8 bytes, what a pipe or an argument carries. */
export function promptBytes(prompt: string): number {
  return Buffer.byteLength(prompt)
}

/** What the adapter's CLI would refuse, cut or never start with, on one line; undefined when the prompt fits. */
export function promptTooLong(adapter: Pick<Adapter, "cli" | "promptLimit">, prompt: string): string | undefined {
  const limit = adapter.promptLimit
  if (!limit) return undefined
  const bytes = promptBytes(prompt)
  if (bytes <= limit.bytes) return undefined
  return `the prompt is ${size(bytes)}, more than ${adapter.cli} takes (${size(limit.bytes)}: ${limit.why})`
}

/** `300,512 bytes (293 KiB)`: exact, and readable. */
export function size(bytes: number): string {
  const kib = bytes / 1024
  const readable = kib >= 1024 ? `${(kib / 1024).toFixed(1)} MiB` : `${Math.floor(kib)} KiB`
  return `${bytes.toLocaleString("en")} bytes (${readable})`
}
