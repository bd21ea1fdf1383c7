// How old a file is, by the clock of the file system that stamped it. A file's mtime comes from the kernel (or,
// on a network file system, from the server), never from flow's clock: flow's clock may be injected, and the
// process's own clock may be off from the file system's (a server's skew, a clock set ahead under faketime).
// So "now" is read the same way the mtime was written: from a file made for the purpose beside it.
import { closeSync, fstatSync, openSync, statSync, unlinkSync } from "node:fs"
import { dirname, join } from "node:path"
import { systemNow } from "./clock"

let probes = 0

/** The file system's lead over the process's clock, by folder: measured at most once per SKEW_TTL_MS. */
const skews = new Map<string, { skewMs: number; at: number }>()
// A lock wait polls a file's age every few ms; a probe file each time would wake every watcher of the folder
// (the run watches tasks.yaml's). A clock's skew drifts slowly, so one probe per folder per 10 s is enough.
const SKEW_TTL_MS = 10_000

/** The file system's time now in `dir`, in ms; the process's clock where no file can be made there. */
export function fileSystemNow(dir: string): number {
  const now = systemNow()
  const known = skews.get(dir)
  if (known && now >= known.at && now - known.at < SKEW_TTL_MS) return now + known.skewMs
  const probed = probe(dir)
  if (probed === undefined) return now
  skews.set(dir, { skewMs: probed - now, at: now })
  return probed
}

function probe(dir: string): number | undefined {
  const file = join(dir, `.flow-clock-${process.pid}-${probes++}`)
  try {
    const fd = openSync(file, "wx")
    try {
      return fstatSync(fd).mtimeMs
    } finally {
      closeSync(fd)
      unlinkSync(file)
    }
  } catch {
    return undefined
  }
}

/** How long ago `path` was modified, in ms (its mtime given when already read). */
export function fileAgeMs(path: string, mtimeMs = statSync(path).mtimeMs): number {
  return fileSystemNow(dirname(path)) - mtimeMs
}
