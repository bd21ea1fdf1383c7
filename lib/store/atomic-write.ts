// Replacing a file so that a reader sees the old or the new content, never a mix, and a failure at any
// point leaves the old one: a temp file in the same folder (rename is atomic only within a file system),
// every byte written (writeSync may write fewer than asked: a full disk), fsync, rename. docs/RELIABILITY.md.
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
  accessSync,
} from "node:fs"
import { open, rename } from "node:fs/promises"
import { basename, dirname, isAbsolute, join } from "node:path"
import { FlowError } from "../cli/errors"
import { isPidDead } from "../cli/pid"

/**
 * Writes `text` to `file` atomically and durably. A symlink is written through (its target is replaced, the
 * link stays); the file's permission bits (and, where allowed, owner) are kept; a file its user may not
 * write, or one with no write bit at all, is refused rather than replaced. `mode`, when given, is the new
 * file's permission bits whatever the old one's were (a private file stays private). `beforeRename` may throw
 * to cancel the write just before the file is replaced (the temp file is removed). `durable: false` (a cache,
 * whose loss costs only work) leaves out the two fsyncs: still atomic, not kept through a power cut.
 */
export function writeFileAtomic(file: string, text: string, opts: WriteOptions = {}): void {
  const { mode, beforeRename } = opts
  const { target, existing, tmp } = prepare(file)
  let fd: number | undefined
  try {
    fd = openSync(tmp, "wx", mode ?? (existing ? existing.mode & 0o777 : 0o644))
    if (mode !== undefined) fchmodSync(fd, mode) // the umask takes bits off at creation
    writeAll(fd, Buffer.from(text))
    if (existing) keepOwner(fd, existing.uid, existing.gid)
    if (opts.durable !== false) fsyncSync(fd)
    closeSync(fd)
    fd = undefined
    // The last moment to refuse (a lock no longer held): everything slow is done, and nothing is replaced yet.
    beforeRename?.()
    renameSync(tmp, target)
  } catch (e) {
    if (fd !== undefined) {
      try {
        closeSync(fd)
      } catch {}
    }
    throw failed(file, tmp, e)
  }
  // The rename itself is durable only once the folder is synced.
  if (opts.durable !== false)
    try {
      const dir = openSync(dirname(target), "r")
      fsyncSync(dir)
      closeSync(dir)
    } catch {}
  removeDeadTemps(target)
}

/** How a file is replaced: one shape for the blocking and the async writer. */
export type WriteOptions = { mode?: number; beforeRename?: () => void; durable?: boolean }

/**
 * writeFileAtomic with its writes and syncs off the main thread: what `flow run` uses, where a blocking fsync
 * (a few ms each, two per write) stalled every agent's output, spawn and git call for as long.
 */
export async function writeFileAtomicAsync(file: string, text: string, opts: WriteOptions = {}): Promise<void> {
  const { mode, beforeRename } = opts
  const { target, existing, tmp } = prepare(file)
  let handle: Awaited<ReturnType<typeof open>> | undefined
  try {
    handle = await open(tmp, "wx", mode ?? (existing ? existing.mode & 0o777 : 0o644))
    if (mode !== undefined) await handle.chmod(mode) // the umask takes bits off at creation
    const buf = Buffer.from(text)
    for (let off = 0; off < buf.length; ) {
      const { bytesWritten } = await handle.write(buf, off, buf.length - off)
      if (bytesWritten <= 0) throw Object.assign(new Error("no space left on device (a write wrote nothing)"), { code: "ENOSPC" })
      off += bytesWritten
    }
    if (existing) keepOwner(handle.fd, existing.uid, existing.gid)
    if (opts.durable !== false) await handle.sync()
    await handle.close()
    handle = undefined
    beforeRename?.()
    await rename(tmp, target)
  } catch (e) {
    await handle?.close().catch(() => {})
    throw failed(file, tmp, e)
  }
  if (opts.durable !== false)
    try {
      const dir = await open(dirname(target), "r")
      await dir.sync().finally(() => dir.close())
    } catch {}
  removeDeadTemps(target)
}

/** Where a write of `file` goes: the file its links end at, what is there now (refused if read-only), the temp name. */
function prepare(file: string) {
  const target = resolveLinks(file)
  const existing = statOrUndefined(target)
  if (existing) refuseReadOnly(file, target, existing.mode)
  return { target, existing, tmp: tempName(target) }
}

