// The merge queue's rows in .flow/state.db (lib/state/queue-rows.ts). One run at a time uses a state database,
// but the rules are the shared backend's, so that one engine and one conformance suite serve both: every lease
// is a time on flow's clock (milliseconds), every write one immediate transaction fenced as the interface says.
import type { SQLQueryBindings } from "bun:sqlite"
import type { CheckClaim, CheckOutcome, NewCandidate, QueueChange, QueueLead, QueueRow, QueueRows } from "../queue-rows"
import type { Access } from "./journals"
import * as clock from "../../cli/clock"

type Stored = Omit<QueueRow, "ahead" | "verdict"> & { ahead: string; verdict: string | null }

const COLUMNS =
  "id, queue, target, seq, task_id, branch, head, message, run_id, attempt, machine, submitted_at, gen, base, merge, ref, ahead, state, reason, verdict, check_run, check_machine, check_attempt, seconds, checks, thrown, landed_at"
const IN_LINE = "state IN ('waiting', 'ready', 'covered', 'checking', 'passed', 'failed')"

const row = (r: Stored): QueueRow => ({ ...r, ahead: JSON.parse(r.ahead), verdict: r.verdict === null ? null : JSON.parse(r.verdict) })
const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v))
const iso = () => clock.nowDate().toISOString()

const one = (a: Access, sql: string, ...params: SQLQueryBindings[]) => a.db.query<Stored, SQLQueryBindings[]>(sql).get(...params)
const all = (a: Access, sql: string, ...params: SQLQueryBindings[]) =>
  a.db
    .query<Stored, SQLQueryBindings[]>(sql)
    .all(...params)
    .map(row)
// A claim's result and heartbeats count only for the build and attempt it took, while the row is still being checked.
const fenced = "id = ? AND gen = ? AND check_attempt = ? AND check_run = ? AND state = 'checking'"
const claimOf = (c: CheckClaim) => [c.id, c.gen, c.attempt, c.run] as const

export function queueOf(a: Access): QueueRows {
  return { ...lineOf(a), ...leadOf(a), ...checksOf(a) }
}

/** The line itself: candidates handed over, read, and forgotten. */
function lineOf(a: Access): Pick<QueueRows, "submit" | "line" | "ended" | "forget" | "clear"> {
  return {
    submit: (c: NewCandidate) =>
      a.write(() => {
        const { seq } = a.db.query<{ seq: number }, [string]>("SELECT coalesce(max(seq), 0) + 1 AS seq FROM queue_rows WHERE queue = ?").get(c.queue)!
        return row(
          one(
            a,
            `INSERT INTO queue_rows (queue, target, seq, task_id, branch, head, message, run_id, attempt, submitted_at, state)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'waiting') RETURNING ${COLUMNS}`,
            c.queue,
            c.target,
            seq,
            c.task_id,
            c.branch,
            c.head,
            c.message,
            c.run_id,
            c.attempt,
            iso(),
          )!,
        )
      }),
    line: (queue?: string) =>
      a.retry(() =>
        queue === undefined
          ? all(a, `SELECT ${COLUMNS} FROM queue_rows WHERE ${IN_LINE} ORDER BY queue, seq`)
          : all(a, `SELECT ${COLUMNS} FROM queue_rows WHERE queue = ? AND ${IN_LINE} ORDER BY seq`, queue),
      ),
    ended: (queue: string, run: string) =>
      a.retry(() => all(a, `SELECT ${COLUMNS} FROM queue_rows WHERE queue = ? AND run_id = ? AND state IN ('landed', 'left') ORDER BY seq`, queue, run)),
    forget: (ids: readonly number[]) =>
      a.write(() => {
        const del = a.db.query("DELETE FROM queue_rows WHERE id = ?")
        for (const id of ids) del.run(id)
      }),
    clear: () =>
      a.write(() => {
        a.db.exec("DELETE FROM queue_rows; DELETE FROM queue_leads;")
      }),
  }
}

