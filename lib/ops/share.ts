// Moving a project between the file store and a shared PostgreSQL store (docs/FLEET.md, "The shared store"):
// `flow share` imports tasks.yaml and .flow/state.db into the database and writes the setting into
// flow.yaml; `flow export` writes the graph as tasks.yaml text; `flow unshare` writes tasks.yaml and
// state.db back from the database and removes the setting (the database keeps the project unless dropped).
// These are the only commands that know both backends: they move a project from one to the other.
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs"
import { basename, join, resolve } from "node:path"
import { Exit, FlowError, usage } from "../cli/errors"
import { PROJECT_KEY, type Project, projectAt, runLockTarget } from "../cli/project"
import type { ExportReport, ShareReport, UnshareReport } from "../model/json-shapes"
import { indexTasks, type TaskFile } from "../model/task-index"
import { openExistingStateDb, openStateDb, stateFile } from "../state/sqlite/state-db"
import type { StateDump } from "../state/run-state"
import { PgRunState } from "../state/postgres/pg-state"
import { writeFileAtomic } from "../store/atomic-write"
import { FileStore } from "../store/file/file-store"
import { lockHolder } from "../store/lock"
import { database } from "../store/postgres/connection"
import { createProject, dropProject } from "../store/postgres/share"
import { isPostgresUrl, parseUrl, sameDatabase } from "../store/postgres/url"
import { keyOf, sharedSetting, storeSetting } from "../store/setting"
import { writeSharedKeys } from "../store/setting-edit"
import { lockSharedRun, openStore } from "../store/open"
import { ensureStateDir } from "../store/valid-cache"

/** `flow share <url> [--project <key>]`: the project's graph and run state into the database, then flow.yaml. */
export async function shareProject(project: Project, given: string, key?: string): Promise<ShareReport> {
  const current = await storeSetting(project)
  if (current.kind === "postgres") {
    throw new FlowError(
      `this project is shared already: ${current.shown} (project ${current.key})`,
      Exit.failure,
      "run 'flow unshare' first to move it elsewhere",
    )
  }
  refuseLiveRun(project, "share")
  if (!isPostgresUrl(given)) throw usage("flow share takes a postgres:// URL", "for example: flow share postgres://flow@db.example.com/flow")
  const url = parseUrl(given, "the URL")
  const projectKey = key ?? keyOf(basename(project.dir))
  if (!PROJECT_KEY.test(projectKey)) {
    throw usage(`'${projectKey}' is not a project key`, "use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit (at most 63)")
  }
  const envUrl = project.storeEnv?.url ? parseUrl(project.storeEnv.url.reveal(), "FLOW_DATABASE_URL") : undefined
  const password = url.password ?? (envUrl && sameDatabase(url, envUrl) ? envUrl.password : undefined) ?? project.storeEnv?.password
  const setting = sharedSetting(project, url, projectKey, password)

  const files = new FileStore(project)
  let data: TaskFile = { tasks: [] }
  let text: string | null = null
  if (await files.exists()) ({ data, text } = await files.read())
  const dump = await readFileState(project)

  const db = database(setting)
  await db.run((sql) =>
    sql.begin(async (tx) => {
      await createProject(tx, setting, data, text)
      await PgRunState.creating(db, setting).loadInto(tx, dump)
    }),
  )
  // flow.yaml last: a failure before leaves the database without the project, a failure here removes it.
  try {
    writeSharedKeys(project.dir, { state: setting.shown, project: projectKey })
  } catch (e) {
    await db.run((sql) => sql.begin((tx) => dropProject(tx, projectKey))).catch(() => {})
    throw e
  }
  return { database: setting.shown, project: projectKey, tasks: indexTasks(data).size, questions: dump.questions.length, events: dump.events.length }
}

/** `flow export [<file>]`: the graph as tasks.yaml text (a shared project's on the text it came from). */
export async function exportTasks(project: Project, cwd: string, file?: string): Promise<ExportReport> {
  const store = await openStore(project)
  const text = await store.text()
  const target = file === undefined ? project.tasksFile : resolve(cwd, file)
  return { file: target, tasks: countTasks(text), written: writeIfChanged(target, text) }
}

/** `flow unshare [--drop]`: tasks.yaml and .flow/state.db written from the database, then the setting removed. */
export async function unshareProject(project: Project, opts: { drop?: boolean } = {}): Promise<UnshareReport> {
  const setting = await storeSetting(project)
  if (setting.kind !== "postgres") throw new FlowError("this project is not shared: its tasks are in tasks.yaml already", Exit.failure)
  // Every run of this project, this clone's too, shares the database's run lock; unshare holds it alone, so it
  // is refused while any run lives, naming every one, and no run starts while the tasks and state move.
  const release = await lockSharedRun(
    project,
    "flow unshare",
    "exclusive",
    (heldBy, machines) =>
      new FlowError(
        `${heldBy}: its tasks and state must not move under it`,
        Exit.failure,
        `stop ${machines.length > 1 ? "them" : "it"}${machines.length ? ` on ${machines.join(", ")}` : ""} (q in its screen, or Ctrl-C), then run 'flow unshare' again`,
      ),
  )
  try {
    const text = await (await openStore(project)).text()
    const dump = await (await PgRunState.open(database(setting), setting)).dump()
    await writeFileState(project, dump)
    const written = writeIfChanged(project.tasksFile, text)
    writeSharedKeys(project.dir, undefined)
    const dropped = opts.drop ? await database(setting).run((sql) => sql.begin((tx) => dropProject(tx, setting.key))) : false
    return {
      file: project.tasksFile,
      tasks: countTasks(text),
      written,
      database: setting.shown,
      project: setting.key,
      dropped,
      questions: dump.questions.length,
      events: dump.events.length,
    }
  } finally {
    await release?.()
  }
}

function refuseLiveRun(project: Project, verb: string): void {
  const run = lockHolder(runLockTarget(project))
  if (run) {
    throw new FlowError(
      `a run of this project is live (pid ${run.pid}${run.host ? ` on ${run.host}` : ""}): its tasks and state must not move under it`,
      Exit.failure,
      `stop it (q in its screen, or Ctrl-C), then run 'flow ${verb}' again`,
    )
  }
}

async function readFileState(project: Project): Promise<StateDump> {
  const db = await openExistingStateDb(project)
  if (!db) return { questions: [], events: [], agents: [], merges: [], moves: [] }
  using open = db
  return open.dump()
}

/** .flow/state.db replaced by one holding `dump`: written beside it, then renamed over it. */
async function writeFileState(project: Project, dump: StateDump): Promise<void> {
  ensureStateDir(project.stateDir)
  const scratch = mkdtempSync(join(project.stateDir, "unshare-"))
  try {
    const fresh = { ...projectAt(project.dir), stateDir: scratch }
    {
      using db = await openStateDb(fresh)
      await db.load(dump)
    }
    const target = stateFile(project)
    for (const suffix of ["-wal", "-shm"]) rmSync(`${target}${suffix}`, { force: true })
    renameSync(stateFile(fresh), target)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

function writeIfChanged(file: string, text: string): boolean {
  if (existsSync(file) && readFileSync(file, "utf8") === text) return false
  writeFileAtomic(file, text)
  return true
}

function countTasks(text: string): number {
  return indexTasks((Bun.YAML.parse(text) ?? { tasks: [] }) as TaskFile).size
}
