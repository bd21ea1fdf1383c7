// One pool of connections per database per process (Bun's built-in client, `Bun.sql`), migrated on first
// use, and the one place that turns the client's failures into FlowErrors: a database that cannot be reached,
// refuses the login, has no connection free or does not exist is said with its URL without the password, and
// no message carries the password (the client's own text is scrubbed of it too). Any other error is a bug and
// goes up as it is.
//
// Connections are the server's scarcest thing (max_connections, 100 by default), and every agent of every
// machine runs flow commands at once (docs/FLEET.md, "Connections"): a command's pool opens one connection, a
// run's (widenPools) up to RUN_POOL; a lock held for a session's life (run-lock.ts) and the listener
// have a connection each of their own, never one of the pool's, so the pool is never starved of its
// only one. A connection the server refuses for want of a free slot (SQLSTATE 53300) is tried again, backing
// off, for up to FLOW_LOCK_TIMEOUT before the command fails saying so.
import { type ReservedSQL, SQL } from "bun"
import { Exit, FlowError } from "../../cli/errors"
import { StoreUnreachable } from "../store"
import type { SharedSetting } from "../setting"
import { migrate } from "./migrations"
import { scrub } from "./url"

/** How long a connection may take to open, in seconds, unless the URL's connect_timeout says otherwise. */
const CONNECT_TIMEOUT_S = 10

/** How often a listener whose connection closed tries to subscribe again. */
const RELISTEN_MS = 2_000

/**
 * How long the server lets one of flow's sessions sit idle inside a transaction before it ends the session (and
 * so lets go of its row locks): a machine paused or cut off mid-transaction must not hold every other machine's
 * writes for longer. flow's transactions run statement after statement, never waiting on anything else.
 */
const IDLE_IN_TRANSACTION_MS = 15_000

/** The connections a run's pool may open: its workers, landings, renewals and reads at once (Bun's default). */
const RUN_POOL = 10

/** The first and the longest wait between tries for a free connection slot. */
const FULL_FIRST_MS = 50
const FULL_MAX_MS = 1_000

/** The connections each pool of this process may open: one, unless the process is a run (widenPools). */
let poolMax = 1

/**
 * Lets this process's pools open up to RUN_POOL connections: for `flow run`, whose workers, landings and
 * renewals query at once (one connection would make a renewal wait behind a write that waits for another
 * process's lock, long enough for a lease to lapse). Called before the process's first use of a database.
 */
export function widenPools(): void {
  poolMax = RUN_POOL
}

/** The server refused a connection for want of a free slot: too many clients (53300). */
function isFull(e: unknown): boolean {
  return (e as { errno?: unknown } | undefined)?.errno === "53300"
}

export class Database {
  readonly sql: SQL
  readonly shown: string
  private migrated: Promise<void> | undefined
  private readonly password: string | undefined
  private readonly options: SQL.Options

  constructor(readonly setting: SharedSetting) {
    this.shown = setting.shown
    this.password = typeof setting.password === "string" ? setting.password : setting.password?.reveal()
    const timeout = /(?:^\?|&)connect_timeout=(\d+)/.exec(setting.url.query)?.[1]
    this.options = {
      url: setting.shown,
      ...(this.password !== undefined ? { password: this.password } : {}),
      connectionTimeout: timeout ? Number(timeout) : CONNECT_TIMEOUT_S,
      connection: { idle_in_transaction_session_timeout: String(IDLE_IN_TRANSACTION_MS) },
    }
    this.sql = new SQL({ ...this.options, max: poolMax })
  }

  /**
   * A connection of its own, open, for a session-level lock held beyond one statement (run-lock.ts): never
   * the pool's, which may have only one. Reserved from a client of its own: once it
   * closes (the server restarted, the session was ended) its statements fail rather than go to a new session,
   * which would not hold the lock. Its close() ends the session and its locks, and leaves nothing open.
   */
  session(): Promise<ReservedSQL> {
    return this.run(async () => {
      const own = new SQL({ ...this.options, max: 1 })
      try {
        return await own.reserve()
      } catch (e) {
        await own.close().catch(() => {})
        throw e
      }
    })
  }

