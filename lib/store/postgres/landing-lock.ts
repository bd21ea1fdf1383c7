// The lock that serializes the merges of a shared project into one branch of one remote, whatever the machine
// (docs/FLEET.md, "Git across machines"): a session-level advisory lock on a connection reserved while one
// landing fetches, merges, checks and pushes. The server drops it when the connection closes, so a machine
// that dies mid-landing holds nobody up for long (see run-lock.ts for the same reasoning).
import type { ReservedSQL } from "bun"
import type { SharedSetting } from "../setting"
import { database } from "./connection"

/** The first key of the landing locks: 'flom' in ASCII (the run locks' is 'flor', the migrations' 'flow'). */
const LANDING_LOCK_CLASS = 0x666c6f6d

/** How often a landing that waits for another's lock asks again. */
const RETRY_MS = 100

/**
 * Takes the landing lock of `key` (the project, the remote's URL and the target branch), waiting while another
 * process holds it: its release, or undefined when `signal` stopped the wait. The second key is the key's
 * hashtext: two keys sharing one only wait for each other.
 */
export async function holdLandingLock(setting: SharedSetting, key: string, signal: AbortSignal): Promise<(() => Promise<void>) | undefined> {
  const db = database(setting)
  const conn: ReservedSQL = await db.run((sql) => sql.reserve())
  const name = `${setting.key}\n${key}`
  try {
    for (;;) {
      const [{ ok }] = await conn`SELECT pg_try_advisory_lock(${LANDING_LOCK_CLASS}, hashtext(${name})) AS ok`
      if (ok) break
      if (signal.aborted) {
        conn.release()
        return undefined
      }
      await Bun.sleep(RETRY_MS)
    }
  } catch (e) {
    // A connection that may hold the lock must not go back to the pool: closed, it lets go of it.
    await conn.close().catch(() => {})
    throw db.explain(e)
  }
  return async () => {
    try {
      await conn`SELECT pg_advisory_unlock(${LANDING_LOCK_CLASS}, hashtext(${name}))`
      conn.release()
    } catch {
      await conn.close().catch(() => {}) // the connection is gone: the lock went with it
    }
  }
}
