// A project's graph entering the shared store (`flow share`) and leaving it (`flow unshare --drop`), inside
// the caller's transaction so that the graph and the run state move together or not at all.
import type { SQL } from "bun"
import { Exit, FlowError } from "../../cli/errors"
import type { TaskFile } from "../../model/task-index"
import type { SharedSetting } from "../setting"
import { PgTaskStore } from "./pg-store"
import { jsonSafe } from "./rows"

/**
 * Creates the project with its graph; `text` is the tasks.yaml it came from (export writes onto it). A key the
 * database holds already is refused: two folders named alike must not mix their graphs.
 */
export async function createProject(tx: SQL, setting: SharedSetting, data: TaskFile, text: string | null): Promise<void> {
  const bad = jsonSafe(data)
  if (bad !== undefined) {
    throw new FlowError(
      `tasks.yaml holds a value the shared store cannot keep as it is, at ${bad} (.inf, .nan or a tagged value)`,
      Exit.invalid,
      "write it as a string or a finite number, then share again",
    )
  }
  const [row] = await tx`INSERT INTO projects (key, top) VALUES (${setting.key}, '{}'::json) ON CONFLICT (key) DO NOTHING RETURNING key`
  if (!row) {
    throw new FlowError(
      `the database at ${setting.shown} already holds a project '${setting.key}'`,
      Exit.failure,
      `pick another key with --project <key>; to join that project instead, put 'state: ${setting.shown}' and 'project: ${setting.key}' in flow.yaml`,
    )
  }
  await PgTaskStore.open(setting).write(tx, data, text, 1)
}

/** Deletes the project and everything of it (every table's rows go with the project's, ON DELETE CASCADE). */
export async function dropProject(tx: SQL, key: string): Promise<boolean> {
  const rows = await tx`DELETE FROM projects WHERE key = ${key} RETURNING key`
  return rows.length > 0
}
