// The cross-process lock around every write of a shared file (tasks.yaml, .flow/run): a lock file beside it
// holding the owner's record. The record is written to a temp file first and hard-linked into place, so a
// lock file is complete from the moment it exists: an empty or unreadable one can only be a crash's (or a
// full disk's) leftover, and is taken over. So is one whose owner is gone: a dead pid, or a pid now used by
// another program (its start time differs). Waiting is async, so a process holding other work (the
// orchestrator) keeps running while it waits. docs/RELIABILITY.md has the rules and the measurements.
import { closeSync, linkSync, openSync, readFileSync, statSync, unlinkSync } from "node:fs"
import { hostname } from "node:os"
import { basename } from "node:path"
import { removeDeadTemps, tempName, writeAll, writeError } from "./atomic-write"
import { FlowError } from "../cli/errors"
import { bootId, isRecordedProcessGone, processCpuTicks, processStartTime } from "../cli/pid"

type Owner = { pid: number; host: string; command: string; since: string; token: string; start?: string; boot?: string }

export type LockOptions = {
  /** how long one holder may keep the lock without progress before a waiter gives up (see patience) */
  timeoutMs?: number
  command?: string
}

/** A lock file that is not a complete record is a leftover once it is this old (a writer that does not link needs microseconds). */
const BROKEN_GRACE_MS = 1_000

/** Runs `fn` holding the lock of `file`; the lock is released however `fn` ends. */
export async function withLock<T>(file: string, fn: () => Promise<T> | T, options: LockOptions = {}): Promise<T> {
  const release = await acquire(file, options)
  try {
    return await fn()
  } finally {
    release()
  }
}

/**
 * Takes the lock of `file`. A queue of writers is waited out however long it is: only a single holder that
 * makes no progress for `timeoutMs` (a hung process) makes the wait give up, with a message naming it.
 */
export async function acquire(file: string, { timeoutMs = 30_000, command = "flow" }: LockOptions): Promise<() => void> {
  const lockFile = `${file}.lock`
  const me: Owner = {
    pid: process.pid,
    host: hostname(),
    command,
    since: new Date().toISOString(),
    token: crypto.randomUUID(),
    start: processStartTime(process.pid),
    boot: bootId(),
  }
  const record = JSON.stringify(me)
  removeDeadTemps(lockFile)
  let holder: Patience | undefined
  let wait = 2
  for (let first = true; ; first = false) {
    const seen = first ? ({ kind: "free" } as Seen) : inspect(lockFile)
    if (seen.kind === "free") {
      if (tryCreate(lockFile, record)) return () => releaseIfMine(lockFile, me.token)
      continue
    }
    const stale = seen.kind === "owner" ? isGone(seen.owner) : seen.ageMs >= BROKEN_GRACE_MS
    if (stale) {
      const token = seen.kind === "owner" ? seen.owner.token : undefined
      if (takeOver(lockFile, (now) => (now.kind === "owner" ? now.owner.token === token : now.kind === "broken" && now.ageMs >= BROKEN_GRACE_MS))) continue
    } else if (seen.kind === "owner") {
      if (timeoutMs === 0) throw stuck(file, lockFile, seen.owner, timeoutMs)
      holder = patience(holder, seen.owner)
      if (performance.now() - holder.progressAt >= timeoutMs) throw stuck(file, lockFile, seen.owner, timeoutMs)
    }
    // Jitter keeps many waiting writers from retrying in lockstep.
    await Bun.sleep(wait + Math.random() * wait)
    wait = Math.min(wait * 2, 40)
  }
}

/** What a waiter knows of the current holder: when it last saw it make progress (take the lock, or use CPU). */
type Patience = { token: string; cpu: number | undefined; progressAt: number; checkedAt: number }

/**
 * A holder makes progress when it is new, or (on Linux, same host) when it used CPU since the last look: on a
 * machine so loaded that a write takes many seconds the holder is slow, not hung, and waiting on is right.
 * Only a holder that used no CPU for the whole timeout (stopped, deadlocked, waiting on a dead mount) is hung.
 */
function patience(known: Patience | undefined, owner: Owner): Patience {
  const now = performance.now()
  const local = owner.host === hostname()
  if (!known || known.token !== owner.token) return { token: owner.token, cpu: local ? processCpuTicks(owner.pid) : undefined, progressAt: now, checkedAt: now }
  if (!local || now - known.checkedAt < 250) return known
  const cpu = processCpuTicks(owner.pid)
  const moved = cpu !== undefined && known.cpu !== undefined && cpu > known.cpu
  return { ...known, cpu, checkedAt: now, progressAt: moved ? now : known.progressAt }
}

