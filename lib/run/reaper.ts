// No agent outlives its run. Each agent runs in a process group of its own, started through
// `setpriv --pdeathsig KILL` (lib/cli/proc.ts), so the kernel kills its leader when the run dies, even by
// SIGKILL. What the leader started (a shell's `sleep`, an agent's tools) does not inherit that, so every
// group is also recorded in the state database (table `agent_groups`) with its leader's start time, and
// `reap` kills what is left of the recorded groups: at the start of every run (they belong to a dead run:
// the run lock says no other run is alive) and at its end.
//
// A recorded group is killed only when it is provably the same group: its leader is alive with the start
// time recorded (/proc/<pid>/stat field 22: a reused pid has another), or its leader is gone and processes
// still carry its group id (Linux keeps a pid number from reuse while any process uses it as a group id).
// Without /proc (not Linux) nothing can be proven, so nothing is killed.
import { existsSync, readdirSync, readFileSync } from "node:fs"
import type { StateDb } from "./state-db"

/** Fields 3 and on of /proc/<pid>/stat (after the command name, which may hold spaces and parentheses). */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** The process's start time in clock ticks since boot (field 22), or undefined when it is gone. */
export function startTime(pid: number): string | undefined {
  return statFields(pid)?.[19]
}

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

type GroupRow = { pgid: number; started: string; task_id: string | null }

export class AgentGroups {
  constructor(private db: StateDb) {}

  /** Records a group just started (its leader is `pid`); a leader gone already needs no record. */
  async track(pid: number, taskId: string): Promise<void> {
    const started = startTime(pid)
    if (started === undefined) return
    await this.db.transact((db) => {
      db.query("INSERT OR REPLACE INTO agent_groups (pgid, started, run_pid, task_id, at) VALUES (?, ?, ?, ?, ?)")
        .run(pid, started, process.pid, taskId, new Date().toISOString())
    })
  }

  /** Kills what is left of every recorded group (provably the same group, above) and forgets them all. */
  async reap(): Promise<string[]> {
    if (!existsSync("/proc/self/stat")) return []
    const rows = await this.db.read((db) => db.query<GroupRow, []>("SELECT pgid, started, task_id FROM agent_groups").all())
    const killed: string[] = []
    let live: Set<number> | undefined
    for (const row of rows) {
      const leader = startTime(row.pgid)
      const same = leader === undefined ? (live ??= liveGroups()).has(row.pgid) : leader === row.started
      if (!same) continue
      try {
        process.kill(-row.pgid, "SIGKILL")
        killed.push(row.task_id ?? String(row.pgid))
      } catch {}
    }
    if (rows.length > 0) await this.db.transact((db) => db.query("DELETE FROM agent_groups").run())
    return killed
  }
}
