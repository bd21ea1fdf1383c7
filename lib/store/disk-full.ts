// A full disk (or a used-up quota), however it shows: an errno error from node:fs, SQLite's own codes (a
// write past the end, or the shared-memory file of a WAL database that cannot grow), or a git that failed and
// said so on stderr. Commands turn it into one clean error naming the folder; `flow run` waits it out
// (docs/RUN.md, "A full disk").
import { statfsSync } from "node:fs"
import { dirname } from "node:path"
import { Exit, FlowError } from "../cli/errors"

/** Below this much room a disk counts as full: git, SQLite's WAL and tasks.yaml's temp file need some to work. */
export const LOW_SPACE = 1 << 20

const ERRNO = new Set(["ENOSPC", "EDQUOT"])
// SQLITE_FULL is a write that found no room; SHMSIZE is SQLite failing to grow the WAL index (-shm), the
// first thing even a reader needs: on a full tmpfs opening the database fails so. Other I/O errors may be
// a failing disk, not a full one, and stay what they are.
const SQLITE = new Set(["SQLITE_FULL", "SQLITE_IOERR_SHMSIZE"])
// strerror(ENOSPC) and strerror(EDQUOT) as git and other programs print them, and SQLite's message for SQLITE_FULL.
const TEXT = /no space left on device|disk quota exceeded|database or disk is full/i

/** True when `e`, or any error in its `cause` chain, says the disk (or the quota) is full. */
export function isDiskFull(e: unknown): boolean {
  return fullCause(e) !== undefined
}

/** The errors of `e`'s cause chain, outermost first (a cycle ends it). */
function chain(e: unknown): unknown[] {
  const out: unknown[] = []
  for (let x = e; x !== undefined && x !== null && !out.includes(x); x = (x as { cause?: unknown }).cause) {
    out.push(x)
    if (typeof x !== "object") break
  }
  return out
}

/** The error of the chain that says the disk is full. */
function fullCause(e: unknown): unknown {
  return chain(e).find((x) => x instanceof DiskFull || FULL_CODES.has(codeOf(x) ?? "") || (x instanceof Error && TEXT.test(x.message)))
}

const FULL_CODES = new Set([...ERRNO, ...SQLITE])
const codeOf = (x: unknown) => {
  const code = (x as { code?: unknown } | null)?.code
  return typeof code === "string" ? code : undefined
}

/** A full disk as a clean error: what failed, the folder whose disk is full, how to go on. */
export class DiskFull extends FlowError {
  constructor(
    readonly folder: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, Exit.failure, `free some space on that disk ('df -h ${folder}' shows how much is left), then try again`, options)
  }
}

/**
 * `e` (which isDiskFull) as a DiskFull naming the folder: the one a DiskFull in the chain names, else the
 * folder of the errno error's path, else `folder`. `what` says what failed ("cannot open …/state.db").
 */
export function diskFullError(folder: string, e: unknown, what?: string): DiskFull {
  const cause = fullCause(e)
  if (cause instanceof DiskFull && what === undefined) return cause
  const path = chain(e)
    .map((x) => (x as { path?: unknown }).path)
    .find((p) => typeof p === "string")
  const where = cause instanceof DiskFull ? cause.folder : typeof path === "string" ? dirname(path) : folder
  const code = chain(e)
    .map(codeOf)
    .find((c) => c !== undefined && FULL_CODES.has(c))
  const quota = code === "EDQUOT" || /quota/i.test((cause as Error | undefined)?.message ?? "")
  const why = quota ? `the disk quota for ${where} is used up` : `the disk holding ${where} is full`
  return new DiskFull(where, `${what ? `${what}: ` : ""}${why}${code ? ` (${code})` : ""}`, { cause: e })
}

/** Bytes free for this user on the disk holding `path` (or the nearest existing folder above it); undefined when unknown. */
export function roomLeft(path: string): number | undefined {
  for (let p = path; ; p = dirname(p)) {
    try {
      const s = statfsSync(p)
      return s.bavail * s.bsize
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT" || dirname(p) === p) return undefined
    }
  }
}

/** The first of `paths` whose disk has less than LOW_SPACE free, or undefined when all have room (or cannot tell). */
export function lowOnSpace(paths: readonly string[]): string | undefined {
  return paths.find((p) => {
    const room = roomLeft(p)
    return room !== undefined && room < LOW_SPACE
  })
}

/**
 * Throws a DiskFull when the disk holding one of `paths` has less than LOW_SPACE free: a failure seen then
 * may be the disk's, so what would record it as final (a task blocked) waits for room instead.
 */
export function requireRoom(paths: readonly string[], what: string): void {
  const low = lowOnSpace(paths)
  if (low === undefined) return
  throw new DiskFull(low, `the disk holding ${low} is full (${Math.floor((roomLeft(low) ?? 0) / 1024)} KB free): ${what}`)
}
