// What a landing waits for, kept where every surface reads it (docs/RUN.md, "Landing"): a task whose merge
// passed but whose target cannot move because something of the person's is in the way of their checkout (an
// uncommitted change, a merge or rebase in progress, a git lock). The merge queue writes a row when it says
// the wait (once, like the log) and deletes it when the wait ends; `flow show`, `flow dashboard` and the
// inspector read it. A row counts only while the run that wrote it holds the run lock (on a shared project,
// the database's, whatever the machine): a killed run's rows are never shown, and the next run's start on its
// machine deletes them.
import type { Project } from "../cli/project"
import type { LandingWait, LiveRun } from "../model/json-shapes"
import type { RunState } from "../state/run-state"
import { liveRuns, openExistingState } from "../state/state"

export class LandingWaits {
  constructor(private db: RunState) {}

  /** Records (or rewords) what the task's landing waits for; `since` stays the wait's first. */
  async set(taskId: string, target: string, reason: string): Promise<void> {
    await this.db.landingWaits.set(taskId, target, reason, process.pid)
  }

  /** The task's landing waits no more (it moved, left the queue, or the run stops). */
  async clear(taskId: string): Promise<void> {
    await this.db.landingWaits.clear(taskId)
  }

  /** Forgets every wait: a run's start (what a dead run said is no longer true). */
  async clearAll(): Promise<void> {
    await this.db.landingWaits.clearAll()
  }
}

/** The landing waits of the live runs, by task; none without a state database or a live run. Creates nothing. */
export async function readLandingWaits(project: Project): Promise<Map<string, LandingWait>> {
  const runs = await liveRuns(project)
  if (runs.length === 0) return new Map()
  const db = await openExistingState(project)
  if (!db) return new Map()
  using open = db
  return landingWaitsOf(open, runs)
}

/** The landing waits that the live runs `runs` wrote, by task, from an open database. */
export async function landingWaitsOf(db: RunState, runs: readonly LiveRun[]): Promise<Map<string, LandingWait>> {
  const waits = new Map<string, LandingWait>()
  for (const run of runs)
    for (const r of await db.landingWaits.ofRun(run.pid, run.machine))
      waits.set(r.task_id, { task: r.task_id, target: r.target, reason: r.reason, since: r.since })
  return waits
}
