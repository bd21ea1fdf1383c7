// The shared backend of the run state (lib/state/run-state.ts): .flow/state.db's tables in PostgreSQL with a
// project key (lib/store/postgres/migrations.ts), so a question asked on one machine is answered from any
// other, and every machine's agents, events and usage are seen from all. Times come from the database's
// clock (flow_now()), in the text state.db holds. Process groups, checkout moves and landing waits carry the
// machine that wrote them; a machine reads and clears only its own.
import type { SQL } from "bun"
import type { SharedSetting } from "../../store/setting"
import type { Database } from "../../store/postgres/connection"
import { missingProject } from "../../store/postgres/pg-store"
import { PgQueueRows } from "./pg-queue"
import {
  type AgentGroup,
  type AgentRecord,
  type AgentUpdate,
  type AnswerCheck,
  type CheckoutMove,
  type FlowEvent,
  type LandingWaitRow,
  type MergeEntry,
  mergeEntry,
  type MergeIntent,
  type MergeOutcome,
  type MergeRow,
  type MoveOutcome,
  type NewEvent,
  type Question,
  type RunState,
  type SpendRow,
  type StateDump,
  type TaskEnd,
  type Usage,
  usageByKey,
  type UsageSum,
} from "../run-state"

/** Events inserted per statement when a whole log is loaded. */
const EVENT_BATCH = 5000

const QUESTION = "id, task_id, agent, text, kind, asked_at, answer, answered_at, answered_by"
const AGENT = "name, cli, current_task, completed, session_id, updated_at, parked_until, parked_reason, parked_task"
// An agent is one machine's (agents are keyed by project, machine and name): its record says which.
const MACHINE_AGENT = `${AGENT}, machine`
// Tokens as billed where the report says (lib/budget/prices.ts), else input and output as reported (an older flow's events).
const SPEND = `sum((data ->> 'costUsd')::float8) AS cost,
  sum(coalesce((data ->> 'billedTokens')::float8, coalesce((data ->> 'inputTokens')::float8, 0) + coalesce((data ->> 'outputTokens')::float8, 0))) AS tokens,
  sum((data ->> 'seconds')::float8) AS seconds, kind`
/** agentKey (lib/state/run-state.ts) of an event's agent and machine, in SQL. */
const AGENT_KEY = "agent || '@' || coalesce(machine, '')"
const MERGE = `id::float8 AS id, task_id, repo, branch, branch_head, target, target_before, started_at, outcome, merge_commit, detail, closed_at`

export class PgRunState implements RunState {
  private lastEvent = -1
  readonly queue: PgQueueRows

  private constructor(
    private readonly db: Database,
    private readonly setting: SharedSetting,
  ) {
    this.queue = new PgQueueRows(db, setting)
  }

  /** The project's run state; a FlowError when the database does not hold the project. */
  static async open(db: Database, setting: SharedSetting): Promise<PgRunState> {
    await db.run(async (sql) => {
      const [row] = await sql`SELECT 1 AS one FROM projects WHERE key = ${setting.key}`
      if (!row) throw await missingProject(sql, setting)
    })
    return new PgRunState(db, setting)
  }

  /** The run state of a project being created in the caller's transaction (`flow share`). */
  static creating(db: Database, setting: SharedSetting): PgRunState {
    return new PgRunState(db, setting)
  }

  get where(): string {
    return `${this.setting.shown} (project ${this.setting.key})`
  }

  private get key(): string {
    return this.setting.key
  }

  private get machine(): string {
    return this.setting.machine
  }

  private run<T>(fn: (sql: SQL) => Promise<T>): Promise<T> {
    return this.db.run(fn)
  }

  private tx<T>(fn: (tx: SQL) => Promise<T>): Promise<T> {
    return this.db.run((sql) => sql.begin(fn) as Promise<T>)
  }

  async changed(): Promise<boolean> {
    // Every change a waiting process looks for (an answer, a question) writes an event.
    const [{ last }] = await this.run((sql) => sql`SELECT coalesce(max(id), 0)::float8 AS last FROM events WHERE project = ${this.key}`)
    const changed = last !== this.lastEvent
    this.lastEvent = last
    return changed
  }

