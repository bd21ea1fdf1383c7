// The cross-process lock around every write of a shared file (tasks.yaml, .flow/run): a lock file beside it
// holding the owner's record. The record is written to a temp file first and hard-linked into place, so a
// lock file is complete from the moment it exists: an empty or unreadable one can only be a crash's (or a
// full disk's) leftover, and is taken over. So is one whose owner is gone: a dead pid, or a pid now used by
// another program (its start time differs). Waiting is async, so a process holding other work (the
// orchestrator) keeps running while it waits. Whatever else sits at the lock's path is named in an error (a
// directory, a FIFO) or removed like a dead owner's lock (a symlink to nothing), and a holder checks that the lock
// is still its own just before it replaces the file. docs/RELIABILITY.md has the rules and the measurements.
import { closeSync, linkSync, lstatSync, openSync, readFileSync, statSync, unlinkSync, type Stats } from "node:fs"
import { hostname } from "node:os"
import { basename } from "node:path"
import { removeDeadTemps, tempName, writeAll, writeError } from "./atomic-write"
import { FlowError } from "../cli/errors"
import { bootId, isProcessStopped, isRecordedProcessGone, processCpuTicks, processStartTime } from "../cli/pid"
import * as clock from "../cli/clock"
import { fileAgeMs } from "../cli/file-age"

type Owner = { pid: number; host: string; command: string; since: string; token: string; start?: string; boot?: string }

export type LockOptions = {
  /** how long one holder may keep the lock without progress before a waiter gives up (see patience) */
  timeoutMs?: number
  command?: string
}

/** A lock file that is not a complete record is a leftover once it is this old (a writer that does not link needs microseconds). */
const BROKEN_GRACE_MS = 1_000
/** A lock that is neither free nor held by a known owner (one that stays broken, say) is given up on after this at least. */
const NO_OWNER_MS = 5_000

/** A held lock: calling it releases the lock; `assertHeld` throws unless the lock is still this holder's. */
export type Held = { (): void; assertHeld(): void }

/** Runs `fn` holding the lock of `file`; the lock is released however `fn` ends. */
export async function withLock<T>(file: string, fn: (held: Held) => Promise<T> | T, options: LockOptions = {}): Promise<T> {
  const held = await acquire(file, options)
  try {
    return await fn(held)
  } finally {
    held()
  }
}

/**
 * Takes the lock of `file`. A queue of writers is waited out however long it is: only a single holder that
 * makes no progress for `timeoutMs` (a hung process) makes the wait give up, with a message naming it.
 */
export async function acquire(file: string, { timeoutMs = 30_000, command = "flow" }: LockOptions): Promise<Held> {
  const lockFile = `${file}.lock`
  const me: Owner = {
    pid: process.pid,
    host: hostname(),
    command,
    since: clock.nowDate().toISOString(),
    token: crypto.randomUUID(),
    start: processStartTime(process.pid),
    boot: bootId(),
  }
  const record = JSON.stringify(me)
  removeDeadTemps(lockFile)
  let holder: Patience | undefined
  // When the lock was first seen without an owner to wait for, in the state it is in now.
  let ownerless: { kind: Seen["kind"]; since: number } | undefined
  let wait = 2
  for (let first = true; ; first = false) {
    const seen = first ? ({ kind: "free" } as Seen) : inspect(lockFile)
    if (seen.kind === "foreign") throw foreign(file, lockFile, seen.what)
    if (seen.kind === "free" && tryCreate(lockFile, record)) return held(file, lockFile, me)
    if (seen.kind !== "free" && isStale(seen)) {
      const token = seen.kind === "owner" ? seen.owner.token : undefined
      if (takeOver(lockFile, (now) => (now.kind === "owner" ? now.owner.token === token : now.kind !== "free" && now.kind !== "foreign" && isStale(now))))
        continue
    }
    if (seen.kind === "owner" && !isStale(seen)) {
      ownerless = undefined
      if (timeoutMs === 0) throw stuck(file, lockFile, seen.owner, timeoutMs)
      holder = patience(holder, seen.owner)
      if (performance.now() - holder.progressAt >= timeoutMs) throw stuck(file, lockFile, seen.owner, timeoutMs)
    } else {
      // Free yet not creatable, or broken and not yet old enough: normally gone within a moment. Every state
      // that lasts is bounded too (a file rewritten forever, a lock flow cannot create for a reason it misreads).
      if (ownerless?.kind !== seen.kind) ownerless = { kind: seen.kind, since: performance.now() }
      else if (performance.now() - ownerless.since >= Math.max(timeoutMs, NO_OWNER_MS))
        throw ownerlessStuck(file, lockFile, seen.kind, performance.now() - ownerless.since)
    }
    // Jitter keeps many waiting writers from retrying in lockstep.
    await Bun.sleep(wait + Math.random() * wait)
    wait = Math.min(wait * 2, 40)
  }
}

/** A lock whose holder is gone (a dead or reused pid), a broken record old enough, or a symlink to nothing. */
function isStale(seen: Exclude<Seen, { kind: "free" } | { kind: "foreign" }>): boolean {
  if (seen.kind === "owner") return isGone(seen.owner)
  if (seen.kind === "dangling") return true
  return seen.ageMs >= BROKEN_GRACE_MS
}

