// Whether a process recorded earlier (in a lock file, a temp file's name) still runs. A pid alone is not
// enough: after a crash the number can be given to another program, so on Linux a record also carries the
// process's start time (field 22 of /proc/<pid>/stat, in clock ticks since boot) and the boot id; a pid
// whose start time differs is a different process. Elsewhere only the pid is checked. A run of a shared
// project is recorded with its pid namespace too (isGoneHere), so that another process may prove it dead.
import { readdirSync, readFileSync, readlinkSync } from "node:fs"

/** Fields 3 and on of /proc/<pid>/stat (index 0 is the state), or undefined when unknown (no /proc, no such process). */
export function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** The start time of process `pid` (clock ticks since boot), or undefined when unknown (no /proc, no such process). */
export function processStartTime(pid: number): string | undefined {
  return statFields(pid)?.[19]
}

/** The CPU time process `pid` has used so far (utime + stime, clock ticks), or undefined when unknown. */
export function processCpuTicks(pid: number): number | undefined {
  const fields = statFields(pid)
  return fields && Number(fields[11]) + Number(fields[12])
}

/** Whether process `pid` is stopped (SIGSTOP, Ctrl-Z, a debugger: state T or t), or undefined when unknown. */
export function isProcessStopped(pid: number): boolean | undefined {
  const state = statFields(pid)?.[0]
  return state === undefined ? undefined : state === "T" || state === "t"
}

let boot: string | undefined | null = null

/** This boot's id (Linux), so that a record written before a reboot is known to be dead. */
export function bootId(): string | undefined {
  if (boot === null) {
    try {
      boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
    } catch {
      boot = undefined
    }
  }
  return boot
}

/** True only when `pid` certainly does not run (a process of another user still counts as running). */
export function isPidDead(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return true
  try {
    process.kill(pid, 0)
    return false
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ESRCH"
  }
}

let namespace: string | undefined | null = null

/**
 * This process's pid namespace (Linux: `pid:[<inode>]` of /proc/self/ns/pid). Containers of one kernel share
 * its boot id but not their pids: a pid means the same process only within one namespace.
 */
export function pidNamespace(): string | undefined {
  if (namespace === null) {
    try {
      namespace = readlinkSync("/proc/self/ns/pid")
    } catch {
      namespace = undefined
    }
  }
  return namespace
}

/** A process as another process of the same machine can later prove it dead (isGoneHere). */
export type ProcessMark = { pid: number; start?: string; boot?: string; pidNs?: string }

/** This process's mark: its pid, start time, boot id and pid namespace (the last three unknown without /proc). */
export function thisProcess(): ProcessMark {
  return { pid: process.pid, start: processStartTime(process.pid), boot: bootId(), pidNs: pidNamespace() }
}

/**
 * True only with proof that `mark` is a process of this boot and pid namespace that no longer runs: its pid is
 * free, a zombie's, or another process's (another start time). A mark missing any part, or of another boot or
 * namespace, proves nothing (false): unlike isRecordedProcessGone, another boot is not taken for a reboot,
 * since the mark may come from another machine whose name was mistaken for this one's.
 */
export function isGoneHere(mark: ProcessMark): boolean {
  if (!mark.start || !mark.boot || !mark.pidNs || mark.boot !== bootId() || mark.pidNs !== pidNamespace()) return false
  if (isPidDead(mark.pid)) return true
  const fields = statFields(mark.pid)
  if (!fields) return isPidDead(mark.pid) // gone between the two looks
  return fields[0] === "Z" || fields[0] === "X" || fields[19] !== mark.start
}

/** True when the process recorded as (pid, start time, boot id) no longer runs, its pid possibly reused. */
export function isRecordedProcessGone(pid: number, start?: string, bootOf?: string): boolean {
  if (bootOf && bootId() && bootOf !== bootId()) return true
  if (isPidDead(pid)) return true
  if (start === undefined) return false
  const now = processStartTime(pid)
  return now !== undefined && now !== start
}

/**
 * Whether a git process runs with its working folder in `dir` or below (Linux: /proc). A lock file git left
 * there is held only while its git runs: with none running, it is a killed git's. Without /proc nothing can
 * be proven: true.
 */
export function gitRunningIn(dir: string): boolean {
  let names: string[]
  try {
    names = readdirSync("/proc")
  } catch {
    return true
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    if (!isGitProcess(name)) continue
    try {
      const cwd = readlinkSync(`/proc/${name}/cwd`)
      if (cwd === dir || cwd.startsWith(`${dir}/`)) return true
    } catch {} // gone meanwhile, or another user's: its folder is not readable, and it is not flow's
  }
  return false
}

/** Whether process `pid` is git itself (its command name), false when unknown (gone, no /proc). */
export function isGitProcess(pid: number | string): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("git")
  } catch {
    return false
  }
}
