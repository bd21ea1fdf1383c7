// The lock that serializes the merges of a shared project into one branch of one remote, whatever the machine
// (docs/FLEET.md, "Git across machines"): a session-level advisory lock on a connection of its own while one
// landing fetches, merges, checks and pushes. The server drops it when the connection closes, so a machine
// that dies mid-landing holds nobody up for long (see run-lock.ts for the same reasoning).
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
  const conn = await db.session()
  const name = `${setting.key}\n${key}`
  try {
    for (;;) {
      const [{ ok }] = await conn`SELECT pg_try_advisory_lock(${LANDING_LOCK_CLASS}, hashtext(${name})) AS ok`
      if (ok) break
      if (signal.aborted) {
        await conn.close()
        return undefined
      }
      await Bun.sleep(RETRY_MS)
    }
  } catch (e) {
    await conn.close().catch(() => {}) // closed, it lets go of the lock
    throw db.explain(e)
  }
  return async () => {
    // Unlocked first: the lock is free when this returns, not when the server has seen the session end.
    await conn`SELECT pg_advisory_unlock(${LANDING_LOCK_CLASS}, hashtext(${name}))`.catch(() => {}) // gone: the lock went with it
    await conn.close().catch(() => {})
  }
}
