// One live `flow run` per shared project, whatever the machine (docs/FLEET.md, "One run per shared project").
// `.flow/run.lock` is one clone's; this lock is the database's: a session-level advisory lock held on a
// connection reserved for the run's whole life. The server drops a session's advisory locks when its
// connection closes, so a run that ends, fails, is stopped or is killed outright (kill -9) frees the project
// without anyone cleaning up. The lock is the truth; the project's row in `run_locks` only says who holds it,
// for the refusal to quote, and a row left by a dead holder blocks nothing.
import type { ReservedSQL, SQL } from "bun"
import type { SharedSetting } from "../setting"
import { database } from "./connection"
import { missingProject } from "./pg-store"

/**
 * The first key of the run locks' advisory locks: 'flor' in ASCII (the migrations' is 'flow', 0). The second
 * is the project's `run_locks.lock_id`, a number of its own, so two projects never share a lock.
 */
const RUN_LOCK_CLASS = 0x666c6f72

/**
 * Who holds a shared project's run lock, as its row says; absent while the holder has not written it yet.
 * `since` for messages (`2024-05-01 12:01:07 UTC`), `at` the same instant as the run state's times are written.
 */
export type RunHolder = { command: string; machine: string; pid: number; since: string; at: string }

/** A shared project's run lock, held until released (or until this process's connection closes). */
export type HeldRunLock = { release(): Promise<void> }

/**
 * How often a held lock's connection is looked at. A lock whose connection closed (the server restarted, the
 * session was ended) is gone: it is taken again, or, when another holds it by then, the holder is told.
 */
const WATCH_MS = 5_000

/**
 * Takes the project's run lock for `command` (this process, this machine) without waiting: the lock, or who
 * holds it. A FlowError when the database does not hold the project or cannot be reached. `onLost` hears of a
 * lock lost with its connection that another process took meanwhile (what heldBy says of it).
 */
export async function tryRunLock(
  setting: SharedSetting,
  command: string,
  onLost: (heldBy: string) => void = () => {},
): Promise<{ held: HeldRunLock } | { holder: RunHolder | undefined }> {
  const db = database(setting)
  return db.run(async (sql) => {
    const lockId = await lockIdOf(sql, setting)
    const take = () => db.run((sql) => takeOn(sql, lockId, setting, command))
    const conn = await takeOn(sql, lockId, setting, command)
    if (!conn) return { holder: await holderOf(sql, setting.key) }
    const lost = async () => {
      const holder = await db.run((sql) => holderOf(sql, setting.key)).catch(() => undefined)
      onLost(heldBy(setting, holder, command))
    }
    return { held: watch(conn, lockId, take, lost) }
  })
}

/** A connection of its own holding lock `lockId` for `command`, with its row written; undefined: held elsewhere. */
async function takeOn(sql: SQL, lockId: number, setting: SharedSetting, command: string): Promise<ReservedSQL | undefined> {
  const conn = await sql.reserve()
  try {
    const [{ ok }] = await conn`SELECT pg_try_advisory_lock(${RUN_LOCK_CLASS}, ${lockId}) AS ok`
    if (!ok) {
      await conn.release()
      return undefined
    }
    await conn`
      UPDATE run_locks SET command = ${command}, machine = ${setting.machine}, pid = ${process.pid}, backend_pid = pg_backend_pid(), since = now()
      WHERE lock_id = ${lockId}`
    return conn
  } catch (e) {
    // A connection that may hold the lock must not go back to the pool: closed, it lets go of it.
    await conn.close().catch(() => {})
    throw e
  }
}

/** The held lock, looked at every WATCH_MS and taken again when its connection closed. */
function watch(first: ReservedSQL, lockId: number, take: () => Promise<ReservedSQL | undefined>, lost: () => Promise<void>): HeldRunLock {
  let conn: ReservedSQL | undefined = first
  let done = false
  let looking: Promise<void> = Promise.resolve()
  const look = async () => {
    if (conn) {
      try {
        await conn`SELECT 1`
        return
      } catch {
        await conn.close().catch(() => {})
        conn = undefined
      }
    }
    try {
      conn = await take()
    } catch {
      return // the database cannot be reached: nobody there can take the lock from a run that cannot write
    }
    if (!conn) {
      done = true
      await lost()
    }
  }
  const timer = setInterval(() => {
    if (done) return
    looking = looking.then(look).catch(() => {})
  }, WATCH_MS)
  timer.unref()
  return {
    release: async () => {
      done = true
      clearInterval(timer)
      await looking
      if (conn) await unlock(conn, lockId)
    },
  }
}

/** The project's lock number, made on the first lock of the project. */
async function lockIdOf(sql: SQL, setting: SharedSetting): Promise<number> {
  await sql`INSERT INTO run_locks (project) SELECT key FROM projects WHERE key = ${setting.key} ON CONFLICT (project) DO NOTHING`
  const [row] = await sql`SELECT lock_id FROM run_locks WHERE project = ${setting.key}`
  if (!row) throw await missingProject(sql, setting)
  return row.lock_id
}

/**
 * Who holds project `key`'s run lock: its row, when the row was written by the session holding the lock now (a
 * row of an earlier holder, or one the holder has not replaced yet, says nothing about this one). One query.
 */
async function holderOf(sql: SQL, key: string): Promise<RunHolder | undefined> {
  const [row] = await sql`
    SELECT r.command, r.machine, r.pid, to_char(r.since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since,
           to_char(r.since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
    FROM run_locks r JOIN pg_locks l
      ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid::bigint = ${RUN_LOCK_CLASS}
         AND l.objid::bigint = r.lock_id AND l.pid = r.backend_pid
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    WHERE r.project = ${key}`
  return row ? { command: row.command, machine: row.machine, pid: row.pid, since: row.since, at: row.at } : undefined
}

/**
 * Who holds the project's run lock now, whatever the machine; undefined when no run lives (or its holder has
 * not recorded itself yet). Only looks: a project never run has no row, and none is made.
 */
export async function runLockHolder(setting: SharedSetting): Promise<RunHolder | undefined> {
  return database(setting).run((sql) => holderOf(sql, setting.key))
}

async function unlock(conn: ReservedSQL, lockId: number): Promise<void> {
  try {
    await conn`SELECT pg_advisory_unlock(${RUN_LOCK_CLASS}, ${lockId})`
    await conn.release()
  } catch {
    // The connection is gone (the server restarted, the network dropped): the lock went with it.
    await conn.close().catch(() => {})
  }
}

/**
 * What a refused command says of the holder: "another 'flow run' holds shared project 'shop' (machine
 * laptop-2, pid 4242, since 2024-05-01 12:01:07 UTC)".
 */
export function heldBy(setting: SharedSetting, holder: RunHolder | undefined, command: string): string {
  const project = `shared project '${setting.key}'`
  if (!holder) return `another flow process holds the run lock of ${project} (who, it has not recorded yet)`
  const who = holder.command === command ? `another '${holder.command}'` : `'${holder.command}'`
  return `${who} holds ${project} (machine ${holder.machine}, pid ${holder.pid}, since ${holder.since})`
}
