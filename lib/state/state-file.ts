// Where a project's own run state lives, apart from lib/state/sqlite/state-db.ts: lib/state/state.ts asks
// whether the file exists before it loads that module and bun:sqlite (docs/PERFORMANCE.md, "Start-up").
import { join } from "node:path"
import type { Project } from "../cli/project"

/** The file of a project's own run state (not shared): .flow/state.db. */
export function stateFile(project: Project): string {
  return join(project.stateDir, "state.db")
}
