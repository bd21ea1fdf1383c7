// How runs that share a graph divide its tasks (docs/FLEET.md, "Claims, leases, fencing"): no coordinator,
// only rows. A claim is one statement that picks the first candidate no live claim holds, with its
// dependencies checked in the same statement, and skips rows another claim is locking at that instant (SKIP
// LOCKED): two runs never take one task, and neither waits for the other. A claim holds for a lease that its
// run renews; every instant compared is the database's (now()), never a machine's clock, so machines whose
// clocks differ agree on which lease is stale. A claim takes no lock beyond its statement: nothing is held
// open while an agent works.
//
// The lock-ordering rule (docs/FLEET.md, "Locks and their order"): a transaction that may lock more than one
// task row takes the project's row first. Writers (pg-store.ts) take it FOR NO KEY UPDATE, one at a time; the
// renewal and the freeing of a dead run's claims take it FOR SHARE, so they run beside each other but never
// beside a writer. A writer locks rows in an order only its edit knows (its fences, then the rows it changed),
// a renewal in the order of its plan: without the project's row between them the two met in opposite orders
// and each waited for the other (seen: a batch write fenced by t06 then t04, a renewal holding t04 and t05 and
// waiting for t06). A claim, a release and a hold lock one row at most, never wait holding one, and take no
// project lock: a claim never waits for a writer.
import type { SQL } from "bun"
import { Exit, FlowError } from "../../cli/errors"
import { isGoneHere } from "../../cli/pid"
import type { Claims, DeadRun, Fence } from "../store"
import type { SharedSetting } from "../setting"
import type { Database } from "./connection"

/** The channel a project's writes are announced on (LISTEN "flow_<key>"): pg-store.ts notifies it. */
export function channelOf(key: string): string {
  return `flow_${key}`
}

/** Statuses a claimed task may be in: to start (todo, ready_for_agent) or to resume (assigned, in_progress). */
const CLAIMABLE = ["todo", "ready_for_agent", "assigned", "in_progress"]

export class PgClaims implements Claims {
  constructor(
    private readonly db: Database,
    private readonly setting: SharedSetting,
  ) {}

  async claim(candidates: readonly string[], who: { run: string; agent: string }, leaseMs: number): Promise<Fence | undefined> {
    if (candidates.length === 0) return undefined
    const key = this.setting.key
    // A todo task starts only when every dependency is done: done is written after its merge reached the
    // shared remote (docs/FLEET.md, "Git across machines"), so a dependent on any machine starts from a target
    // that holds it. ready_for_agent is a person's word (`flow ready`) or a promotion made by that same write.
    // Every lookup is by primary key: the candidates in their order until the first that may be taken, each
    // dependency by its id (one not in the graph is not done, as availableTasks has it). The statement costs
    // in the candidates it passes over and their dependencies, never in the graph's size times them.
    const rows = await this.db.run(
      (sql) => sql`
        UPDATE tasks t SET attempt = t.attempt + 1, claimed_by = ${who.run}, claimed_agent = ${who.agent},
          machine = ${this.setting.machine}, lease_until = now() + ${leaseMs} * interval '1 millisecond'
        WHERE t.project = ${key} AND t.id = (
          SELECT c.id FROM unnest(${sql.array(candidates as string[])}::text[]) WITH ORDINALITY AS k(id, n)
          JOIN tasks c ON c.project = ${key} AND c.id = k.id
          WHERE c.status = ANY(${sql.array(CLAIMABLE)}::text[])
            AND (c.claimed_by IS NULL OR c.lease_until < now())
            AND (c.status <> 'todo' OR NOT EXISTS (
              SELECT 1 FROM unnest(c.depends_on) AS dep(id)
              WHERE (SELECT d.status FROM tasks d WHERE d.project = c.project AND d.id = dep.id) IS DISTINCT FROM 'done'))
          ORDER BY k.n
          LIMIT 1 FOR UPDATE OF c SKIP LOCKED)
        RETURNING t.id, t.attempt`,
    )
    const [row] = rows as { id: string; attempt: number }[]
    return row ? { taskId: row.id, attempt: row.attempt, run: who.run } : undefined
  }

  async renew(claims: readonly Fence[], leaseMs: number): Promise<Set<string>> {
    // Each claim by its task, attempt and run: one the run no longer counts as its own is not kept alive, and
    // one that is not renewed is one whose row names another attempt or claimant now (docs/FLEET.md). Asked
    // with none too: a run holding nothing still hears that the database is away, and says it.
    const rows = await this.beside(
      "renewing this run's claims",
      (tx) =>
        tx`
        UPDATE tasks t SET lease_until = now() + ${leaseMs} * interval '1 millisecond'
        FROM unnest(${tx.array(claims.map((c) => c.taskId))}::text[], ${tx.array(claims.map((c) => c.attempt))}::int[],
                    ${tx.array(claims.map((c) => c.run))}::text[]) AS c(id, attempt, run)
        WHERE t.project = ${this.setting.key} AND t.id = c.id AND t.attempt = c.attempt AND t.claimed_by = c.run
        RETURNING t.id`,
    )
    return new Set((rows as { id: string }[]).map((r) => r.id))
  }

