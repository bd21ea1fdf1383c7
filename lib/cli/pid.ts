// Whether a process recorded earlier (in a lock file, a temp file's name) still runs. A pid alone is not
// enough: after a crash the number can be given to another program, so on Linux a record also carries the
// process's start time (field 22 of /proc/<pid>/stat, in clock ticks since boot) and the boot id; a pid
// whose start time differs is a different process. Elsewhere only the pid is checked.
import { readFileSync } from "node:fs"

/** The start time of process `pid` (clock ticks since boot), or undefined when unknown (no /proc, no such process). */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return fields[19]
  } catch {
    return undefined
  }
}

/** The CPU time process `pid` has used so far (utime + stime, clock ticks), or undefined when unknown. */
export function processCpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return undefined
  }
}

/** Whether process `pid` is stopped (SIGSTOP, Ctrl-Z, a debugger: state T or t), or undefined when unknown. */
export function isProcessStopped(pid: number): boolean | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const state = stat[stat.lastIndexOf(")") + 2]
    return state === "T" || state === "t"
  } catch {
    return undefined
  }
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

/** True when the process recorded as (pid, start time, boot id) no longer runs, its pid possibly reused. */
export function isRecordedProcessGone(pid: number, start?: string, bootOf?: string): boolean {
  if (bootOf && bootId() && bootOf !== bootId()) return true
  if (isPidDead(pid)) return true
  if (start === undefined) return false
  const now = processStartTime(pid)
  return now !== undefined && now !== start
}
