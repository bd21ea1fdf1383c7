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
