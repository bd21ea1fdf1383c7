// Replacing a file so that a reader sees the old or the new content, never a mix, and a crash leaves
// the old one: a temp file in the same folder (rename is atomic only within a file system), fsync, rename.
import { closeSync, fsyncSync, openSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs"
import { dirname } from "node:path"
import { FlowError } from "./errors"

/** Writes `text` to `file` atomically and durably, keeping the file's permission bits. */
export function writeFileAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  let mode = 0o644
  try {
    mode = statSync(file).mode & 0o777
  } catch {}
  try {
    const fd = openSync(tmp, "wx", mode)
    try {
      writeSync(fd, text)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, file)
  } catch (e) {
    try {
      unlinkSync(tmp)
    } catch {}
    throw new FlowError(`cannot write ${file}: ${(e as Error).message}`, undefined, undefined, { cause: e })
  }
  // The rename itself is durable only once the folder is synced.
  try {
    const dir = openSync(dirname(file), "r")
    fsyncSync(dir)
    closeSync(dir)
  } catch {}
}