  private async insertEvent(sql: SQL, e: NewEvent, at?: string): Promise<number> {
    const data = e.data === undefined ? null : JSON.stringify(e.data)
    const [{ id }] = await sql`
      INSERT INTO events (project, at, kind, task_id, agent, machine, data)
      VALUES (${this.key}, coalesce(${at ?? null}, flow_now()), ${e.kind}, ${e.task_id ?? null}, ${e.agent ?? null}, ${this.machine}, ${data}::text::json)
      RETURNING id::float8 AS id`
    return id
  }

  readonly questions = {
    ask: (q: { task_id: string; agent?: string | null; text: string; kind?: string | null }): Promise<Question> =>
      this.tx(async (tx) => {
        const [{ seq }] = await tx`UPDATE projects SET question_seq = question_seq + 1 WHERE key = ${this.key} RETURNING question_seq AS seq`
        const id = `q-${seq}`
        const [row] = await tx`
          INSERT INTO questions (project, id, seq, task_id, agent, text, kind, asked_at, machine)
          VALUES (${this.key}, ${id}, ${seq}, ${q.task_id}, ${q.agent ?? null}, ${q.text}, ${q.kind ?? null}, flow_now(), ${this.machine})
          RETURNING ${tx.unsafe(QUESTION)}`
        await this.insertEvent(tx, { kind: "question.asked", task_id: q.task_id, agent: q.agent, data: { question: id } }, row.asked_at)
        return { ...row } as Question
      }),
    get: async (id: string): Promise<Question | undefined> => {
      const [row] = await this.run((sql) => sql`SELECT ${sql.unsafe(QUESTION)} FROM questions WHERE project = ${this.key} AND id = ${id}`)
      return row ? ({ ...row } as Question) : undefined
    },
    pending: (): Promise<Question[]> =>
      this.rows((sql) => sql`SELECT ${sql.unsafe(QUESTION)} FROM questions WHERE project = ${this.key} AND answer IS NULL ORDER BY seq`),
    all: (): Promise<Question[]> => this.rows((sql) => sql`SELECT ${sql.unsafe(QUESTION)} FROM questions WHERE project = ${this.key} ORDER BY seq`),
    forTask: (taskId: string): Promise<Question[]> =>
      this.rows((sql) => sql`SELECT ${sql.unsafe(QUESTION)} FROM questions WHERE project = ${this.key} AND task_id = ${taskId} AND kind IS NULL ORDER BY seq`),
    aboutBudget: (taskId: string): Promise<Question[]> =>
      this.rows(
        (sql) => sql`SELECT ${sql.unsafe(QUESTION)} FROM questions WHERE project = ${this.key} AND task_id = ${taskId} AND kind LIKE 'budget:%' ORDER BY seq`,
      ),
    undelivered: (taskId: string): Promise<Question[]> =>
      this.rows(
        (sql) => sql`
          SELECT ${sql.unsafe(QUESTION)} FROM questions q
          WHERE q.project = ${this.key} AND q.task_id = ${taskId} AND q.kind IS NULL AND q.answer IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM events e WHERE e.project = q.project AND e.kind = 'question.delivered' AND e.task_id = q.task_id
              AND e.data ->> 'question' = q.id AND e.at >= q.answered_at)
          ORDER BY q.seq`,
      ),
    delivered: async (taskId: string, ids: readonly string[], via: string): Promise<void> => {
      if (ids.length === 0) return
      await this.tx(async (tx) => {
        const [{ at }] = await tx`SELECT flow_now() AS at`
        for (const id of ids) await this.insertEvent(tx, { kind: "question.delivered", task_id: taskId, data: { question: id, via } }, at)
      })
    },
    answer: (
      id: string,
      answer: string,
      by: string,
      opts: { replace?: boolean; accept: AnswerCheck },
    ): Promise<{ before: Question | undefined; after: Question | undefined }> =>
      this.tx(async (tx) => {
        const [found] = await tx`SELECT ${tx.unsafe(QUESTION)} FROM questions WHERE project = ${this.key} AND id = ${id} FOR UPDATE`
        const before = found ? ({ ...found } as Question) : undefined
        if (!before || (before.answer !== null && !opts.replace)) return { before, after: undefined }
        opts.accept(before, answer)
        const [{ at }] = await tx`
          UPDATE questions SET answer = ${answer}, answered_at = flow_now(), answered_by = ${by}
          WHERE project = ${this.key} AND id = ${id} RETURNING answered_at AS at`
        await this.insertEvent(
          tx,
          { kind: "question.answered", task_id: before.task_id, agent: before.agent, data: { question: id, by, replaced: before.answer !== null } },
          at,
        )
        return { before, after: { ...before, answer, answered_at: at, answered_by: by } }
      }),
  }