function held(file: string, lockFile: string, me: Owner): Held {
  const release = () => releaseIfMine(lockFile, me.token)
  return Object.assign(release, {
    assertHeld() {
      const now = inspect(lockFile)
      if (now.kind === "owner" && now.owner.token === me.token) return
      const by =
        now.kind === "owner"
          ? `taken by process ${now.owner.pid}${now.owner.host === hostname() ? "" : ` on ${now.owner.host}`} (${now.owner.command})`
          : now.kind === "free"
            ? "deleted"
            : "replaced by something else"
      throw new FlowError(
        `${lockFile} was ${by} while this process (${me.command}) held it: another writer may have changed ${basename(file)} meanwhile, so nothing was written`,
        undefined,
        "run the command again (it reads the file afresh); never delete the lock of a process that still runs, a stopped one included (flow removes a dead process's lock by itself)",
      )
    },
  })
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
  const local = owner.host === hostname()
  const who = `process ${owner.pid}${local ? "" : ` on ${owner.host}`} (${owner.command}) since ${owner.since}`
  // A local holder that is gone is noticed and its lock taken over: this one runs (or is stopped, or hung).
  // Deleting its lock would let a second writer in, and the first would then fail (or, before flow checked, overwrite).
  const fix = !local
    ? `flow cannot check a process on ${owner.host}: if it no longer runs there, delete ${lockFile}`
    : `${
        isProcessStopped(owner.pid)
          ? `process ${owner.pid} is stopped (kill -STOP, Ctrl-Z): resume it (kill -CONT ${owner.pid}) or end it (kill ${owner.pid})`
          : `process ${owner.pid} runs but used no CPU meanwhile: if it hangs, end it (kill ${owner.pid})`
      }: flow takes over the lock of a process that has ended; do not delete ${lockFile} while its process runs`
  return new FlowError(
    `${basename(file)} is locked by ${who}; gave up after it held the lock for ${timeoutMs / 1000} s without progress`,
    undefined,
    `${fix}; FLOW_LOCK_TIMEOUT (seconds) sets how long to wait`,
  )
}

/** Something flow did not make sits where the lock goes: flow cannot lock, and must not remove it. */
function foreign(file: string, lockFile: string, what: string): FlowError {
  return new FlowError(
    `${lockFile} is ${what}, not a lock file: flow cannot lock ${basename(file)} while it is there`,
    undefined,
    what === "a directory"
      ? `remove it (rmdir ${lockFile}, after moving out anything of yours in it): flow creates the lock file itself, then try again`
      : what.startsWith("a file flow may not read")
        ? `flow's lock files are readable by everyone (0644): if no process of another user holds it, remove ${lockFile}, then try again`
        : `remove it (rm ${lockFile}): flow creates the lock file itself, then try again`,
  )
}

function ownerlessStuck(file: string, lockFile: string, kind: Seen["kind"], ms: number): FlowError {
  const state = {
    free: "was free, yet could not be created",
    broken: "held no complete owner record and could not be taken over",
    owner: "names a process that no longer runs, yet could not be taken over",
    dangling: "is a symbolic link to nothing, yet could not be removed",
    foreign: "is not a lock file",
  }[kind]
  return new FlowError(
    `could not take the lock of ${basename(file)}: ${lockFile} ${state} for ${(ms / 1000).toFixed(1)} s`,
    undefined,
    `check what else writes there, remove ${lockFile} (and ${lockFile}.takeover if it is there), and try again`,
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

type Seen =
  | { kind: "free" }
  | { kind: "owner"; owner: Owner }
  | { kind: "broken"; ageMs: number }
  /** a symbolic link to nothing: flow never makes one, so it is a leftover, removed like a dead owner's lock */
  | { kind: "dangling" }
  /** a directory, a FIFO, a file flow may not read: not a lock, and not flow's to remove */
  | { kind: "foreign"; what: string }

function inspect(lockFile: string): Seen {
  let text: string
  let st: Stats
  try {
    st = lstatSync(lockFile)
    if (st.isSymbolicLink()) {
      try {
        st = statSync(lockFile)
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return { kind: "dangling" }
        throw e
      }
    }
    if (st.isDirectory()) return { kind: "foreign", what: "a directory" }
    // Reading a FIFO would block until something writes to it.
    if (!st.isFile()) return { kind: "foreign", what: st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : "a device file" }
    text = readFileSync(lockFile, "utf8")
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === "ENOENT") return { kind: "free" }
    if (code === "EACCES" || code === "EPERM") return { kind: "foreign", what: "a file flow may not read (permission denied)" }
    if (code === "ELOOP") return { kind: "foreign", what: "a loop of symbolic links" }
    return { kind: "foreign", what: `unreadable (${code ?? (e as Error).message})` }
  }
  const mtimeMs = st.mtimeMs
  try {
    const owner = JSON.parse(text) as Owner
    if (owner && typeof owner === "object" && Number.isSafeInteger(owner.pid) && typeof owner.token === "string") return { kind: "owner", owner }
  } catch {}
  return { kind: "broken", ageMs: fileAgeMs(lockFile, mtimeMs) }
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
      if (fileAgeMs(guard) > 2_000) unlinkSync(guard)
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
