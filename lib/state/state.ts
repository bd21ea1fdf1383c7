// The factory of the run state's seam (lib/state/run-state.ts): the one place that picks its backend, as
// lib/store/open.ts does for the tasks. flow.yaml `state:` (or FLOW_DATABASE_URL) makes it the shared
// PostgreSQL database (docs/FLEET.md); otherwise it is .flow/state.db. The database's client loads only for a
// shared project, and the file backend costs a command what it always did.
import { existsSync } from "node:fs"
import { runLockTarget, type Project } from "../cli/project"
import type { LiveRun } from "../model/json-shapes"
import { lockHolder } from "../store/lock"
import type { RunState } from "./run-state"
import { stateFile } from "./state-file"

export type { LiveRun }

/** The project's run state, created when missing (.flow/ and state.db for a project in files). */
export async function openState(project: Project): Promise<RunState> {
  const shared = await sharedState(project)
  if (shared) return shared
  const { openStateDb } = await import("./sqlite/state-db")
  return openStateDb(project)
}

/** The run state if there is one, else undefined: read-only commands must not create files. */
export async function openExistingState(project: Project): Promise<RunState | undefined> {
  const shared = await sharedState(project)
  if (shared) return shared
  // Asked here, before the import: the SQLite module loads bun:sqlite (about 80 page faults), and list, show
  // and next on a project that never ran have no state.db to read (docs/PERFORMANCE.md, "Start-up").
  if (!existsSync(stateFile(project))) return undefined
  const { openExistingStateDb } = await import("./sqlite/state-db")
  return openExistingStateDb(project)
}

async function sharedState(project: Project): Promise<RunState | undefined> {
  const { storeSetting } = await import("../store/setting")
  const setting = await storeSetting(project)
  if (setting.kind === "file") return undefined
  const [{ database }, { PgRunState }] = await Promise.all([import("../store/postgres/connection"), import("./postgres/pg-state")])
  return PgRunState.open(database(setting), setting)
}

/**
 * The live `flow run`s of the project, oldest first: in files, at most the live holder of this clone's
 * `.flow/run.lock`; on a shared project every run holding the database's run lock whatever the machine
 * (docs/FLEET.md, "What each command shows"), each with its `machine` and `since` on the database's clock, as
 * the run state's times are.
 */
export async function liveRuns(project: Project): Promise<LiveRun[]> {
  const { storeSetting } = await import("../store/setting")
  const setting = await storeSetting(project)
  if (setting.kind === "file") {
    const holder = lockHolder(runLockTarget(project))
    return holder ? [{ pid: holder.pid, since: holder.since }] : []
  }
  const { liveRunHolders } = await import("../store/postgres/run-lock")
  return (await liveRunHolders(setting)).map((h) => ({ pid: h.pid, since: h.at, machine: h.machine }))
}