  /**
   * `fn` in a transaction holding the project's row FOR SHARE (the lock-ordering rule above): beside other
   * renewals, never beside a writer. It waits for a writer as long as writers wait for each other.
   */
  private beside<T>(what: string, fn: (tx: SQL) => Promise<T>): Promise<T> {
    const { key, waitMs, shown } = this.setting
    return this.db.run((sql) =>
      sql
        .begin(async (tx) => {
          await tx.unsafe(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(waitMs))}`)
          await tx`SELECT 1 AS one FROM projects WHERE key = ${key} FOR SHARE`
          return fn(tx)
        })
        .catch((e) => {
          if ((e as { errno?: string }).errno !== "55P03") throw e
          throw new FlowError(
            `${what}: a writer held project '${key}' for ${waitMs / 1000} s (${shown})`,
            Exit.failure,
            "it is tried again; if it persists, look for a stuck flow process on the machines sharing it",
          )
        }),
    ) as Promise<T>
  }

  async holds(fence: Fence): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        SELECT 1 AS one FROM tasks
        WHERE project = ${this.setting.key} AND id = ${fence.taskId} AND claimed_by = ${fence.run}
          AND attempt = ${fence.attempt} AND lease_until > now()`,
    )
    return rows.length > 0
  }

  async release(fence: Fence): Promise<void> {
    await this.db.run(
      (sql) => sql`
        UPDATE tasks SET claimed_by = NULL, claimed_agent = NULL, lease_until = NULL
        WHERE project = ${this.setting.key} AND id = ${fence.taskId} AND claimed_by = ${fence.run} AND attempt = ${fence.attempt}`,
    )
  }

  async freeDead(run: string): Promise<DeadRun[]> {
    const { key, machine } = this.setting
    // Only this machine's runs: a pid means something only here, and only in this boot and pid namespace
    // (isGoneHere). A run without a row (a claimer that took no run lock) or whose process lives keeps its
    // claims for the lease; so does every run while the database restarts (its session gone, its process not).
    const rows = (await this.db.run(
      (sql) => sql`SELECT run_id, pid, pid_start, boot_id, pid_ns FROM live_runs WHERE project = ${key} AND machine = ${machine} AND run_id <> ${run}`,
    )) as { run_id: string; pid: number; pid_start: string | null; boot_id: string | null; pid_ns: string | null }[]
    const dead = rows.filter((r) => isGoneHere({ pid: r.pid, start: r.pid_start ?? undefined, boot: r.boot_id ?? undefined, pidNs: r.pid_ns ?? undefined }))
    const out: DeadRun[] = []
    for (const r of dead) {
      // Given back as a release does: the next claim takes the task with the next attempt, and the dead run's
      // attempt is refused from now on (its fence names a claimant the task no longer has).
      const tasks = await this.beside("freeing a dead run's claims", async (sql) => {
        const freed = await sql`
          UPDATE tasks SET claimed_by = NULL, claimed_agent = NULL, lease_until = NULL
          WHERE project = ${key} AND machine = ${machine} AND claimed_by = ${r.run_id}
          RETURNING id`
        await sql`DELETE FROM live_runs WHERE project = ${key} AND machine = ${machine} AND run_id = ${r.run_id}`
        return (freed as { id: string }[]).map((t) => t.id).sort()
      })
      if (tasks.length > 0) out.push({ run: r.run_id, pid: r.pid, tasks })
    }
    return out
  }

  async othersLive(run: string): Promise<number> {
    const [row] = await this.db.run(
      (sql) => sql`
        SELECT count(*)::int AS n FROM tasks
        WHERE project = ${this.setting.key} AND claimed_by IS NOT NULL AND claimed_by <> ${run} AND lease_until > now()`,
    )
    return (row as { n: number }).n
  }

  listen(wake: () => void): Promise<() => Promise<void>> {
    // One connection for the listener, subscribed again after a drop (wake runs then: what changed while it
    // was away is read at once). A pooler in transaction mode delivers nothing: the run's poll is the
    // backstop (orchestrator.ts), so a silent listener only slows a peer down.
    return this.db.listen(channelOf(this.setting.key), () => wake(), wake)
  }
}
