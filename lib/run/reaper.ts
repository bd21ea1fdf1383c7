// No agent outlives its run. Each agent (and each check) runs in a process group of its own, led by a guard
// that the kernel signals when the run dies, even by SIGKILL, and that then kills its group (lib/cli/proc.ts).
// What leaves the group (a session of its own), or a group without the guard (no setpriv or bash), outlives
// that, so every group is also recorded in the state database (table `agent_groups`) with its leader's start time, and
// `reap` kills what is left of the recorded groups: at the start of every run (they belong to a dead run:
// the run lock says no other run is alive) and at its end.
//
// A recorded group is killed only when it is provably the same group: its leader is alive with the start
// time recorded (/proc/<pid>/stat field 22: a reused pid has another), or its leader is gone and processes
// still carry its group id (Linux keeps a pid number from reuse while any process uses it as a group id).
// Without /proc (not Linux) nothing can be proven, so nothing is killed.
//
// Groups are not enough: an agent CLI may start its tools in a session of their own (OpenCode does: its
// `sleep 300` survived the group's SIGKILL, reparented to init). Environments are inherited across that, so
// every agent also gets FLOW_RUN_ID, and `reap` also kills every process whose environment carries this
// project's FLOW_PROJECT with a FLOW_RUN_ID: at a run's start they are what a dead run's agents left, at its
// end what this run's left. A person's shell never has FLOW_RUN_ID, so it is never touched.
//
// Git is the exception: a git that outlived a killed flow is never killed (a merge killed half way leaves
// MERGE_HEAD and lock files in the person's checkout). The next run waits for it instead (`awaitOrphanGit`):
// every git flow starts names flow's pid in FLOW_GIT_OWNER, and one whose owner is dead is an orphan.
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { isGitProcess, processStartTime, statFields } from "../cli/pid"
import { GIT_OWNER } from "../git/git"
import type { RunState } from "../state/run-state"
import * as clock from "../cli/clock"

/** The process groups (field 5) that have a live member, from one scan of /proc. */
function liveGroups(): Set<number> {
  const groups = new Set<number>()
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    const fields = statFields(name)
    if (fields && fields[0] !== "Z") groups.add(Number(fields[2]))
  }
  return groups
}

export class AgentGroups {
  constructor(private db: RunState) {}

  /** Records a group just started (its leader is `pid`); a leader gone already needs no record. */
  async track(pid: number, taskId: string): Promise<void> {
    const started = processStartTime(pid)
    if (started === undefined) return
    await this.db.groups.track({ pgid: pid, started, run_pid: process.pid, task_id: taskId })
  }

  /** `track` for the groups one task's command starts; a record that fails must not stop the command. */
  tracker(taskId: string): (pid: number) => void {
    return (pid) => void this.track(pid, taskId).catch(() => {})
  }

  /**
   * Kills what is left of every recorded group (provably the same group, above) and forgets them all, then
   * every process an agent of a run of `projectDir` started (its environment says so, above).
   */
  async reap(projectDir: string): Promise<string[]> {
    if (!existsSync("/proc/self/stat")) return []
    // The environments first: they need no record, so a database away (or a full disk) skips nothing of them.
    const byEnvironment = killAgentProcesses(projectDir)
    return [...(await this.reapGroups()), ...byEnvironment]
  }

  private async reapGroups(): Promise<string[]> {
    const rows = await this.db.groups.list()
    const killed: string[] = []
    let live: Set<number> | undefined
    for (const row of rows) {
      const leader = processStartTime(row.pgid)
      const same = leader === undefined ? (live ??= liveGroups()).has(row.pgid) : leader === row.started
      if (!same) continue
      try {
        process.kill(-row.pgid, "SIGKILL")
        killed.push(row.task_id ?? String(row.pgid))
      } catch {}
    }
    if (rows.length > 0) await this.db.groups.clear()
    return killed
  }
}

/** Every other process whose environment this user may read: its pid and its variables (one /proc scan). */
function* environments(): Generator<[pid: string, env: string[]]> {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    try {
      yield [name, readFileSync(`/proc/${name}/environ`, "utf8").split("\0")]
    } catch {} // gone meanwhile, or another user's
  }
}

/** The value of `key` in an environment read by `environments`. */
const envValue = (env: string[], key: string) => env.find((v) => v.startsWith(`${key}=`))?.slice(key.length + 1)

/** Kills the processes whose environment holds FLOW_PROJECT=`projectDir` and a FLOW_RUN_ID; their tasks. */
export function killAgentProcesses(projectDir: string): string[] {
  const killed: string[] = []
  for (const [pid, env] of environments()) {
    if (envValue(env, "FLOW_PROJECT") !== projectDir || envValue(env, "FLOW_RUN_ID") === undefined) continue
    try {
      process.kill(Number(pid), "SIGKILL")
      killed.push(envValue(env, "FLOW_TASK_ID") ?? pid)
    } catch {}
  }
  return killed
}

/** Whether a live git whose flow (FLOW_GIT_OWNER) is dead is still working: what a killed flow left. */
function orphanGitRunning(): boolean {
  for (const [pid, env] of environments()) {
    const owner = envValue(env, GIT_OWNER)
    if (!owner || Number(owner) === process.pid || statFields(pid)?.[0] === "Z") continue
    // Only git itself: what a hook started in the background (a watcher, a server) inherits the mark too and
    // may live for hours; nothing needs to wait for it.
    if (!isGitProcess(pid)) continue
    const ownerState = statFields(owner)?.[0]
    if (ownerState === undefined || ownerState === "Z") return true // a killed flow not yet reaped is a zombie
  }
  return false
}

/**
 * Waits until no git of a dead flow is running (at most `timeoutMs`; a git merge takes milliseconds): the
 * next run must not merge beside a merge that is still finishing.
 */
export async function awaitOrphanGit(timeoutMs = 30_000): Promise<void> {
  if (!existsSync("/proc/self/environ")) return
  const end = clock.systemNow() + timeoutMs
  while (orphanGitRunning() && clock.systemNow() < end) await Bun.sleep(50)
}
