// The run state's file backend (lib/state/run-state.ts): questions, agents, the event log, the merge journal,
// checkout moves, process groups, landing waits and the merge queue's rows, in one SQLite database
// (.flow/state.db) that many processes (the orchestrator, every agent's `flow ask`, a person's `flow answer`)
// write at once. tasks.yaml
// stays the source of truth for tasks; nothing here is about them.
//
// Concurrency: WAL mode, so readers never wait for the writer. bun:sqlite's busy_timeout is a blocking
// sleep inside SQLite that stalls the whole event loop (the orchestrator's agents, its UI), so it is kept at
// 50 ms and a busy database is retried here, asynchronously, with jittered back-off, up to the project's
// lock timeout (FLOW_LOCK_TIMEOUT), then a FlowError says which file stayed busy.
import { Database, SQLiteError } from "bun:sqlite"
import { existsSync } from "node:fs"
import { dirname } from "node:path"
import { Exit, FlowError } from "../../cli/errors"
import type { Project } from "../../cli/project"
import { stateFile } from "../state-file"
import { diskFullError, isDiskFull } from "../../store/disk-full"
import { ensureStateDir } from "../../store/valid-cache"
import {
  AGENT_FIELDS,
  type AgentRecord,
  type AgentUpdate,
  type AnswerCheck,
  type FlowEvent,
  type NewEvent,
  type Question,
  type RunState,
  type SpendRow,
  type StateDump,
  type TaskEnd,
  type Usage,
  usageByKey,
} from "../run-state"
import { type Access, groupsOf, landingWaitsOf, mergesOf, movesOf } from "./journals"
import { queueOf } from "./queue-db"
import { MIGRATIONS, SCHEMA_VERSION } from "./migrations"

export { SCHEMA_VERSION }
import { dumpRows, loadRows } from "./rows"
import * as clock from "../../cli/clock"

const BUSY_TIMEOUT_MS = 50

const QUESTION_COLUMNS = "id, task_id, agent, text, kind, asked_at, answer, answered_at, answered_by"
// Tokens as billed where the report says (lib/budget/prices.ts), else input and output as reported (an older flow's events).
const SPEND = `kind, sum(json_extract(data, '$.costUsd')) AS cost,
  sum(coalesce(json_extract(data, '$.billedTokens'), coalesce(json_extract(data, '$.inputTokens'), 0) + coalesce(json_extract(data, '$.outputTokens'), 0))) AS tokens,
  sum(json_extract(data, '$.seconds')) AS seconds
  FROM events WHERE kind IN ('agent.usage', 'agent.exit')`

// Defined in lib/state/state-file.ts: lib/state/state.ts asks for the file before this module (and bun:sqlite) loads.
export { stateFile }

/** Opens (creating it and .flow/ when missing) the project's state database. */
export async function openStateDb(project: Project): Promise<StateDb> {
  ensureStateDir(project.stateDir)
  return StateDb.open(project, true)
}

/** The state database if it exists, else undefined: read-only commands must not create files. */
export async function openExistingStateDb(project: Project): Promise<StateDb | undefined> {
  if (!existsSync(stateFile(project))) return undefined
  return StateDb.open(project, false)
}

export class StateDb implements RunState {
  private lastDataVersion = -1

  private constructor(
    private readonly db: Database,
    readonly file: string,
    private readonly timeoutMs: number,
  ) {
    const access: Access = { db, write: (fn) => this.write(fn), retry: (fn) => this.retry(fn) }
    this.merges = mergesOf(access)
    this.moves = movesOf(access)
    this.groups = groupsOf(access)
    this.landingWaits = landingWaitsOf(access)
    this.queue = queueOf(access)
  }

  static async open(project: Project, create: boolean): Promise<StateDb> {
    const file = stateFile(project)
    let db: Database
    try {
      db = new Database(file, { readwrite: true, create, strict: true })
    } catch (e) {
      if (isDiskFull(e)) throw diskFullError(project.stateDir, e, `cannot open ${file}`)
      throw new FlowError(`cannot open ${file}: ${(e as Error).message}`, Exit.failure, "check the permissions of the project's .flow folder", { cause: e })
    }
    const state = new StateDb(db, file, project.lockTimeoutMs)
    try {
      db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
      await state.setUp()
    } catch (e) {
      db.close()
      // A WAL database needs room for its index (-shm) even to be read: on a full disk opening fails.
      if (isDiskFull(e)) throw diskFullError(project.stateDir, e, `cannot open ${file}`)
      throw e
    }
    return state
  }

