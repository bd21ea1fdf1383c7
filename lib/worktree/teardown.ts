// flow.yaml's `teardown`, run in a worktree before it is removed (docs/RUN.md, "Preparing worktrees"): by the
// run when a task's work landed or its worktree goes, by the merge queue for a check's scratch worktree, and
// by `flow repo worktree remove` outside a run (lib/ops/task-worktree.ts).
import { existsSync } from "node:fs"
import { join } from "node:path"
import { RUN_ID } from "../cli/run-id"
import { repoEntries, type FlowConfig } from "../config/config"
import { excludeEnv } from "../git/git"
import { entryResolver } from "../git/repo-entries"
import type { Workspace } from "../git/workspace"
import { toCheck } from "./command"
import { DEFAULTS, entriesOf, runHook, type WorktreeSettings } from "./hooks"

/**
 * Runs flow.yaml's teardown in the worktree before it is removed. Whether the removal may go on: yes when it
 * succeeded, failed (said on the bus: the person reads how) or there is none; no when the run stopped during
 * it (the next run's recovery removes the worktree, and tears it down first). `onGroup` records each process
 * group it starts, for the reaper.
 */
export async function teardownWorktree(
  s: WorktreeSettings,
  taskId: string,
  ws: Pick<Workspace, "repo" | "path">,
  onGroup: (pid: number) => void,
): Promise<boolean> {
  if (!existsSync(ws.path)) return true
  const entry = await entriesOf(s.project.dir, s.prepare).teardown(ws.repo)
  if (!entry) return true
  if (s.signal.aborted) return false
  const env = teardownEnv(s.project.dir, s.project.stateDir, taskId, ws.path)
  const check = toCheck(entry, "teardown", DEFAULTS.teardown)
  await runHook(s, "teardown", check, { taskId, cwd: ws.path, env, onGroup, signal: s.signal })
  return !s.signal.aborted
}

/** A teardown's environment: where it runs and for which task, flow on its PATH, and git's view of flow's copies. */
export function teardownEnv(projectDir: string, stateDir: string, taskId: string, path: string): Record<string, string | undefined> {
  const base = {
    FLOW_PROJECT: projectDir,
    FLOW_TASK_ID: taskId,
    FLOW_WORKTREE: path,
    FLOW_RUN_ID: RUN_ID,
    PATH: `${join(stateDir, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  }
  return { ...base, ...excludeEnv(path, { ...process.env, ...base }) }
}

/** The teardown command of the repository `repo` in flow.yaml, as it runs; undefined when there is none. */
export async function teardownOf(projectDir: string, config: FlowConfig, repo: string) {
  const entry = await entryResolver(projectDir, repoEntries(config, "teardown"), "teardown")(repo)
  return entry && toCheck(entry, "teardown", DEFAULTS.teardown)
}