/** A failed write: its temp file removed, and the error said as writeError says it. */
function failed(file: string, tmp: string, e: unknown): FlowError {
  try {
    unlinkSync(tmp)
  } catch {}
  return writeError(file, e)
}

/** Writes the whole buffer: a short write (a full disk, a quota) is retried, and one that writes nothing fails. */
export function writeAll(fd: number, buf: Uint8Array): void {
  let off = 0
  while (off < buf.length) {
    const n = writeSync(fd, buf, off, buf.length - off)
    if (n <= 0) throw Object.assign(new Error("no space left on device (a write wrote nothing)"), { code: "ENOSPC" })
    off += n
  }
}

/** `<file>.<pid>.<random>.tmp`: the pid lets a later writer tell a dead writer's leftover from a live one's. */
export function tempName(file: string): string {
  return `${file}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`
}

const TEMP = /^(.*)\.(\d+)\.[a-z0-9]+\.tmp$/

/**
 * Removes temp files of `file` left by writers that were killed between creating and renaming them. Only a
 * file whose writer pid is no longer running is removed: a live writer's temp file is never touched (a pid
 * reused by another program only delays the cleanup).
 */
export function removeDeadTemps(file: string): number {
  const name = basename(file)
  let removed = 0
  let entries: string[]
  try {
    entries = readdirSync(dirname(file))
  } catch {
    return 0
  }
  for (const entry of entries) {
    if (!entry.startsWith(`${name}.`) || !entry.endsWith(".tmp")) continue
    const m = TEMP.exec(entry)
    if (!m || m[1] !== name || Number(m[2]) === process.pid || !isPidDead(Number(m[2]))) continue
    try {
      unlinkSync(join(dirname(file), entry))
      removed++
    } catch {}
  }
  return removed
}

/** The file a chain of symlinks ends at (which may not exist yet); `file` itself when it is no link. */
export function resolveLinks(file: string): string {
  let path = file
  for (let hops = 0; hops < 40; hops++) {
    let link: string
    try {
      if (!lstatSync(path).isSymbolicLink()) return path
      link = readlinkSync(path)
    } catch {
      return path
    }
    path = isAbsolute(link) ? link : join(dirname(path), link)
  }
  throw new FlowError(`${file} is a chain of more than 40 symbolic links`, undefined, "point the link at the real file")
}

function statOrUndefined(file: string) {
  try {
    return statSync(file)
  } catch {
    return undefined
  }
}

function refuseReadOnly(file: string, target: string, mode: number): void {
  let denied = (mode & 0o222) === 0
  try {
    accessSync(target, constants.W_OK)
  } catch {
    denied = true
  }
  if (!denied) return
  const which = target === file ? file : `${file} (a link to ${target})`
  throw new FlowError(
    `${which} is read-only (mode ${(mode & 0o777).toString(8).padStart(4, "0")}): flow does not replace a file that may not be written`,
    undefined,
    `make it writable (chmod u+w ${target}) if the change is meant, then try again`,
  )
}

/** A file another user owns stays theirs when that can be kept (root can; others get EPERM and keep theirs). */
function keepOwner(fd: number, uid: number, gid: number): void {
  const now = fstatSync(fd)
  if (now.uid === uid && now.gid === gid) return
  try {
    fchownSync(fd, uid, gid)
  } catch {}
}

const REASONS: Record<string, string> = {
  ENOSPC: "the disk is full",
  EDQUOT: "the disk quota is used up",
  EROFS: "the file system is read-only",
  EACCES: "permission denied",
  EPERM: "permission denied",
}

/** A write failure as a FlowError that says why and that the file was left as it was. */
export function writeError(file: string, e: unknown): FlowError {
  if (e instanceof FlowError) return e
  const code = (e as NodeJS.ErrnoException).code ?? ""
  const why = REASONS[code] ?? (e as Error).message
  const hint =
    code === "ENOSPC" || code === "EDQUOT"
      ? "free some space and try again"
      : code === "EROFS" || code === "EACCES" || code === "EPERM"
        ? `check that you may write in ${dirname(file)}`
        : undefined
  return new FlowError(`cannot write ${file}: ${why}${code && !why.includes(code) ? ` (${code})` : ""}; the file was left as it was`, undefined, hint, {
    cause: e,
  })
}
