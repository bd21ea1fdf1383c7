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
const IN_LINE = "state IN ('waiting', 'ready', 'covered', 'checking', 'passed', 'failed')"

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

  /** A notification of the project's queue channel, as a statement's last expression: each write is one statement. */
  private notify(sql: SQL) {
    return sql`pg_notify(${queueChannel(this.key)}, '')`
  }

  private async rows(query: (sql: SQL) => Promise<QueueRow[]>): Promise<QueueRow[]> {
    return (await this.db.run(query)).map((r) => ({ ...r }))
  }

  // Every write is one statement (its notification in it): a machine paused between two statements of a
  // transaction would hold its row locks, and every other machine's queue with them, until it woke.

  async submit(c: NewCandidate): Promise<QueueRow> {
    const [r] = await this.db.run(
      (sql) => sql`
        WITH ins AS (
          INSERT INTO queue_rows (project, queue, target, seq, task_id, branch, head, message, run_id, attempt, machine, submitted_at, state)
          SELECT ${this.key}, ${c.queue}, ${c.target}, coalesce(max(seq), 0) + 1, ${c.task_id}, ${c.branch}, ${c.head}, ${c.message}, ${c.run_id},
                 ${c.attempt}, ${this.setting.machine}, flow_now(), 'waiting'
          FROM queue_rows WHERE project = ${this.key} AND queue = ${c.queue}
          RETURNING *)
        SELECT ${sql.unsafe(COLUMNS)}, ${this.notify(sql)} FROM ins`,
    )
    const { pg_notify: _, ...row } = r
    return row as QueueRow
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
    await this.db.run(
      (sql) => sql`
        WITH gone AS (DELETE FROM queue_rows WHERE project = ${this.key} AND id = ANY(${sql.array([...ids])}::bigint[]) RETURNING 1)
        SELECT ${this.notify(sql)} FROM (SELECT count(*) FROM gone) n`,
    )
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

  async apply(lead: QueueLead, changes: readonly QueueChange[], tip?: string): Promise<boolean> {
    const rows = changes.map((c) => ({
      id: c.id,
      gen: c.gen,
      state: c.state,
      build: c.build !== undefined,
      base: c.build?.base ?? null,
      merge: c.build?.merge ?? null,
      ref: c.build?.ref ?? null,
      ahead: c.build?.ahead ?? [],
      reason_set: c.reason !== undefined,
      reason: c.reason ?? null,
      verdict_set: c.verdict !== undefined,
      verdict: c.verdict ?? null,
      thrown: c.thrown ?? 0,
    }))
    const [r] = await this.db.run(
      (sql) => sql`
        WITH held AS (
          UPDATE queue_leads SET tip = coalesce(${tip ?? null}, tip)
          WHERE project = ${this.key} AND queue = ${lead.queue} AND run = ${lead.run} AND epoch = ${lead.epoch} AND until > now()
          RETURNING 1),
        c AS (
          SELECT * FROM json_to_recordset(${JSON.stringify(rows)}::text::json) AS x(id bigint, gen integer, state text, build boolean, base text, merge text,
            ref text, ahead json, reason_set boolean, reason text, verdict_set boolean, verdict json, thrown integer)),
        changed AS (
          UPDATE queue_rows r SET
            gen = r.gen + CASE WHEN c.build THEN 1 ELSE 0 END,
            base = CASE WHEN c.build THEN c.base ELSE r.base END,
            merge = CASE WHEN c.build THEN c.merge ELSE r.merge END,
            ref = CASE WHEN c.build THEN c.ref ELSE r.ref END,
            ahead = CASE WHEN c.build THEN c.ahead ELSE r.ahead END,
            state = c.state,
            reason = CASE WHEN c.build OR c.reason_set THEN c.reason ELSE r.reason END,
            verdict = CASE WHEN c.build OR c.verdict_set THEN c.verdict ELSE r.verdict END,
            thrown = r.thrown + c.thrown,
            check_run = CASE WHEN c.build THEN NULL ELSE r.check_run END,
            check_machine = CASE WHEN c.build THEN NULL ELSE r.check_machine END,
            check_until = CASE WHEN c.build THEN NULL ELSE r.check_until END,
            seconds = CASE WHEN c.build THEN NULL ELSE r.seconds END,
            landed_at = CASE WHEN c.state = 'landed' THEN flow_now() ELSE r.landed_at END
          FROM c WHERE r.project = ${this.key} AND r.id = c.id AND r.gen = c.gen AND EXISTS (SELECT 1 FROM held)
          RETURNING 1)
        SELECT (SELECT count(*) FROM held)::int AS held, CASE WHEN (SELECT count(*) FROM changed) > 0 THEN ${this.notify(sql)} END AS notified`,
    )
    return r.held > 0
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
    // Its checks lapse now: the next claim takes them, with the next attempt, and the dead run's count for nothing.
    await this.db.run(
      (sql) => sql`
        WITH leads AS (UPDATE queue_leads SET run = NULL, until = NULL WHERE project = ${this.key} AND run = ${run} RETURNING 1),
        checks AS (UPDATE queue_rows SET check_until = '-infinity' WHERE project = ${this.key} AND state = 'checking' AND check_run = ${run} RETURNING 1)
        SELECT ${this.notify(sql)} FROM (SELECT (SELECT count(*) FROM leads) + (SELECT count(*) FROM checks) AS n) x`,
    )
  }

  async release(lead: QueueLead): Promise<void> {
    await this.db.run(
      (sql) => sql`
        UPDATE queue_leads SET run = NULL, until = NULL WHERE project = ${this.key} AND queue = ${lead.queue} AND run = ${lead.run} AND epoch = ${lead.epoch}`,
    )
  }

  async claimCheck(queue: string, run: string, leaseMs: number): Promise<CheckClaim | undefined> {
    const [r] = await this.db.run(
      (sql) => sql`
        WITH c AS (
          UPDATE queue_rows c SET thrown = c.thrown + (CASE WHEN c.state = 'checking' THEN 1 ELSE 0 END), state = 'checking', check_run = ${run},
            check_machine = ${this.setting.machine}, check_attempt = c.check_attempt + 1, checks = c.checks + 1, seconds = NULL,
            check_until = now() + ${leaseMs} * interval '1 millisecond'
          WHERE c.id = (
            SELECT id FROM queue_rows WHERE project = ${this.key} AND queue = ${queue}
              AND (state = 'ready' OR (state = 'checking' AND check_until < now()))
            ORDER BY seq, id LIMIT 1 FOR UPDATE SKIP LOCKED)
          RETURNING c.id, c.gen, c.check_attempt, c.task_id, c.merge, c.ref, c.ahead, c.run_id, c.machine)
        SELECT id::float8 AS id, gen, check_attempt, task_id, merge, ref, ahead, run_id, machine, ${this.notify(sql)} FROM c`,
    )
    if (!r) return undefined
    const of = { run: r.run_id, machine: r.machine }
    return { id: r.id, queue, gen: r.gen, attempt: r.check_attempt, run, task_id: r.task_id, merge: r.merge, ref: r.ref, ahead: r.ahead, of }
  }

  async renewCheck(c: CheckClaim, leaseMs: number): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        UPDATE queue_rows SET check_until = now() + ${leaseMs} * interval '1 millisecond'
        WHERE ${this.fenced(sql, c)} RETURNING 1 AS one`,
    )
    return rows.length > 0
  }

  async checkDone(c: CheckClaim, o: CheckOutcome): Promise<boolean> {
    const rows = await this.db.run(
      (sql) => sql`
        WITH u AS (
          UPDATE queue_rows SET state = ${o.ok ? "passed" : "failed"}, seconds = ${o.seconds}, reason = ${o.reason ?? null},
            verdict = ${json(o.verdict)}::text::json, check_until = NULL
          WHERE ${this.fenced(sql, c)} AND check_until > now() RETURNING 1)
        SELECT ${this.notify(sql)} FROM u`,
    )
    return rows.length > 0
  }

  /** A claim's rows: its build and attempt, still being checked by its run. */
  private fenced(sql: SQL, c: CheckClaim) {
    return sql`project = ${this.key} AND id = ${c.id} AND gen = ${c.gen} AND check_attempt = ${c.attempt} AND check_run = ${c.run} AND state = 'checking'`
  }

  listen(wake: () => void): Promise<() => Promise<void>> {
    return this.db.listen(queueChannel(this.key), wake, wake)
  }
}