  private async rows<T>(query: (sql: SQL) => Promise<T[]>): Promise<T[]> {
    return (await this.run(query)).map((r) => ({ ...r }))
  }

  readonly events = {
    append: (e: NewEvent): Promise<number> => this.run((sql) => this.insertEvent(sql, e)),
    since: (afterId = 0, limit = 1000): Promise<FlowEvent[]> =>
      this.rows(
        (sql) => sql`
          SELECT id::float8 AS id, at, kind, task_id, agent, data FROM events
          WHERE project = ${this.key} AND id > ${afterId} ORDER BY id LIMIT ${limit}`,
      ),
    ofLastRun: (kinds: readonly string[]): Promise<FlowEvent[]> =>
      this.rows(
        (sql) => sql`
          SELECT id::float8 AS id, at, kind, task_id, agent, data FROM events
          WHERE ${this.lastRunEvents(sql)} AND kind = ANY(${sql.array([...kinds])}::text[])
          ORDER BY id`,
      ),
    ofTask: (taskId: string, kinds: readonly string[]): Promise<FlowEvent[]> =>
      this.rows(
        (sql) => sql`
          SELECT id::float8 AS id, at, kind, task_id, agent, data FROM events
          WHERE project = ${this.key} AND task_id = ${taskId} AND kind = ANY(${sql.array([...kinds])}::text[])
          ORDER BY id`,
      ),
    lastTaskEnds: async (): Promise<Map<string, TaskEnd>> => {
      const rows = await this.run(
        (sql) => sql`
          SELECT DISTINCT ON (task_id) task_id, agent, at, data ->> 'status' AS status, machine FROM events
          WHERE project = ${this.key} AND kind = 'task.end' AND task_id IS NOT NULL ORDER BY task_id, id DESC`,
      )
      return new Map(
        rows.map((r: { task_id: string; agent: string | null; at: string; status: string | null; machine: string | null }) => [
          r.task_id,
          { agent: r.agent, at: r.at, status: r.status ?? "", machine: r.machine ?? "" },
        ]),
      )
    },
  }

  /**
   * The events of "the last run", in SQL: this machine's newest run's, the events this machine wrote since its
   * latest `run.start` (every one it wrote when it never started a run). Another machine's run is not this
   * person's, and runs of several machines interleave in the log (docs/FLEET.md, "The last run").
   */
  private lastRunEvents(sql: SQL) {
    return sql`project = ${this.key} AND machine = ${this.machine}
      AND id > (SELECT coalesce(max(id), 0) FROM events WHERE project = ${this.key} AND machine = ${this.machine} AND kind = 'run.start')`
  }

  readonly usage = {
    byTask: (): Promise<Map<string, Usage>> =>
      this.sumUsage((sql) => sql`${this.usageSums(sql, "task_id")} FROM events WHERE project = ${this.key} AND kind = 'agent.usage' GROUP BY 1`),
    // By agent and machine (agentKey), as agents are.
    byAgent: (): Promise<Map<string, Usage>> =>
      this.sumUsage((sql) => sql`${this.usageSums(sql, AGENT_KEY)} FROM events WHERE project = ${this.key} AND kind = 'agent.usage' GROUP BY 1`),
    lastRun: async (): Promise<Usage | null> =>
      (
        await this.sumUsage(
          (sql) => sql`
            ${this.usageSums(sql, "'run'")} FROM events WHERE ${this.lastRunEvents(sql)} AND kind = 'agent.usage' GROUP BY 1`,
        )
      ).get("run") ?? null,
  }

