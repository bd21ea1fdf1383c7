// The merge queue's rows in the shared database (lib/state/queue-rows.ts): every machine's candidates in one line
// per target. A check is claimed in one statement (FOR UPDATE SKIP LOCKED: two machines never take one, and
// neither waits for the other), leased on the database's clock and renewed by its machine; a queue's lead is a
// lease of its row. Every write notifies `flowq_<project>` at commit, so the other machines' runs look at once.
import type { SQL } from "bun"
import type { SharedSetting } from "../../store/setting"
import type { Database } from "../../store/postgres/connection"
import type { CheckClaim, CheckOutcome, NewCandidate, QueueChange, QueueLead, QueueRow, QueueRows } from "../queue-rows"

const COLUMNS = `id::float8 AS id, queue, target, seq::float8 AS seq, task_id, branch, head, message, run_id, attempt, machine, submitted_at, gen,
  base, merge, ref, ahead, state, reason, verdict, check_run, check_machine, check_attempt, seconds, checks, thrown, landed_at`
const IN_LINE = "state IN ('waiting', 'ready', 'checking', 'passed', 'failed')"

/** The channel a project's queue changes are announced on. */
export const queueChannel = (key: string) => `flowq_${key}`

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v))

export class PgQueueRows implements QueueRows {
  constructor(
    private readonly db: Database,
    private readonly setting: SharedSetting,
  ) {}

  private get key(): string {
    return this.setting.key
  }

  private tx<T>(fn: (tx: SQL) => Promise<T>): Promise<T> {
    return this.db.run((sql) => sql.begin(fn) as Promise<T>)
  }

  private notify(tx: SQL) {
    return tx`SELECT pg_notify(${queueChannel(this.key)}, '')`
  }

  private async rows(query: (sql: SQL) => Promise<QueueRow[]>): Promise<QueueRow[]> {
    return (await this.db.run(query)).map((r) => ({ ...r }))
  }

  submit(c: NewCandidate): Promise<QueueRow> {
    return this.tx(async (tx) => {
      const [r] = await tx`
        INSERT INTO queue_rows (project, queue, target, seq, task_id, branch, head, message, run_id, attempt, machine, submitted_at, state)
        SELECT ${this.key}, ${c.queue}, ${c.target}, coalesce(max(seq), 0) + 1, ${c.task_id}, ${c.branch}, ${c.head}, ${c.message}, ${c.run_id},
               ${c.attempt}, ${this.setting.machine}, flow_now(), 'waiting'
        FROM queue_rows WHERE project = ${this.key} AND queue = ${c.queue}
        RETURNING ${tx.unsafe(COLUMNS)}`
      await this.notify(tx)
      return { ...r }
    })
  }

  line(queue?: string): Promise<QueueRow[]> {
    return this.rows((sql) =>
      queue === undefined
        ? sql`SELECT ${sql.unsafe(COLUMNS)} FROM queue_rows WHERE project = ${this.key} AND ${sql.unsafe(IN_LINE)} ORDER BY queue, seq, id`
        : sql`SELECT ${sql.unsafe(COLUMNS)} FROM queue_rows WHERE project = ${this.key} AND queue = ${queue} AND ${sql.unsafe(IN_LINE)} ORDER BY seq, id`,
    )
  }

  ended(queue: string, run: string): Promise<QueueRow[]> {
    return this.rows(
      (sql) => sql`
        SELECT ${sql.unsafe(COLUMNS)} FROM queue_rows
        WHERE project = ${this.key} AND queue = ${queue} AND run_id = ${run} AND state IN ('landed', 'left') ORDER BY seq, id`,
    )
  }

  async forget(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return
    await this.tx(async (tx) => {
      await tx`DELETE FROM queue_rows WHERE project = ${this.key} AND id = ANY(${tx.array([...ids])}::bigint[])`
      await this.notify(tx)
    })
  }

  async clear(): Promise<void> {
    await this.db.run((sql) => sql`DELETE FROM queue_rows WHERE project = ${this.key} AND machine = ${this.setting.machine}`)
  }

  lead(queue: string, run: string, leaseMs: number): Promise<QueueLead | undefined> {
    return this.db.run(async (sql) => {
      const [r] = await sql`
        INSERT INTO queue_leads (project, queue, run, until, epoch) VALUES (${this.key}, ${queue}, ${run}, now() + ${leaseMs} * interval '1 millisecond', 1)
        ON CONFLICT (project, queue) DO UPDATE SET run = excluded.run, until = excluded.until, epoch = queue_leads.epoch + 1
          WHERE queue_leads.run IS NULL OR queue_leads.until < now()
        RETURNING epoch, tip`
      return r ? { queue, run, epoch: r.epoch, tip: r.tip } : undefined
    })
  }