  /** WAL mode (persistent in the file, so set once) and the schema migrations, each under the write lock. */
  private async setUp(): Promise<void> {
    await this.retry(() => {
      const mode = this.db.query<{ journal_mode: string }, []>("PRAGMA journal_mode").get()?.journal_mode
      if (mode !== "wal") this.db.exec("PRAGMA journal_mode = WAL")
    })
    if ((await this.retry(() => this.version())) === SCHEMA_VERSION) return
    await this.write(() => {
      // Re-read under the lock: another process may have migrated since.
      const from = this.version()
      if (from > SCHEMA_VERSION) {
        throw new FlowError(
          `${this.file} has schema version ${from}, newer than this flow knows (${SCHEMA_VERSION})`,
          Exit.invalid,
          "update flow, or delete .flow/state.db to start the runtime state afresh (pending questions are lost)",
        )
      }
      for (let v = from; v < SCHEMA_VERSION; v++) this.db.exec(MIGRATIONS[v])
      this.db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`)
    })
  }

  private version(): number {
    return this.db.query<{ user_version: number }, []>("PRAGMA user_version").get()?.user_version ?? 0
  }

  get where(): string {
    return this.file
  }

  close(): void {
    this.db.close()
  }

  [Symbol.dispose](): void {
    this.close()
  }

  /**
   * True when another connection committed since the last call (SQLite's data_version): a waiting
   * process re-reads only then. The first call returns true.
   */
  async changed(): Promise<boolean> {
    const v = this.db.query<{ data_version: number }, []>("PRAGMA data_version").get()?.data_version ?? 0
    const changed = v !== this.lastDataVersion
    this.lastDataVersion = v
    return changed
  }

  readonly questions = {
    /**
     * Records a question and its `question.asked` event; ids are sequential per project: q-1, q-2, ... `kind`:
     * null for an agent's question, `budget:<unit>` for flow's own about a task's budget (lib/budget/budget.ts).
     */
    ask: (q: { task_id: string; agent?: string | null; text: string; kind?: string | null }): Promise<Question> =>
      this.write(() => {
        const seq = this.db.query<{ n: number }, []>("SELECT coalesce(max(seq), 0) + 1 AS n FROM questions").get()?.n ?? 1
        const id = `q-${seq}`
        const at = now()
        this.db
          .query("INSERT INTO questions (id, seq, task_id, agent, text, kind, asked_at) VALUES ($id, $seq, $task, $agent, $text, $kind, $at)")
          .run({ id, seq, task: q.task_id, agent: q.agent ?? null, text: q.text, kind: q.kind ?? null, at })
        this.insertEvent({ kind: "question.asked", task_id: q.task_id, agent: q.agent, data: { question: id } }, at)
        const kind = q.kind ?? null
        return { id, task_id: q.task_id, agent: q.agent ?? null, text: q.text, kind, asked_at: at, answer: null, answered_at: null, answered_by: null }
      }),
    get: (id: string): Promise<Question | undefined> =>
      this.retry(() => this.db.query<Question, [string]>(`SELECT ${QUESTION_COLUMNS} FROM questions WHERE id = ?`).get(id) ?? undefined),
    /** Oldest first. */
    pending: (): Promise<Question[]> =>
      this.retry(() => this.db.query<Question, []>(`SELECT ${QUESTION_COLUMNS} FROM questions WHERE answer IS NULL ORDER BY seq`).all()),
    all: (): Promise<Question[]> => this.retry(() => this.db.query<Question, []>(`SELECT ${QUESTION_COLUMNS} FROM questions ORDER BY seq`).all()),
    /** One task's questions from its agents (not flow's own about its budget), answered or not, oldest first. */
    forTask: (taskId: string): Promise<Question[]> =>
      this.retry(() =>
        this.db.query<Question, [string]>(`SELECT ${QUESTION_COLUMNS} FROM questions WHERE task_id = ? AND kind IS NULL ORDER BY seq`).all(taskId),
      ),
    /** The questions flow asked about one task's budget (lib/budget/budget.ts), answered or not, oldest first. */
    aboutBudget: (taskId: string): Promise<Question[]> =>
      this.retry(() =>
        this.db.query<Question, [string]>(`SELECT ${QUESTION_COLUMNS} FROM questions WHERE task_id = ? AND kind LIKE 'budget:%' ORDER BY seq`).all(taskId),
      ),
    /**
     * The task's answered questions whose answer its agent was not given yet, oldest first: no
     * `question.delivered` event since the answer (it asked without --wait and exited before the answer came,
     * or the answer was replaced after it was given).
     */
    undelivered: (taskId: string): Promise<Question[]> =>
      this.retry(() =>
        this.db
          .query<Question, [string]>(
            `SELECT ${QUESTION_COLUMNS} FROM questions q WHERE q.task_id = ? AND q.kind IS NULL AND q.answer IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM events e WHERE e.kind = 'question.delivered' AND e.task_id = q.task_id
                 AND json_extract(e.data, '$.question') = q.id AND e.at >= q.answered_at)
             ORDER BY q.seq`,
          )
          .all(taskId),
      ),
    /** Records that the task's agent was given these answers (`via`: by `flow ask --wait`, or in a prompt). */
    delivered: (taskId: string, ids: readonly string[], via: string): Promise<void> =>
      this.write(() => {
        const at = now()
        for (const id of ids) this.insertEvent({ kind: "question.delivered", task_id: taskId, data: { question: id, via } }, at)
      }),
    /**
     * Records the answer unless the question already has one (then `replace` decides). Returns the
     * question as it was before, so the caller can tell "unknown" and "already answered" apart. `accept`
     * refuses an answer the question cannot take (a budget question's: lib/budget/budget.ts): nothing is written.
     */
    answer: (
      id: string,
      answer: string,
      by: string,
      opts: { replace?: boolean; accept: AnswerCheck },
    ): Promise<{ before: Question | undefined; after: Question | undefined }> =>
      this.write(() => {
        const before = this.db.query<Question, [string]>(`SELECT ${QUESTION_COLUMNS} FROM questions WHERE id = ?`).get(id) ?? undefined
        if (!before || (before.answer !== null && !opts.replace)) return { before, after: undefined }
        opts.accept(before, answer)
        const at = now()
        this.db.query("UPDATE questions SET answer = ?, answered_at = ?, answered_by = ? WHERE id = ?").run(answer, at, by, id)
        this.insertEvent(
          { kind: "question.answered", task_id: before.task_id, agent: before.agent, data: { question: id, by, replaced: before.answer !== null } },
          at,
        )
        return { before, after: { ...before, answer, answered_at: at, answered_by: by } }
      }),
  }

  readonly events = {
    append: (e: NewEvent): Promise<number> => this.write(() => this.insertEvent(e, now())),
    /** Events with an id above `afterId`, oldest first: a subscriber keeps the last id it saw. */
    since: (afterId = 0, limit = 1000): Promise<FlowEvent[]> =>
      this.retry(() =>
        this.db
          .query<Omit<FlowEvent, "data"> & { data: string | null }, [number, number]>(
            "SELECT id, at, kind, task_id, agent, data FROM events WHERE id > ? ORDER BY id LIMIT ?",
          )
          .all(afterId, limit)
          .map((row) => ({ ...row, data: row.data === null ? null : JSON.parse(row.data) })),
      ),
    /** The events of the given kinds since the latest `run.start` (all of them when no run started), oldest first. */
    ofLastRun: (kinds: readonly string[]): Promise<FlowEvent[]> =>
      this.retry(() =>
        this.db
          .query<Omit<FlowEvent, "data"> & { data: string | null }, string[]>(
            `SELECT id, at, kind, task_id, agent, data FROM events WHERE id > (SELECT coalesce(max(id), 0) FROM events WHERE kind = 'run.start') AND kind IN (${kinds.map(() => "?").join(", ")}) ORDER BY id`,
          )
          .all(...kinds)
          .map((row) => ({ ...row, data: row.data === null ? null : JSON.parse(row.data) })),
      ),
    ofTask: (taskId: string, kinds: readonly string[]): Promise<FlowEvent[]> =>
      this.retry(() =>
        this.db
          .query<Omit<FlowEvent, "data"> & { data: string | null }, string[]>(
            `SELECT id, at, kind, task_id, agent, data FROM events WHERE task_id = ? AND kind IN (${kinds.map(() => "?").join(", ")}) ORDER BY id`,
          )
          .all(taskId, ...kinds)
          .map((row) => ({ ...row, data: row.data === null ? null : JSON.parse(row.data) })),
      ),
    /** Each task's last end in a run (`task.end`): which agent had it, when, and the status it was left in. */
    lastTaskEnds: (): Promise<Map<string, TaskEnd>> =>
      this.retry(() => {
        const rows = this.db
          .query<{ task_id: string; agent: string | null; at: string; data: string | null }, []>(
            "SELECT task_id, agent, at, data FROM events WHERE id IN (SELECT MAX(id) FROM events WHERE kind = 'task.end' AND task_id IS NOT NULL GROUP BY task_id)",
          )
          .all()
        return new Map(rows.map((r) => [r.task_id, { agent: r.agent, at: r.at, status: String((r.data === null ? {} : JSON.parse(r.data)).status ?? "") }]))
      }),
  }

  /**
   * Tokens and cost summed from the `agent.usage` events (each is one report's own usage: lib/budget/usage-meter.ts),
   * grouped by task or agent, or over the last run (the events after the latest `run.start`). A group with no
   * report is absent; a field no report had stays absent (docs/AGENTS.md "Tokens and cost").
   */
  readonly usage = {
    byTask: (): Promise<Map<string, Usage>> => this.sumUsage("task_id"),
    byAgent: (): Promise<Map<string, Usage>> => this.sumUsage("agent"),
    lastRun: async (): Promise<Usage | null> =>
      (await this.sumUsage("'run'", "id > (SELECT coalesce(max(id), 0) FROM events WHERE kind = 'run.start')")).get("run") ?? null,
  }

  private sumUsage(group: "task_id" | "agent" | "'run'", where = "1"): Promise<Map<string, Usage>> {
    type Row = { key: string | null; input: number | null; output: number | null; cost: number | null; estimated: number | null }
    return this.retry(() => {
      const rows = this.db
        .query<Row, []>(
          `SELECT ${group} AS key, sum(json_extract(data, '$.inputTokens')) AS input, sum(json_extract(data, '$.outputTokens')) AS output,
           sum(json_extract(data, '$.costUsd')) AS cost, max(json_extract(data, '$.costEstimated')) AS estimated
           FROM events WHERE kind = 'agent.usage' AND ${where} GROUP BY 1`,
        )
        .all()
      return usageByKey(rows)
    })
  }

  readonly agents = {
    /** Creates the agent or updates the given fields. */
    upsert: (name: string, update: AgentUpdate = {}): Promise<AgentRecord> =>
      this.write(() => {
        const at = now()
        this.db.query("INSERT INTO agents (name, updated_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING").run(name, at)
        const keys = AGENT_FIELDS.filter((k) => update[k] !== undefined)
        const sets = [...keys.map((k) => `${k} = $${k}`), "updated_at = $at"].join(", ")
        const params: Record<string, string | number | null> = { name, at }
        for (const k of keys) params[k] = update[k] ?? null
        this.db.query(`UPDATE agents SET ${sets} WHERE name = $name`).run(params)
        return this.db.query<AgentRecord, [string]>("SELECT * FROM agents WHERE name = ?").get(name)!
      }),
    /** Adds one to the agent's completed count, atomically (two processes may finish tasks at once). */
    countCompleted: (name: string): Promise<number> =>
      this.write(() => {
        const at = now()
        this.db
          .query(
            "INSERT INTO agents (name, completed, updated_at) VALUES (?, 1, ?) ON CONFLICT (name) DO UPDATE SET completed = completed + 1, updated_at = excluded.updated_at",
          )
          .run(name, at)
        return this.db.query<{ completed: number }, [string]>("SELECT completed FROM agents WHERE name = ?").get(name)!.completed
      }),
    get: (name: string): Promise<AgentRecord | undefined> =>
      this.retry(() => this.db.query<AgentRecord, [string]>("SELECT * FROM agents WHERE name = ?").get(name) ?? undefined),
    list: (): Promise<AgentRecord[]> => this.retry(() => this.db.query<AgentRecord, []>("SELECT * FROM agents ORDER BY name").all()),
    everywhere: (): Promise<AgentRecord[]> => this.agents.list(),
  }

  /** What budgets count (lib/budget/budget-meter.ts folds the rows). */
  readonly spend = {
    byTask: (taskId?: string, before?: string): Promise<(SpendRow & { task_id: string })[]> =>
      this.retry(() =>
        taskId === undefined
          ? this.db.query<SpendRow & { task_id: string }, []>(`SELECT task_id, ${SPEND} AND task_id IS NOT NULL GROUP BY task_id, kind`).all()
          : this.db
              .query<SpendRow & { task_id: string }, [string, string]>(`SELECT task_id, ${SPEND} AND task_id = ? AND at < ? GROUP BY task_id, kind`)
              .all(taskId, before ?? "9999"),
      ),
    lastRun: (): Promise<{ startedAt: string; endedAt: string | null; rows: (SpendRow & { agent: string | null })[] } | undefined> =>
      this.retry(() => {
        const start = this.db.query<{ id: number; at: string }, []>("SELECT id, at FROM events WHERE kind = 'run.start' ORDER BY id DESC LIMIT 1").get()
        if (!start) return undefined
        const end = this.db.query<{ at: string }, [number]>("SELECT at FROM events WHERE kind = 'run.end' AND id > ? ORDER BY id LIMIT 1").get(start.id)
        const rows = this.db.query<SpendRow & { agent: string | null }, [number]>(`SELECT agent, ${SPEND} AND id > ? GROUP BY agent, kind`).all(start.id)
        return { startedAt: start.at, endedAt: end?.at ?? null, rows }
      }),
  }

  readonly merges: RunState["merges"]
  readonly moves: RunState["moves"]
  readonly groups: RunState["groups"]
  readonly landingWaits: RunState["landingWaits"]
  readonly queue: RunState["queue"]

  dump(): Promise<StateDump> {
    return this.retry(() => dumpRows(this.db))
  }

  load(dump: StateDump): Promise<void> {
    return this.write(() => loadRows(this.db, dump))
  }

  private insertEvent(e: NewEvent, at: string): number {
    const data = e.data === undefined ? null : JSON.stringify(e.data)
    const result = this.db
      .query("INSERT INTO events (at, kind, task_id, agent, data) VALUES (?, ?, ?, ?, ?)")
      .run(at, e.kind, e.task_id ?? null, e.agent ?? null, data)
    return Number(result.lastInsertRowid)
  }

  /** `fn` in a write transaction taken at once (BEGIN IMMEDIATE: a deferred one could fail mid-way on upgrade). */
  private write<T>(fn: () => T): Promise<T> {
    return this.retry(() => this.db.transaction(fn).immediate())
  }

  /**
   * Runs `fn`, retrying while the database is busy, with jittered back-off, until the timeout. A full disk
   * is not retried here: it becomes a DiskFull naming the folder (`flow run` waits it out, commands fail cleanly).
   */
  private async retry<T>(fn: () => T): Promise<T> {
    const deadline = performance.now() + this.timeoutMs
    let wait = 2
    for (;;) {
      try {
        return fn()
      } catch (e) {
        if (isDiskFull(e)) throw diskFullError(dirname(this.file), e, `cannot use ${this.file}`)
        if (!isBusy(e)) throw e
        if (performance.now() > deadline) {
          throw new FlowError(
            `${this.file} stayed busy (locked by another flow process) for ${this.timeoutMs / 1000} s`,
            Exit.failure,
            "try again; if it persists, look for a stuck flow process, or raise FLOW_LOCK_TIMEOUT (seconds)",
            { cause: e },
          )
        }
        // Jitter keeps many agents from retrying in lockstep.
        await Bun.sleep(wait + Math.random() * wait)
        wait = Math.min(wait * 2, 50)
      }
    }
  }
}

function isBusy(e: unknown): boolean {
  return e instanceof SQLiteError && e.code?.startsWith("SQLITE_BUSY") === true
}

function now(): string {
  return clock.nowDate().toISOString()
}