  private usageSums(sql: SQL, group: "task_id" | typeof AGENT_KEY | "'run'") {
    return sql.unsafe(
      `SELECT ${group} AS key, sum((data ->> 'inputTokens')::float8) AS input, sum((data ->> 'outputTokens')::float8) AS output,
       sum((data ->> 'costUsd')::float8) AS cost, bool_or((data ->> 'costEstimated')::boolean) AS estimated`,
    )
  }

  private async sumUsage(query: (sql: SQL) => Promise<UsageSum[]>) {
    return usageByKey(await this.run(query))
  }

  readonly spend = {
    byTask: (taskId?: string, before?: string): Promise<(SpendRow & { task_id: string })[]> =>
      this.rows(
        (sql) => sql`
          SELECT task_id, ${sql.unsafe(SPEND)} FROM events
          WHERE project = ${this.key} AND kind IN ('agent.usage', 'agent.exit') AND task_id IS NOT NULL
            AND (${taskId ?? null}::text IS NULL OR task_id = ${taskId ?? null}) AND at < ${before ?? "9999"}
          GROUP BY task_id, kind`,
      ),
    lastRun: async (
      machine = this.machine,
    ): Promise<{ startedAt: string; endedAt: string | null; rows: (SpendRow & { agent: string | null })[] } | undefined> =>
      this.tx(async (tx) => {
        const [start] = await tx`
          SELECT id::float8 AS id, at FROM events
          WHERE project = ${this.key} AND machine = ${machine} AND kind = 'run.start' ORDER BY id DESC LIMIT 1`
        if (!start) return undefined
        const ofRun = tx`project = ${this.key} AND machine = ${machine} AND id > ${start.id}`
        const [end] = await tx`SELECT at FROM events WHERE ${ofRun} AND kind = 'run.end' ORDER BY id LIMIT 1`
        const rows = await tx`
          SELECT agent, coalesce(machine, '') AS machine, ${tx.unsafe(SPEND)} FROM events
          WHERE ${ofRun} AND kind IN ('agent.usage', 'agent.exit') GROUP BY agent, machine, kind`
        return { startedAt: start.at, endedAt: end?.at ?? null, rows: rows.map((r: SpendRow & { agent: string | null; machine: string }) => ({ ...r })) }
      }),
  }

