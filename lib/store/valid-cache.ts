// Remembers which exact contents of tasks.yaml passed validation, so the read commands that agents call
// many times a minute need not load the schema library (about 0.25 s) for a file flow itself wrote or
// already checked. Keyed by a hash of the bytes and flow's version: any edit, by hand or otherwise, misses.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { VERSION } from "../cli/version"
import { writeFileAtomic } from "./atomic-write"

const KEEP = 16

export function contentKey(text: string): string {
  return `${VERSION}:${Bun.hash(text).toString(16)}`
}

export function isKnownValid(stateDir: string, text: string): boolean {
  const key = contentKey(text)
  return readKeys(stateDir).includes(key)
}

/** Records that `text` is valid. Best effort: a lost update only costs one more validation. */
export function rememberValid(stateDir: string, text: string): void {
  try {
    ensureStateDir(stateDir)
    const keys = [contentKey(text), ...readKeys(stateDir)].slice(0, KEEP)
    writeFileAtomic(join(stateDir, "validated"), `${[...new Set(keys)].join("\n")}\n`, { durable: false })
  } catch {
    // A read-only project still works; it is only slower.
  }
}

/** Creates the project's .flow folder, which ignores itself in git. */
export function ensureStateDir(stateDir: string): void {
  mkdirSync(stateDir, { recursive: true })
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
