// Many live `flow run`s per shared project, none while it moves out (docs/FLEET.md, "Many runs per shared
// project"). `.flow/run.lock` is one clone's; this lock is the database's: a session-level advisory lock held
// on a connection of its own for the holder's whole life, shared by every run, exclusive for `flow unshare`. The
// server drops a session's advisory locks when its connection closes, so a holder that ends, fails, is stopped
// or is killed outright (kill -9) lets go without anyone cleaning up. The lock is the truth; the rows only say
// who holds it (a run's row in `live_runs`, the exclusive holder in the project's `run_locks` row), and a row
// counts only while the session that wrote it holds the lock.
import type { ReservedSQL, SQL } from "bun"
import { thisProcess } from "../../cli/pid"
import type { SharedSetting } from "../setting"
import { type Database, database } from "./connection"
import { missingProject } from "./pg-store"

/**
 * The first key of the run locks' advisory locks: 'flor' in ASCII (the migrations' is 'flow', 0). The second
 * is the project's `run_locks.lock_id`, a number of its own, so two projects never share a lock.
 */
const RUN_LOCK_CLASS = 0x666c6f72

/**
 * Who holds a shared project's run lock, as its row says. `since` for messages (`2024-05-01 12:01:07 UTC`),
 * `at` the same instant as the run state's times are written.
 */
export type RunHolder = { command: string; machine: string; pid: number; since: string; at: string; exclusive: boolean }

/** A shared project's run lock, held until released (or until this process's connection closes). */
export type HeldRunLock = { release(): Promise<void> }

/**
 * How the lock is taken: `run` shares it with every other run (`id` names the run: RUN_ID of
 * lib/run/reaper.ts); `exclusive` holds it alone, refused while anything holds it.
 */
export type LockMode = { run: string } | "exclusive"

/**
 * How often a held lock's connection is looked at. A lock whose connection closed (the server restarted, the
 * session was ended) is gone: it is taken again, or, when that is refused by then, the holder is told.
 */
const WATCH_MS = 5_000

/**
 * Takes the project's run lock for `command` (this process, this machine) without waiting: the lock, or who
 * holds it in the way (none named: the holder has not recorded itself yet). A FlowError when the database does
 * not hold the project or cannot be reached. `onLost` hears of a lock lost with its connection and refused
 * when taken again (what heldBy says of who holds it then).
 */
export async function tryRunLock(
  setting: SharedSetting,
  command: string,
  mode: LockMode,
  onLost: (heldBy: string) => void = () => {},
): Promise<{ held: HeldRunLock } | { holders: RunHolder[] }> {
  const db = database(setting)
  return db.run(async (sql) => {
    const lockId = await lockIdOf(sql, setting)
    const who = { setting, command, mode, lockId }
    const first = await takeOn(db, who)
    if (!first) return { holders: await inTheWay(sql, setting.key, mode) }
    const take = () => db.run(() => takeOn(db, who, first.since))
    const lost = async () => {
      const holders = await db.run((sql) => inTheWay(sql, setting.key, mode)).catch(() => [])
      onLost(heldBy(setting, holders, command))
    }
    return { held: watch(first.conn, lockId, mode, take, lost) }
  })
}

type Taker = { setting: SharedSetting; command: string; mode: LockMode; lockId: number }
type Taken = { conn: ReservedSQL; since: Date }

/**
 * A connection of its own holding the lock for `who`, with its row written (`since`: when it first took it, kept
 * when it takes it again); undefined: refused.
 */
async function takeOn(db: Database, who: Taker, since?: Date): Promise<Taken | undefined> {
  const { setting, command, mode, lockId } = who
  const conn = await db.session()
  try {
    const [{ ok }] =
      mode === "exclusive"
        ? await conn`SELECT pg_try_advisory_lock(${RUN_LOCK_CLASS}, ${lockId}) AS ok`
        : await conn`SELECT pg_try_advisory_lock_shared(${RUN_LOCK_CLASS}, ${lockId}) AS ok`
    if (!ok) {
      await conn.close()
      return undefined
    }
    if (mode === "exclusive") {
      const [row] = await conn`
        UPDATE run_locks SET command = ${command}, machine = ${setting.machine}, pid = ${process.pid}, backend_pid = pg_backend_pid(), since = now()
        WHERE lock_id = ${lockId} RETURNING since`
      return { conn, since: row.since }
    }
    // The rows of runs gone (killed, or their session ended) go now: they count for nothing, and would pile up.
    // One whose run still holds a live claim stays: it is what lets a run of its machine prove that run dead
    // and take its tasks up before the lease ends (claims.ts, freeDead); the next lock after the lease takes it.
    await conn`
      DELETE FROM live_runs r WHERE r.project = ${setting.key} AND NOT (r.machine = ${setting.machine} AND r.run_id = ${mode.run})
        AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE ${conn.unsafe(heldAs("r.backend_pid", lockId, "ShareLock"))})
        AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.project = r.project AND t.claimed_by = r.run_id AND t.machine = r.machine AND t.lease_until > now())`
    const me = thisProcess()
    const [row] = await conn`
      INSERT INTO live_runs (project, run_id, command, machine, pid, backend_pid, since, pid_start, boot_id, pid_ns)
      VALUES (${setting.key}, ${mode.run}, ${command}, ${setting.machine}, ${me.pid}, pg_backend_pid(), coalesce(${since ?? null}::timestamptz, now()),
        ${me.start ?? null}, ${me.boot ?? null}, ${me.pidNs ?? null})
      ON CONFLICT (project, machine, run_id) DO UPDATE SET backend_pid = excluded.backend_pid, since = excluded.since
      RETURNING since`
    return { conn, since: row.since }
  } catch (e) {
    await conn.close().catch(() => {}) // closed, it lets go of the lock
    throw e
  }
}