  // The agents of this machine's runs: two machines' runs may name their agents alike, and each machine writes,
  // resumes and parks only its own (a session lives on the machine whose CLI started it); every machine's are read
  // by `everywhere`, for what a person reads.
  readonly agents = {
    upsert: async (name: string, update: AgentUpdate = {}): Promise<AgentRecord> => {
      const has = (k: keyof AgentUpdate) => update[k] !== undefined
      const [row] = await this.run(
        (sql) => sql`
          INSERT INTO agents (project, name, cli, current_task, completed, session_id, parked_until, parked_reason, parked_task, machine, updated_at)
          VALUES (${this.key}, ${name}, ${update.cli ?? null}, ${update.current_task ?? null}, ${update.completed ?? 0},
                  ${update.session_id ?? null}, ${update.parked_until ?? null}, ${update.parked_reason ?? null}, ${update.parked_task ?? null},
                  ${this.machine}, flow_now())
          ON CONFLICT (project, machine, name) DO UPDATE SET
            cli = CASE WHEN ${has("cli")} THEN excluded.cli ELSE agents.cli END,
            current_task = CASE WHEN ${has("current_task")} THEN excluded.current_task ELSE agents.current_task END,
            completed = CASE WHEN ${has("completed")} THEN excluded.completed ELSE agents.completed END,
            session_id = CASE WHEN ${has("session_id")} THEN excluded.session_id ELSE agents.session_id END,
            parked_until = CASE WHEN ${has("parked_until")} THEN excluded.parked_until ELSE agents.parked_until END,
            parked_reason = CASE WHEN ${has("parked_reason")} THEN excluded.parked_reason ELSE agents.parked_reason END,
            parked_task = CASE WHEN ${has("parked_task")} THEN excluded.parked_task ELSE agents.parked_task END,
            updated_at = excluded.updated_at
          RETURNING ${sql.unsafe(MACHINE_AGENT)}`,
      )
      return { ...row } as AgentRecord
    },
    countCompleted: async (name: string): Promise<number> => {
      const [{ completed }] = await this.run(
        (sql) => sql`
          INSERT INTO agents (project, name, completed, machine, updated_at) VALUES (${this.key}, ${name}, 1, ${this.machine}, flow_now())
          ON CONFLICT (project, machine, name) DO UPDATE SET completed = agents.completed + 1, updated_at = excluded.updated_at
          RETURNING completed`,
      )
      return completed
    },
    get: async (name: string): Promise<AgentRecord | undefined> => {
      const [row] = await this.run(
        (sql) => sql`SELECT ${sql.unsafe(MACHINE_AGENT)} FROM agents WHERE project = ${this.key} AND machine = ${this.machine} AND name = ${name}`,
      )
      return row ? ({ ...row } as AgentRecord) : undefined
    },
    list: (): Promise<AgentRecord[]> =>
      this.rows((sql) => sql`SELECT ${sql.unsafe(MACHINE_AGENT)} FROM agents WHERE project = ${this.key} AND machine = ${this.machine} ORDER BY name`),
    everywhere: (): Promise<AgentRecord[]> =>
      this.rows((sql) => sql`SELECT ${sql.unsafe(MACHINE_AGENT)} FROM agents WHERE project = ${this.key} ORDER BY name, machine`),
  }

  readonly merges = {
    begin: async (i: MergeIntent): Promise<number> => {
      const [{ id }] = await this.run(
        (sql) => sql`
          INSERT INTO merges (project, task_id, repo, branch, branch_head, target, target_before, started_at, machine)
          VALUES (${this.key}, ${i.taskId}, ${i.repo}, ${i.branch}, ${i.branchHead}, ${i.target}, ${i.targetBefore}, flow_now(), ${this.machine})
          RETURNING id::float8 AS id`,
      )
      return id
    },
    outcome: async (id: number, outcome: MergeOutcome, detail: { commit?: string; reason?: string } = {}): Promise<void> => {
      await this.run(
        (sql) => sql`
          UPDATE merges SET outcome = ${outcome}, merge_commit = ${detail.commit ?? null}, detail = ${detail.reason ?? null}
          WHERE project = ${this.key} AND id = ${id}`,
      )
    },
    close: async (taskId: string): Promise<void> => {
      await this.run((sql) => sql`UPDATE merges SET closed_at = flow_now() WHERE project = ${this.key} AND task_id = ${taskId} AND closed_at IS NULL`)
    },
    open: async (): Promise<Map<string, MergeEntry>> => {
      // This machine's: another's open entry is a landing that machine finishes (or its task's next attempt closes).
      const rows = await this.run(
        (sql) => sql`SELECT ${sql.unsafe(MERGE)} FROM merges WHERE project = ${this.key} AND machine = ${this.machine} AND closed_at IS NULL ORDER BY id`,
      )
      return new Map(rows.map((r: MergeRow) => [r.task_id, mergeEntry(r)]))
    },
    latest: async (taskId: string): Promise<MergeEntry | undefined> => {
      const [row] = await this.run(
        (sql) => sql`SELECT ${sql.unsafe(MERGE)} FROM merges WHERE project = ${this.key} AND task_id = ${taskId} ORDER BY id DESC LIMIT 1`,
      )
      return row ? mergeEntry(row) : undefined
    },
  }

