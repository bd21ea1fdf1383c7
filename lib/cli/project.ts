// Which project a command works on: FLOW_PROJECT, or the nearest ancestor of the working directory
// (which `-C <dir>` sets) holding tasks.yaml or PRD.md.
import { existsSync, statSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import type { Ctx } from "./context"
import { Exit, FlowError, usage } from "./errors"

export type Project = {
  dir: string
  tasksFile: string
  stateDir: string
  /** how long a write waits for another process's lock on tasks.yaml (FLOW_LOCK_TIMEOUT, in seconds; default 30) */
  lockTimeoutMs: number
}

const MARKERS = ["tasks.yaml", "PRD.md"]

export function projectAt(dir: string, env: Ctx["env"] = {}): Project {
  const seconds = Number(env.FLOW_LOCK_TIMEOUT ?? 30)
  if (!(seconds > 0)) throw new FlowError(`FLOW_LOCK_TIMEOUT must be a positive number of seconds (was '${env.FLOW_LOCK_TIMEOUT}')`, Exit.usage)
  return { dir, tasksFile: join(dir, "tasks.yaml"), stateDir: join(dir, ".flow"), lockTimeoutMs: seconds * 1000 }
}

/** What `flow run` locks (`.flow/run.lock`): one run per project, and how others tell a run is live. */
export function runLockTarget(project: Project): string {
  return join(project.stateDir, "run")
}

/** The project this command is about; a FlowError that says what was looked for where when there is none. */
export function findProject(ctx: Ctx): Project {
  const forced = ctx.env.FLOW_PROJECT
  if (forced) {
    const dir = resolve(ctx.cwd, forced)
    if (!isDir(dir)) throw new FlowError(`FLOW_PROJECT names ${dir}, which is not a folder`, Exit.invalid, "unset FLOW_PROJECT or point it at a project folder")
    return projectAt(dir, ctx.env)
  }
  let dir = resolve(ctx.cwd)
  for (;;) {
    if (MARKERS.some((m) => existsSync(join(dir, m)))) return projectAt(dir, ctx.env)
    const up = dirname(dir)
    if (up === dir) break
    dir = up
  }
  throw new FlowError(
    `no flow project here: looked for ${MARKERS.join(" or ")} in ${resolve(ctx.cwd)} and every folder above it`,
    Exit.invalid,
    "run 'flow create <name>' to start a project, or pass -C <dir> (or set FLOW_PROJECT) to point at one",
  )
}

/** Whether `path` is a folder (following links). */
export function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * A folder named on the command line (`-C`, `init`, `repo worktree`), resolved; one that is missing or not a
 * folder is a bad value: a usage error (exit 2) naming it as given and, when that differs, as resolved.
 */
export function folderArgument(given: string, resolved: string, hint?: string): string {
  const stat = statSync(resolved, { throwIfNoEntry: false })
  if (stat?.isDirectory()) return resolved
  const named = given === resolved ? given : `${given} (${resolved})`
  throw usage(stat ? `${named} is not a folder` : `the folder ${named} does not exist`, hint)
}
