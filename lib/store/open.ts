// The factory of the store seam (lib/store/store.ts): the one place that picks a task store's backend.
import type { Project } from "../cli/project"
import type { TaskStore } from "./store"

/**
 * The project's task store (flow.yaml `state:` or FLOW_DATABASE_URL choose it: lib/store/setting.ts). Cheap
 * for the file store: one small read of flow.yaml; the database's client loads only for a shared project.
 */
export async function openStore(project: Project): Promise<TaskStore> {
  const { storeSetting } = await import("./setting")
  const setting = await storeSetting(project)
  if (setting.kind === "file") {
    const { FileStore } = await import("./file/file-store")
    return new FileStore(project)
  }
  const { PgTaskStore } = await import("./postgres/pg-store")
  return PgTaskStore.open(setting)
}

/**
 * Readies a shared project's database for a run, before its first use: the process's pools may open several
 * connections, as a run's workers, landings and renewals query at once (every other command keeps to one:
 * lib/store/postgres/connection.ts). Nothing in files.
 */
export async function openForRun(project: Project): Promise<void> {
  const { storeSetting } = await import("./setting")
  if ((await storeSetting(project)).kind === "file") return
  const { widenPools } = await import("./postgres/connection")
  widenPools()
}

/**
 * A shared project's run lock, taken for `command` (docs/FLEET.md, "Many runs per shared project"): shared with
 * every other run for a run (`{ run: <its RUN_ID> }`), alone for what must have no run live (`"exclusive"`). Its
 * release, or the FlowError `refuse` makes of who holds it in the way (what heldBy says, and the holders'
 * machines). `onLost` hears of the lock lost with its connection and refused
 * when taken again. A project in files has none (its .flow/run.lock is the whole story): undefined.
 */
export async function lockSharedRun(
  project: Project,
  command: string,
  mode: { run: string } | "exclusive",
  refuse: (heldBy: string, machines: string[]) => Error,
  onLost?: (heldBy: string) => void,
): Promise<(() => Promise<void>) | undefined> {
  const { storeSetting } = await import("./setting")
  const setting = await storeSetting(project)
  if (setting.kind === "file") return undefined
  const { heldBy, tryRunLock } = await import("./postgres/run-lock")
  const lock = await tryRunLock(setting, command, mode, onLost)
  if ("holders" in lock) {
    throw refuse(heldBy(setting, lock.holders, command), [...new Set(lock.holders.map((h) => h.machine))])
  }
  return lock.held.release
}
