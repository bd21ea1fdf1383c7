// How old a file is, by the clock of the file system that stamped it. A file's mtime comes from the kernel (or,
// on a network file system, from the server), never from flow's clock: flow's clock may be injected, and the
// process's own clock may be off from the file system's (a server's skew, a clock set ahead under faketime).
// So "now" is read the same way the mtime was written: from a file made for the purpose beside it.
import { closeSync, fstatSync, openSync, statSync, unlinkSync } from "node:fs"
import { dirname, join } from "node:path"
import { systemNow } from "./clock"

let probes = 0

/** The file system's time now in `dir`, in ms; the process's clock where no file can be made there. */
export function fileSystemNow(dir: string): number {
  const probe = join(dir, `.flow-clock-${process.pid}-${probes++}`)
  try {
    const fd = openSync(probe, "wx")
    try {
      return fstatSync(fd).mtimeMs
    } finally {
      closeSync(fd)
      unlinkSync(probe)
    }
  } catch {
    return systemNow()
  }
}

/** How long ago `path` was modified, in ms (its mtime given when already read). */
export function fileAgeMs(path: string, mtimeMs = statSync(path).mtimeMs): number {
  return fileSystemNow(dirname(path)) - mtimeMs
}