/** The queue's lead: taken, renewed, released, and the changes it writes under it. */
function leadOf(a: Access): Pick<QueueRows, "lead" | "apply" | "renewLead" | "freeRun" | "release"> {
  return {
    lead: (queue: string, run: string, leaseMs: number) =>
      a.write(() => {
        const t = clock.now()
        a.db.query("INSERT INTO queue_leads (queue, epoch) VALUES (?, 0) ON CONFLICT (queue) DO NOTHING").run(queue)
        const taken = a.db
          .query<{ epoch: number; tip: string | null }, [string, number, string, number]>(
            "UPDATE queue_leads SET run = ?1, until = ?2, epoch = epoch + 1 WHERE queue = ?3 AND (run IS NULL OR until < ?4) RETURNING epoch, tip",
          )
          .get(run, t + leaseMs, queue, t)
        return taken ? { queue, run, epoch: taken.epoch, tip: taken.tip } : undefined
      }),
    apply: (lead: QueueLead, changes: readonly QueueChange[], tip?: string) =>
      a.write(() => {
        const held = a.db
          .query("SELECT 1 FROM queue_leads WHERE queue = ? AND run = ? AND epoch = ? AND until > ?")
          .get(lead.queue, lead.run, lead.epoch, clock.now())
        if (!held) return false
        const rebuilt = a.db.query(
          `UPDATE queue_rows SET gen = gen + 1, base = ?, merge = ?, ref = ?, ahead = ?, state = ?, reason = ?, verdict = ?, thrown = thrown + ?,
             check_run = NULL, check_machine = NULL, check_until = NULL, seconds = NULL WHERE id = ? AND gen = ?`,
        )
        const changed = a.db.query(
          `UPDATE queue_rows SET state = ?, reason = CASE WHEN ? THEN ? ELSE reason END, verdict = CASE WHEN ? THEN ? ELSE verdict END,
             thrown = thrown + ?, landed_at = CASE WHEN ? = 'landed' THEN ? ELSE landed_at END WHERE id = ? AND gen = ?`,
        )
        for (const c of changes) {
          if (c.build) {
            const b = c.build
            rebuilt.run(b.base, b.merge, b.ref, JSON.stringify(b.ahead), c.state, c.reason ?? null, json(c.verdict), c.thrown ?? 0, c.id, c.gen)
          } else {
            const [r, v] = [c.reason !== undefined, c.verdict !== undefined]
            changed.run(c.state, r, c.reason ?? null, v, json(c.verdict), c.thrown ?? 0, c.state, iso(), c.id, c.gen)
          }
        }
        if (tip !== undefined) a.db.query("UPDATE queue_leads SET tip = ? WHERE queue = ?").run(tip, lead.queue)
        return true
      }),
    renewLead: (lead: QueueLead, leaseMs: number) =>
      a.write(
        () =>
          a.db.query("UPDATE queue_leads SET until = ? WHERE queue = ? AND run = ? AND epoch = ?").run(clock.now() + leaseMs, lead.queue, lead.run, lead.epoch)
            .changes > 0,
      ),
    freeRun: (run: string) =>
      a.write(() => {
        a.db.query("UPDATE queue_leads SET run = NULL, until = NULL WHERE run = ?").run(run)
        a.db.query("UPDATE queue_rows SET check_until = 0 WHERE state = 'checking' AND check_run = ?").run(run)
      }),
    release: (lead: QueueLead) =>
      a.write(() => {
        a.db.query("UPDATE queue_leads SET run = NULL, until = NULL WHERE queue = ? AND run = ? AND epoch = ?").run(lead.queue, lead.run, lead.epoch)
      }),
  }
}

/** The checks: claimed, heartbeated and recorded, each fenced by its claim. */
function checksOf(a: Access): Pick<QueueRows, "claimCheck" | "renewCheck" | "checkDone" | "listen"> {
  return {
    claimCheck: (queue: string, run: string, leaseMs: number) =>
      a.write(() => {
        const t = clock.now()
        const r = one(
          a,
          `UPDATE queue_rows SET thrown = thrown + (state = 'checking'), state = 'checking', check_run = ?, check_machine = NULL,
             check_attempt = check_attempt + 1, check_until = ?, checks = checks + 1, seconds = NULL
           WHERE id = (SELECT id FROM queue_rows WHERE queue = ? AND (state = 'ready' OR (state = 'checking' AND check_until < ?)) ORDER BY seq LIMIT 1)
           RETURNING ${COLUMNS}`,
          run,
          t + leaseMs,
          queue,
          t,
        )
        if (!r) return undefined
        const got = row(r)
        const of = { run: got.run_id, machine: got.machine }
        return { id: got.id, queue, gen: got.gen, attempt: got.check_attempt, run, task_id: got.task_id, merge: got.merge!, ref: got.ref, ahead: got.ahead, of }
      }),
    renewCheck: (c: CheckClaim, leaseMs: number) =>
      a.write(() => a.db.query(`UPDATE queue_rows SET check_until = ? WHERE ${fenced}`).run(clock.now() + leaseMs, ...claimOf(c)).changes > 0),
    checkDone: (c: CheckClaim, o: CheckOutcome) =>
      a.write(
        () =>
          a.db
            .query(`UPDATE queue_rows SET state = ?, seconds = ?, reason = ?, verdict = ?, check_until = NULL WHERE ${fenced} AND check_until > ?`)
            .run(o.ok ? "passed" : "failed", o.seconds, o.reason ?? null, json(o.verdict), ...claimOf(c), clock.now()).changes > 0,
      ),
    listen: async () => async () => {},
  }
}