  readonly moves = {
    begin: async (m: Omit<CheckoutMove, "id">): Promise<number> => {
      const [{ id }] = await this.run(
        (sql) => sql`
          INSERT INTO moves (project, machine, repo, checkout, ref, old, new, started_at)
          VALUES (${this.key}, ${this.machine}, ${m.repo}, ${m.checkout}, ${m.ref}, ${m.old}, ${m.new}, flow_now())
          RETURNING id::float8 AS id`,
      )
      return id
    },
    end: async (id: number, outcome: MoveOutcome): Promise<void> => {
      await this.run((sql) => sql`UPDATE moves SET ended_at = flow_now(), outcome = ${outcome} WHERE project = ${this.key} AND id = ${id}`)
    },
    open: (): Promise<CheckoutMove[]> =>
      this.rows(
        (sql) => sql`
          SELECT id::float8 AS id, repo, checkout, ref, old, new, started_at FROM moves
          WHERE project = ${this.key} AND machine = ${this.machine} AND ended_at IS NULL ORDER BY id`,
      ),
  }

  readonly groups = {
    track: async (g: AgentGroup & { run_pid: number }): Promise<void> => {
      await this.run(
        (sql) => sql`
          INSERT INTO agent_groups (project, machine, pgid, started, run_pid, task_id, at)
          VALUES (${this.key}, ${this.machine}, ${g.pgid}, ${g.started}, ${g.run_pid}, ${g.task_id}, flow_now())
          ON CONFLICT (project, machine, pgid) DO UPDATE SET started = excluded.started, run_pid = excluded.run_pid,
            task_id = excluded.task_id, at = excluded.at`,
      )
    },
    list: (): Promise<AgentGroup[]> =>
      this.rows((sql) => sql`SELECT pgid, started, task_id FROM agent_groups WHERE project = ${this.key} AND machine = ${this.machine}`),
    clear: async (): Promise<void> => {
      await this.run((sql) => sql`DELETE FROM agent_groups WHERE project = ${this.key} AND machine = ${this.machine}`)
    },
  }

  readonly landingWaits = {
    set: async (taskId: string, target: string, reason: string, runPid: number): Promise<void> => {
      await this.run(
        (sql) => sql`
          INSERT INTO landing_waits (project, task_id, target, reason, since, machine, run_pid)
          VALUES (${this.key}, ${taskId}, ${target}, ${reason}, left(flow_now(), 19) || 'Z', ${this.machine}, ${runPid})
          ON CONFLICT (project, task_id) DO UPDATE SET target = excluded.target, reason = excluded.reason,
            machine = excluded.machine, run_pid = excluded.run_pid`,
      )
    },
    clear: async (taskId: string): Promise<void> => {
      await this.run((sql) => sql`DELETE FROM landing_waits WHERE project = ${this.key} AND task_id = ${taskId}`)
    },
    clearAll: async (): Promise<void> => {
      await this.run((sql) => sql`DELETE FROM landing_waits WHERE project = ${this.key} AND machine = ${this.machine}`)
    },
    ofRun: (runPid: number, machine = this.machine): Promise<LandingWaitRow[]> =>
      this.rows(
        (sql) => sql`
          SELECT task_id, target, reason, since FROM landing_waits
          WHERE project = ${this.key} AND machine = ${machine} AND run_pid = ${runPid} ORDER BY since, task_id`,
      ),
  }

  async dump(): Promise<StateDump> {
    return this.tx(async (tx) => {
      const questions = await tx`SELECT ${tx.unsafe(QUESTION)}, seq FROM questions WHERE project = ${this.key} ORDER BY seq`
      const events = await tx`SELECT at, kind, task_id, agent, data FROM events WHERE project = ${this.key} ORDER BY id`
      // state.db holds an agent per name: this machine's, else the one of another machine that worked last.
      const agents = await tx`
        SELECT ${tx.unsafe(AGENT)} FROM (
          SELECT DISTINCT ON (name) ${tx.unsafe(AGENT)} FROM agents WHERE project = ${this.key}
          ORDER BY name, machine = ${this.machine} DESC, updated_at DESC) a
        ORDER BY name`
      const merges = await tx`SELECT ${tx.unsafe(MERGE)} FROM merges WHERE project = ${this.key} ORDER BY id`
      const moves = await tx`
        SELECT id::float8 AS id, repo, checkout, ref, old, new, started_at, ended_at, outcome FROM moves
        WHERE project = ${this.key} AND machine = ${this.machine} ORDER BY id`
      const plain = <T>(rows: T[]) => rows.map((r) => ({ ...r }))
      return { questions: plain(questions), events: plain(events), agents: plain(agents), merges: merges.map(mergeEntry), moves: plain(moves) }
    })
  }