  /**
   * Calls `onnotify` on every notification of `channel`, and `onlisten` each time the subscription is made
   * (what changed while there was none is read then), until the returned stop. Bun's client subscribes again
   * after a drop by itself, but says each failed try on stderr (through a run's screen, every 0.25 to 32 s
   * while the database is away): the listener has a client of its own, whose only connection is the
   * subscription's, so its close is known; the subscription is then dropped at once (no try of Bun's) and
   * made again every RELISTEN_MS, quietly, until the database answers.
   */
  async listen(channel: string, onnotify: () => void, onlisten: () => void): Promise<() => Promise<void>> {
    let sub: { unlisten(): Promise<void> } | undefined
    let stopped = false
    let retry: ReturnType<typeof setTimeout> | undefined
    const subscribe = async () => {
      sub = await sql.listen(channel, onnotify, onlisten)
    }
    const again = () => {
      if (stopped) return
      retry = setTimeout(() => void subscribe().catch(again), RELISTEN_MS)
      retry.unref()
    }
    const sql = new SQL({
      ...this.options,
      max: 1,
      onclose: () => {
        const gone = sub
        sub = undefined
        if (!gone || stopped) return
        void gone.unlisten().catch(() => {})
        again()
      },
    })
    try {
      await this.run(subscribe)
    } catch (e) {
      await sql.close()
      throw e
    }
    return async () => {
      stopped = true
      clearTimeout(retry)
      await sub?.unlisten().catch(() => {})
      await sql.close()
    }
  }

  /**
   * `fn` on the pool, after the schema is current; connection failures become FlowErrors. A server with no
   * connection free (53300) is tried again, backing off, until FLOW_LOCK_TIMEOUT passed: the statement it
   * refused never ran (its connection never opened), and one before it in `fn`, if any, ran on a connection
   * that closed since (a transaction's was undone with it); `fn` runs again from its start.
   */
  async run<T>(fn: (sql: SQL) => Promise<T>): Promise<T> {
    const started = performance.now()
    for (let wait = FULL_FIRST_MS; ; wait = Math.min(wait * 2, FULL_MAX_MS)) {
      try {
        this.migrated ??= migrate(this.sql, this.shown).catch((e) => {
          this.migrated = undefined
          throw e
        })
        await this.migrated
        return await fn(this.sql)
      } catch (e) {
        if (!isFull(e) || performance.now() - started + wait > this.setting.waitMs) throw this.explain(e)
        // Jittered: commands refused together do not come back together.
        await Bun.sleep(wait * (0.5 + Math.random()))
      }
    }
  }

  /** The FlowError a client failure means, or the error itself (a FlowError already, or a bug). */
  explain(e: unknown): unknown {
    if (e instanceof FlowError || !(e instanceof Error)) return e
    const { code, errno } = e as { code?: string; errno?: string }
    const detail = scrub(e.message, this.password)
    const sqlState = typeof errno === "string" ? errno : ""
    if (sqlState.startsWith("28") || code === "ERR_POSTGRES_AUTHENTICATION_FAILED_PBKDF2" || code === "ERR_POSTGRES_UNSUPPORTED_AUTHENTICATION_METHOD") {
      return new FlowError(
        `the database at ${this.shown} refused the login: ${detail}`,
        Exit.failure,
        "give the password in FLOW_DATABASE_URL (postgres://user:password@host/database) or PGPASSWORD, never in flow.yaml",
      )
    }
    if (sqlState === "53300") {
      return new StoreUnreachable(
        `the database at ${this.shown} has no connection free: the server's max_connections are all in use (it said: ${detail}); tried for ${Math.round(this.setting.waitMs / 1000)} s`,
        Exit.failure,
        'raise max_connections on the server (postgresql.conf; it applies after a restart), or run fewer agents at once: each flow command takes one connection while it runs, a flow run up to 13 (docs/FLEET.md, "Connections")',
        { cause: new Error(detail) },
      )
    }
    if (sqlState === "3D000") {
      return new FlowError(`the database at ${this.shown} does not exist: ${detail}`, Exit.failure, "create it (createdb), or correct the URL")
    }
    const connection =
      sqlState.startsWith("08") ||
      sqlState.startsWith("57P") ||
      sqlState.startsWith("53") ||
      (code?.startsWith("ERR_POSTGRES_") === true && code !== "ERR_POSTGRES_SERVER_ERROR") ||
      /^E[A-Z]+$/.test(code ?? "")
    if (!connection) return e
    return new StoreUnreachable(
      `cannot reach the database at ${this.shown}: ${detail}`,
      Exit.failure,
      "check that the server runs and that flow.yaml's state (or FLOW_DATABASE_URL) names it; TLS settings go in the URL (sslmode=require)",
      { cause: new Error(detail) },
    )
  }
}

const pools = new Map<string, Database>()

/** The process's pool for this database and password (made on first use; connections open lazily). */
export function database(setting: SharedSetting): Database {
  const password = typeof setting.password === "string" ? setting.password : setting.password?.reveal()
  const id = `${setting.shown}\n${password ?? ""}`
  let db = pools.get(id)
  if (!db) {
    db = new Database(setting)
    pools.set(id, db)
  }
  return db
}

/** Closes every pool this process opened (a long-lived process that is done with the database). */
export async function closeDatabases(): Promise<void> {
  const all = [...pools.values()]
  pools.clear()
  await Promise.all(all.map((d) => d.sql.close()))
}
