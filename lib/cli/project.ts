// Which project a command works on: FLOW_PROJECT, or the nearest ancestor of the working directory
// (which `-C <dir>` sets) holding tasks.yaml or PRD.md, or a flow.yaml naming a shared store (`state:`, whose
// graph is in the database: docs/FLEET.md).
import { existsSync, readFileSync, statSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import type { Ctx } from "./context"
import { Exit, FlowError, usage } from "./errors"
import { Secret } from "./secret"

export type Project = {
  dir: string
  tasksFile: string
  stateDir: string
  /** how long a write waits for another process's lock on tasks.yaml (FLOW_LOCK_TIMEOUT, in seconds; default 30) */
  lockTimeoutMs: number
  /** what the environment says about a shared store (docs/FLEET.md); absent: nothing */
  storeEnv?: StoreEnv
}

/**
 * FLOW_DATABASE_URL (a shared store's URL, with its password if any), PGPASSWORD, and FLOW_MACHINE (this
 * machine's name in the shared run state; default the host name). The secrets never print (lib/cli/secret.ts).
 */
export type StoreEnv = { url?: Secret; password?: Secret; machine?: string }

const MARKERS = ["tasks.yaml", "PRD.md"]

/** A project's key in a shared store: what `flow share --project` and flow.yaml's `project:` take. */
export const PROJECT_KEY = /^[a-z0-9][a-z0-9._-]{0,62}$/

export function projectAt(dir: string, env: Ctx["env"] = {}): Project {
  const seconds = Number(env.FLOW_LOCK_TIMEOUT ?? 30)
  if (!(seconds > 0)) throw new FlowError(`FLOW_LOCK_TIMEOUT must be a positive number of seconds (was '${env.FLOW_LOCK_TIMEOUT}')`, Exit.usage)
  const project: Project = { dir, tasksFile: join(dir, "tasks.yaml"), stateDir: join(dir, ".flow"), lockTimeoutMs: seconds * 1000 }
  const storeEnv: StoreEnv = {}
  if (env.FLOW_DATABASE_URL) storeEnv.url = new Secret(env.FLOW_DATABASE_URL)
  if (env.PGPASSWORD) storeEnv.password = new Secret(env.PGPASSWORD)
  if (env.FLOW_MACHINE) storeEnv.machine = env.FLOW_MACHINE
  if (Object.keys(storeEnv).length > 0) project.storeEnv = storeEnv
  return project
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
    if (MARKERS.some((m) => existsSync(join(dir, m))) || sharedAt(dir)) return projectAt(dir, ctx.env)
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

/** Whether `dir` holds a flow.yaml that names a shared store (a `state:` key at the top): a cheap look, no parse. */
export function sharedAt(dir: string): boolean {
  try {
    return /^state:/m.test(readFileSync(join(dir, "flow.yaml"), "utf8"))
  } catch {
    return false
  }
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
