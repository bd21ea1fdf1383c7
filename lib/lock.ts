// The cross-process lock around every write of a shared file: an O_EXCL lock file beside it holding the
// owner's pid. A lock whose owner is gone is taken over at once (measured: about 60 ms to recover from a
// killed holder, where lock libraries that go by the file's age wait 10 s). Waiting is async, so a
// process holding other work (the orchestrator) keeps running while it waits.
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs"
import { hostname } from "node:os"
import { basename } from "node:path"
import { FlowError } from "./errors"

type Owner = { pid: number; host: string; command: string; since: string; token: string }

export type LockOptions = { timeoutMs?: number; command?: string }

/** Runs `fn` holding the lock of `file`; the lock is released however `fn` ends. */
export async function withLock<T>(file: string, fn: () => Promise<T> | T, options: LockOptions = {}): Promise<T> {
  const release = await acquire(file, options)
  try {
    return await fn()
  } finally {
    release()
  }
}

export async function acquire(file: string, { timeoutMs = 30_000, command = "flow" }: LockOptions): Promise<() => void> {
  const lockFile = `${file}.lock`
  const me: Owner = { pid: process.pid, host: hostname(), command, since: new Date().toISOString(), token: crypto.randomUUID() }
  const deadline = performance.now() + timeoutMs
  let wait = 2
  for (;;) {
    if (tryCreate(lockFile, JSON.stringify(me))) return () => releaseIfMine(lockFile, me.token)
    const holder = readOwner(lockFile)
    if (holder && isGone(holder)) {
      takeOver(lockFile, holder.token)
      continue
    }
    if (performance.now() > deadline) {
      const who = holder ? `process ${holder.pid} (${holder.command}) since ${holder.since}` : "another process"
      throw new FlowError(`${basename(file)} is locked by ${who}; gave up after ${timeoutMs / 1000} s`, undefined,
        `if that process is no longer running, delete ${lockFile}`)
    }
    // Jitter keeps many waiting agents from retrying in lockstep.
    await Bun.sleep(wait + Math.random() * wait)
    wait = Math.min(wait * 2, 25)
  }
}

/**
 * The owner of `file`'s lock while it is held by a live process (or one on another host, which cannot be
 * checked); undefined when the lock is free or its owner is gone. Only looks: nothing is taken over.
 */
export function lockHolder(file: string): Pick<Owner, "pid" | "host" | "command" | "since"> | undefined {
  const holder = readOwner(`${file}.lock`)
  return holder && !isGone(holder) ? holder : undefined
}

function tryCreate(lockFile: string, content: string): boolean {
  let fd: number
  try {
    fd = openSync(lockFile, "wx")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false
    throw new FlowError(`cannot create the lock file ${lockFile}: ${(e as Error).message}`, undefined, undefined, { cause: e })
  }
  try {
    writeSync(fd, content)
  } finally {
    closeSync(fd)
  }
  return true
}

function readOwner(lockFile: string): Owner | undefined {
  try {
    return JSON.parse(readFileSync(lockFile, "utf8")) as Owner
  } catch {
    // Gone already, or created but not yet written by its owner: both mean "retry".
    return undefined
  }
}

function isGone(owner: Owner): boolean {
  if (owner.host !== hostname()) return false // a pid on another machine cannot be checked
  try {
    process.kill(owner.pid, 0)
    return false
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ESRCH"
  }
}

/** Removes a dead owner's lock; a second lock file makes sure two rescuers cannot remove a new owner's lock. */
function takeOver(lockFile: string, staleToken: string): void {
  const guard = `${lockFile}.takeover`
  if (!tryCreate(guard, String(process.pid))) {
    // A rescuer that died inside these few lines leaves its guard behind: age tells.
    try {
      if (Date.now() - statSync(guard).mtimeMs > 2_000) unlinkSync(guard)
    } catch {}
    return
  }
  try {
    if (readOwner(lockFile)?.token === staleToken) unlinkSync(lockFile)
  } finally {
    unlinkSync(guard)
  }
}

function releaseIfMine(lockFile: string, token: string): void {
  if (readOwner(lockFile)?.token === token) unlinkSync(lockFile)
}