  async load(dump: StateDump): Promise<void> {
    await this.tx((tx) => this.loadInto(tx, dump))
  }

  /** `load` in the caller's transaction. */
  async loadInto(tx: SQL, dump: StateDump): Promise<void> {
    for (const q of dump.questions) {
      await tx`
        INSERT INTO questions (project, id, seq, task_id, agent, text, kind, asked_at, answer, answered_at, answered_by)
        VALUES (${this.key}, ${q.id}, ${q.seq}, ${q.task_id}, ${q.agent}, ${q.text}, ${q.kind}, ${q.asked_at}, ${q.answer}, ${q.answered_at}, ${q.answered_by})`
    }
    await tx`
      UPDATE projects SET question_seq = greatest(question_seq, (SELECT coalesce(max(seq), 0) FROM questions WHERE project = ${this.key}))
      WHERE key = ${this.key}`
    // In batches: a long-lived project's log holds hundreds of thousands of events.
    for (let i = 0; i < dump.events.length; i += EVENT_BATCH) {
      const batch = dump.events.slice(i, i + EVENT_BATCH)
      const col = (f: (e: (typeof batch)[number]) => string | null) => tx.array(batch.map(f))
      await tx`
        INSERT INTO events (project, at, kind, task_id, agent, machine, data)
        SELECT ${this.key}, v.at, v.kind, v.task_id, v.agent, ${this.machine}, v.data::json
        FROM unnest(${col((e) => e.at)}::text[], ${col((e) => e.kind)}::text[], ${col((e) => e.task_id)}::text[], ${col((e) => e.agent)}::text[],
                    ${col((e) => (e.data === null || e.data === undefined ? null : JSON.stringify(e.data)))}::text[])
             WITH ORDINALITY AS v(at, kind, task_id, agent, data, n)
        ORDER BY v.n`
    }
    for (const a of dump.agents) {
      await tx`
        INSERT INTO agents (project, name, cli, current_task, completed, session_id, parked_until, parked_reason, parked_task, machine, updated_at)
        VALUES (${this.key}, ${a.name}, ${a.cli}, ${a.current_task}, ${a.completed}, ${a.session_id}, ${a.parked_until}, ${a.parked_reason},
                ${a.parked_task}, ${this.machine}, ${a.updated_at})
        ON CONFLICT (project, machine, name) DO NOTHING`
    }
    for (const m of dump.merges) {
      await tx`
        INSERT INTO merges (project, task_id, repo, branch, branch_head, target, target_before, started_at, outcome, merge_commit, detail, closed_at, machine)
        VALUES (${this.key}, ${m.taskId}, ${m.repo}, ${m.branch}, ${m.branchHead}, ${m.target}, ${m.targetBefore}, ${m.startedAt}, ${m.outcome},
                ${m.mergeCommit}, ${m.detail}, ${m.closedAt}, ${this.machine})`
    }
    for (const m of dump.moves) {
      await tx`
        INSERT INTO moves (project, machine, repo, checkout, ref, old, new, started_at, ended_at, outcome)
        VALUES (${this.key}, ${this.machine}, ${m.repo}, ${m.checkout}, ${m.ref}, ${m.old}, ${m.new}, ${m.started_at ?? ""}, ${m.ended_at}, ${m.outcome})`
    }
  }

  close(): void {}

  [Symbol.dispose](): void {}
}