/**
 * The owner of `file`'s lock while it is held by a live process (or one on another host, which cannot be
 * checked); undefined when the lock is free, broken, or its owner is gone. Only looks: nothing is taken over.
 */
export function lockHolder(file: string): Pick<Owner, "pid" | "host" | "command" | "since"> | undefined {
  const seen = inspect(`${file}.lock`)
  return seen.kind === "owner" && !isGone(seen.owner) ? seen.owner : undefined
}

function stuck(file: string, lockFile: string, owner: Owner, timeoutMs: number): FlowError {
  const where = owner.host === hostname() ? "" : ` on ${owner.host}`
  const who = `process ${owner.pid}${where} (${owner.command}) since ${owner.since}`
  return new FlowError(
    `${basename(file)} is locked by ${who}; gave up after it held the lock for ${timeoutMs / 1000} s without progress`,
    undefined,
    `if that process hangs, stop it (kill ${owner.pid}); if it is gone, delete ${lockFile}; FLOW_LOCK_TIMEOUT (seconds) sets how long to wait`,
  )
}

/** Creates the lock file with its whole content at once; false when it exists already. */
function tryCreate(lockFile: string, content: string): boolean {
  const tmp = tempName(lockFile)
  let linked = false
  try {
    const fd = openSync(tmp, "wx", 0o644)
    try {
      writeAll(fd, Buffer.from(content))
    } finally {
      closeSync(fd)
    }
    linkSync(tmp, lockFile)
    linked = true
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === "EEXIST") return false
    // A file system without hard links: create in place (a crash between create and write leaves a
    // broken lock, which the next writer takes over after BROKEN_GRACE_MS).
    if (code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP" || code === "ENOSYS") return createInPlace(lockFile, content)
    throw lockError(lockFile, e)
  } finally {
    try {
      unlinkSync(tmp)
    } catch {}
  }
  return linked
}

function createInPlace(lockFile: string, content: string): boolean {
  let fd: number
  try {
    fd = openSync(lockFile, "wx")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false
    throw lockError(lockFile, e)
  }
  try {
    writeAll(fd, Buffer.from(content))
  } catch (e) {
    // Never leave an empty lock behind: it would look held.
    try {
      unlinkSync(lockFile)
    } catch {}
    throw lockError(lockFile, e)
  } finally {
    closeSync(fd)
  }
  return true
}

function lockError(lockFile: string, e: unknown): FlowError {
  const err = writeError(lockFile, e)
  return new FlowError(
    err.message.replace(/^cannot write /, "cannot create the lock file ").replace(/; the file was left as it was$/, "; nothing was changed"),
    err.exit,
    err.hint,
    { cause: e },
  )
}

type Seen = { kind: "free" } | { kind: "owner"; owner: Owner } | { kind: "broken"; ageMs: number }

function inspect(lockFile: string): Seen {
  let text: string
  let mtimeMs: number
  try {
    mtimeMs = statSync(lockFile).mtimeMs
    text = readFileSync(lockFile, "utf8")
  } catch {
    return { kind: "free" }
  }
  try {
    const owner = JSON.parse(text) as Owner
    if (owner && typeof owner === "object" && Number.isSafeInteger(owner.pid) && typeof owner.token === "string") return { kind: "owner", owner }
  } catch {}
  return { kind: "broken", ageMs: Date.now() - mtimeMs }
}

function isGone(owner: Owner): boolean {
  if (owner.host !== hostname()) return false // a pid on another machine cannot be checked
  return isRecordedProcessGone(owner.pid, owner.start, owner.boot)
}

/** Removes a leftover lock; a second lock file makes sure two rescuers cannot remove a new owner's lock. */
function takeOver(lockFile: string, stillStale: (now: Seen) => boolean): boolean {
  const guard = `${lockFile}.takeover`
  let fd: number
  try {
    fd = openSync(guard, "wx")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw lockError(lockFile, e)
    // A rescuer that died inside these few lines leaves its guard behind: age tells.
    try {
      if (Date.now() - statSync(guard).mtimeMs > 2_000) unlinkSync(guard)
    } catch {}
    return false
  }
  closeSync(fd)
  try {
    if (stillStale(inspect(lockFile))) unlinkSync(lockFile)
  } catch {
  } finally {
    try {
      unlinkSync(guard)
    } catch {}
  }
  return true
}

function releaseIfMine(lockFile: string, token: string): void {
  const seen = inspect(lockFile)
  if (seen.kind === "owner" && seen.owner.token === token) {
    try {
      unlinkSync(lockFile)
    } catch {}
  }
}
