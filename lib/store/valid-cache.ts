// Remembers which exact contents of tasks.yaml passed validation, so the read commands that agents call
// many times a minute need not load the schema library (about 0.25 s) for a file flow itself wrote or
// already checked. Keyed by a hash of the bytes and flow's version: any edit, by hand or otherwise, misses.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { VERSION } from "../cli/version"
import { writeFileAtomicAsync } from "./atomic-write"

const KEEP = 16

export function contentKey(text: string): string {
  return `${VERSION}:${Bun.hash(text).toString(16)}`
}

/** Contents this process wrote or found valid: a run reads tasks.yaml right after its own writes. */
const known = new Set<string>()

export function isKnownValid(stateDir: string, text: string): boolean {
  const key = contentKey(text)
  if (known.has(key)) return true
  const found = readKeys(stateDir).includes(key)
  if (found) known.add(key)
  return found
}

/**
 * Records that `text` is valid. Best effort: a lost update only costs one more validation, so the write goes
 * off the main thread, not waited for (a command's process still ends after it), and is not synced.
 */
export function rememberValid(stateDir: string, text: string): void {
  try {
    known.add(contentKey(text))
    ensureStateDir(stateDir)
    const keys = [contentKey(text), ...readKeys(stateDir)].slice(0, KEEP)
    // A read-only project still works; it is only slower.
    writeFileAtomicAsync(join(stateDir, "validated"), `${[...new Set(keys)].join("\n")}\n`, { durable: false }).catch(() => {})
  } catch {}
}

/** The .flow folders this process made sure of: a run writes tasks.yaml many times a minute. */
const ensured = new Set<string>()

/** Creates the project's .flow folder, private to its owner, which ignores itself in git. */
export function ensureStateDir(stateDir: string): void {
  if (ensured.has(stateDir) && existsSync(stateDir)) return
  ensured.add(stateDir)
  // The person's alone (0700) when flow makes it: it holds prompts, questions, answers and the inspector's
  // token files, which another user of the machine must not read (issue 21). An existing folder is left
  // as its owner set it.
  mkdirSync(stateDir, { recursive: true, mode: 0o700 })
  const ignore = join(stateDir, ".gitignore")
  try {
    writeFileSync(ignore, "# flow's local state: not for version control\n*\n", { flag: "wx" })
  } catch {}
}

function readKeys(stateDir: string): string[] {
  try {
    return readFileSync(join(stateDir, "validated"), "utf8").split("\n").filter(Boolean)
  } catch {
    return []
  }
}