/** The held lock, looked at every WATCH_MS and taken again when its connection closed. */
function watch(first: ReservedSQL, lockId: number, mode: LockMode, take: () => Promise<Taken | undefined>, lost: () => Promise<void>): HeldRunLock {
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
      conn = (await take())?.conn
    } catch {
      return // the database cannot be reached: nobody there can move the project from under a holder that cannot write
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
      if (conn) await unlock(conn, lockId, mode)
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

/** The condition on pg_locks `l`: session `backend` holds lock `lockId` (a column or a number) in `mode`. */
function heldAs(backend: string, lockId: number | string, mode: "ShareLock" | "ExclusiveLock"): string {
  return `l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid::bigint = ${RUN_LOCK_CLASS}
    AND l.objid::bigint = ${lockId} AND l.pid = ${backend} AND l.mode = '${mode}'
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`
}

const SINCE = `to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since,
  to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at`

/**
 * Who holds project `key`'s run lock now, oldest first: every run (a row of `live_runs` whose session holds the
 * lock shared) and the exclusive holder (the `run_locks` row, when its session holds the lock alone). A row
 * of a holder gone, or not yet replaced by the holder, says nothing. One query.
 */
async function holdersOf(sql: SQL, key: string): Promise<RunHolder[]> {
  const rows = await sql`
    SELECT command, machine, pid, exclusive, ${sql.unsafe(SINCE)} FROM (
      SELECT r.command, r.machine, r.pid, r.since, false AS exclusive FROM live_runs r JOIN run_locks k ON k.project = r.project
      WHERE r.project = ${key} AND EXISTS (SELECT 1 FROM pg_locks l WHERE ${sql.unsafe(heldAs("r.backend_pid", "k.lock_id", "ShareLock"))})
      UNION ALL
      SELECT k.command, k.machine, k.pid, k.since, true FROM run_locks k
      WHERE k.project = ${key} AND EXISTS (SELECT 1 FROM pg_locks l WHERE ${sql.unsafe(heldAs("k.backend_pid", "k.lock_id", "ExclusiveLock"))})
    ) h ORDER BY h.since, h.machine, h.pid`
  return rows.map((r: RunHolder) => ({ command: r.command, machine: r.machine, pid: r.pid, since: r.since, at: r.at, exclusive: r.exclusive }))
}

/** The holders that refuse a lock taken in `mode`: a run is refused only by an exclusive holder. */
async function inTheWay(sql: SQL, key: string, mode: LockMode): Promise<RunHolder[]> {
  const holders = await holdersOf(sql, key)
  return mode === "exclusive" ? holders : holders.filter((h) => h.exclusive)
}

/**
 * The live runs of the project now, whatever the machine, oldest first; none while no run lives (a run that has
 * not recorded itself yet is not among them). Only looks: a project never run has no row, and none is made.
 */
export async function liveRunHolders(setting: SharedSetting): Promise<RunHolder[]> {
  return (await database(setting).run((sql) => holdersOf(sql, setting.key))).filter((h) => !h.exclusive)
}

async function unlock(conn: ReservedSQL, lockId: number, mode: LockMode): Promise<void> {
  try {
    if (mode === "exclusive") await conn`SELECT pg_advisory_unlock(${RUN_LOCK_CLASS}, ${lockId})`
    else await conn`SELECT pg_advisory_unlock_shared(${RUN_LOCK_CLASS}, ${lockId})`
  } catch {
    // The connection is gone (the server restarted, the network dropped): the lock went with it.
  }
  await conn.close().catch(() => {})
}

/**
 * What a refused command says of the holders in its way: "'flow run' holds shared project 'shop' (machine
 * laptop-2, pid 4242, since 2024-05-01 12:01:07 UTC)", "2 'flow run's hold shared project 'shop' (machine
 * laptop-1, ...; machine laptop-2, ...)", "another 'flow unshare' holds ...".
 */
export function heldBy(setting: SharedSetting, holders: readonly RunHolder[], command: string): string {
  const project = `shared project '${setting.key}'`
  if (holders.length === 0) return `another flow process holds the run lock of ${project} (who, it has not recorded yet)`
  const where = holders.map((h) => `machine ${h.machine}, pid ${h.pid}, since ${h.since}`).join("; ")
  // Many holders are runs (the lock held alone has one holder); one is named as it always was.
  const [{ command: theirs }] = holders
  if (holders.length > 1) return `${holders.length} '${theirs}'s hold ${project} (${where})`
  return `${theirs === command ? "another " : ""}'${theirs}' holds ${project} (${where})`
}