  apply(lead: QueueLead, changes: readonly QueueChange[], tip?: string): Promise<boolean> {
    return this.tx(async (tx) => {
      // Locked for the transaction: a lead that lapses meanwhile is taken only after this commits.
      const [held] = await tx`
        SELECT 1 AS one FROM queue_leads WHERE project = ${this.key} AND queue = ${lead.queue} AND run = ${lead.run} AND epoch = ${lead.epoch}
          AND until > now() FOR UPDATE`
      if (!held) return false
      for (const c of changes) {
        const thrown = c.thrown ?? 0
        if (c.build) {
          const b = c.build
          await tx`
            UPDATE queue_rows SET gen = gen + 1, base = ${b.base}, merge = ${b.merge}, ref = ${b.ref}, ahead = ${JSON.stringify(b.ahead)}::text::json,
              state = ${c.state}, reason = ${c.reason ?? null}, verdict = ${json(c.verdict)}::text::json, thrown = thrown + ${thrown},
              check_run = NULL, check_machine = NULL, check_until = NULL, seconds = NULL
            WHERE project = ${this.key} AND id = ${c.id} AND gen = ${c.gen}`
        } else {
          await tx`
            UPDATE queue_rows SET state = ${c.state},
              reason = CASE WHEN ${c.reason !== undefined} THEN ${c.reason ?? null} ELSE reason END,
              verdict = CASE WHEN ${c.verdict !== undefined} THEN ${json(c.verdict)}::text::json ELSE verdict END,
              thrown = thrown + ${thrown}, landed_at = CASE WHEN ${c.state} = 'landed' THEN flow_now() ELSE landed_at END
            WHERE project = ${this.key} AND id = ${c.id} AND gen = ${c.gen}`
        }
      }
      if (tip !== undefined) await tx`UPDATE queue_leads SET tip = ${tip} WHERE project = ${this.key} AND queue = ${lead.queue}`
      if (changes.length > 0) await this.notify(tx)
      return true
    })
  }

  async renewLead(lead: QueueLead, leaseMs: number): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        UPDATE queue_leads SET until = now() + ${leaseMs} * interval '1 millisecond'
        WHERE project = ${this.key} AND queue = ${lead.queue} AND run = ${lead.run} AND epoch = ${lead.epoch} RETURNING 1 AS one`,
    )
    return rows.length > 0
  }

  async freeRun(run: string): Promise<void> {
    await this.tx(async (tx) => {
      await tx`UPDATE queue_leads SET run = NULL, until = NULL WHERE project = ${this.key} AND run = ${run}`
      // Lapsed now: the next claim takes them, with the next attempt, and the dead run's counts for nothing.
      await tx`UPDATE queue_rows SET check_until = '-infinity' WHERE project = ${this.key} AND state = 'checking' AND check_run = ${run}`
      await this.notify(tx)
    })
  }

  async release(lead: QueueLead): Promise<void> {
    await this.db.run(
      (sql) => sql`
        UPDATE queue_leads SET run = NULL, until = NULL WHERE project = ${this.key} AND queue = ${lead.queue} AND run = ${lead.run} AND epoch = ${lead.epoch}`,
    )
  }

  claimCheck(queue: string, run: string, leaseMs: number): Promise<CheckClaim | undefined> {
    return this.tx(async (tx) => {
      const [r] = await tx`
        UPDATE queue_rows c SET thrown = c.thrown + (CASE WHEN c.state = 'checking' THEN 1 ELSE 0 END), state = 'checking', check_run = ${run},
          check_machine = ${this.setting.machine}, check_attempt = c.check_attempt + 1, checks = c.checks + 1, seconds = NULL,
          check_until = now() + ${leaseMs} * interval '1 millisecond'
        WHERE c.id = (
          SELECT id FROM queue_rows WHERE project = ${this.key} AND queue = ${queue}
            AND (state = 'ready' OR (state = 'checking' AND check_until < now()))
          ORDER BY seq, id LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING c.id::float8 AS id, c.gen, c.check_attempt, c.task_id, c.merge, c.ref, c.ahead, c.run_id, c.machine`
      if (!r) return undefined
      await this.notify(tx)
      const of = { run: r.run_id, machine: r.machine }
      return { id: r.id, queue, gen: r.gen, attempt: r.check_attempt, run, task_id: r.task_id, merge: r.merge, ref: r.ref, ahead: r.ahead, of }
    })
  }

  async renewCheck(c: CheckClaim, leaseMs: number): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        UPDATE queue_rows SET check_until = now() + ${leaseMs} * interval '1 millisecond'
        WHERE ${this.fenced(sql, c)} RETURNING 1 AS one`,
    )
    return rows.length > 0
  }

  checkDone(c: CheckClaim, o: CheckOutcome): Promise<boolean> {
    return this.tx(async (tx) => {
      const rows = await tx`
        UPDATE queue_rows SET state = ${o.ok ? "passed" : "failed"}, seconds = ${o.seconds}, reason = ${o.reason ?? null},
          verdict = ${json(o.verdict)}::text::json, check_until = NULL
        WHERE ${this.fenced(tx, c)} AND check_until > now() RETURNING 1 AS one`
      if (rows.length === 0) return false
      await this.notify(tx)
      return true
    })
  }

  /** A claim's rows: its build and attempt, still being checked by its run. */
  private fenced(sql: SQL, c: CheckClaim) {
    return sql`project = ${this.key} AND id = ${c.id} AND gen = ${c.gen} AND check_attempt = ${c.attempt} AND check_run = ${c.run} AND state = 'checking'`
  }

  listen(wake: () => void): Promise<() => Promise<void>> {
    return this.db.listen(queueChannel(this.key), wake, wake)
  }
}
