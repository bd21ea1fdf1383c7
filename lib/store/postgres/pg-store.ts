// The shared backend of the task store (lib/store/store.ts): the graph of one project in PostgreSQL, a row
// per task (lib/store/postgres/rows.ts), read and changed by any number of processes on any machines.
//
// A change is one transaction: the project's row is locked (FOR NO KEY UPDATE: every writer of the project
// waits its turn, as tasks.yaml's lock makes them; the renewal of leases waits for it too, claims.ts has the
// lock-ordering rule; the rows of other tables that name the project are written meanwhile), the rows changed since this process last looked are loaded, the
// edit runs on the graph in memory (RowEditor: the same TaskEdits as the file's), the rows it changed are
// written with the project's next version as their `rev`, and `flow_<key>` is notified (delivered at commit).
// Nothing is written when the edit throws or changes nothing. A write that carries a fence is refused once
// the task's claim moved on (docs/FLEET.md, "Claims and fencing").
//
// The rows loaded are kept for the process's next read, which then asks only for rows whose rev is newer
// than the version it holds (all rows when the project's generation changed: tasks were added or removed).
import type { SQL } from "bun"
import { Exit, FlowError } from "../../cli/errors"
import type { TaskFile } from "../../model/task-index"
import { textOnto } from "../export-text"
import type { SharedSetting } from "../setting"
import type { Current, Fence, Loaded, TaskEdits, TaskStore } from "../store"
import { type Database, database } from "./connection"
import { channelOf, PgClaims } from "./claims"
import { RowEditor } from "./row-editor"
import { docText, fromRows, toRows, type TaskRow } from "./rows"

type Cached = { id: string; parent: string | null; ord: number; status: string; doc: string }

/** What a load saw: the project's version and generation, and whether it found the project. */
type Snapshot = { version: number; generation: number }

// The channel's name is claims.ts's, where listeners subscribe: one import between the two files, no cycle.
export { channelOf } from "./claims"

/** The error of a project the database does not hold. */
export async function missingProject(sql: SQL, setting: SharedSetting): Promise<FlowError> {
  const keys = (await sql`SELECT key FROM projects ORDER BY key LIMIT 20`).map((r: { key: string }) => r.key)
  return new FlowError(
    `the database at ${setting.shown} holds no project '${setting.key}'`,
    Exit.invalid,
    keys.length > 0
      ? `its projects: ${keys.join(", ")}; set project: in flow.yaml to one of them, or run 'flow share ${setting.shown} --project ${setting.key}' to share this one`
      : `run 'flow share ${setting.shown}' in the project to share it there`,
  )
}

const stores = new Map<string, PgTaskStore>()

export class PgTaskStore implements TaskStore {
  private version = -1
  private generation = -1
  private top = "{}"
  private rows = new Map<string, Cached>()
  /** The ids in file order, rebuilt when the generation changes. */
  private order: string[] = []

  /** How runs divide this graph's tasks (claims.ts). */
  readonly claims: PgClaims

  private constructor(
    private readonly db: Database,
    private readonly setting: SharedSetting,
  ) {
    this.claims = new PgClaims(db, setting)
  }

  /** The process's store of this project (one cache of rows per project and process). */
  static open(setting: SharedSetting): PgTaskStore {
    const id = `${setting.shown}\n${setting.key}`
    let store = stores.get(id)
    if (!store) {
      store = new PgTaskStore(database(setting), setting)
      stores.set(id, store)
    }
    return store
  }

  /** A store with a cache of its own: another view of the project, as another process has (tests). */
  static fresh(setting: SharedSetting): PgTaskStore {
    return new PgTaskStore(database(setting), setting)
  }

  readonly shared = true

  get where(): string {
    return `${this.setting.shown} (project ${this.setting.key})`
  }

  async exists(): Promise<boolean> {
    return true
  }

  async read(): Promise<Loaded> {
    return this.db.run(async (sql) => {
      await this.load(sql, false)
      return { data: this.graph(), version: String(this.version) }
    })
  }

  async mutate<T>(command: string, edit: (edits: TaskEdits) => T, fence?: Fence | readonly Fence[]): Promise<T> {
    const fences: readonly Fence[] = fence === undefined ? [] : "taskId" in fence ? [fence] : fence
    return this.db.run((sql) =>
      this.locked(sql, command, async (tx, snap) => {
        for (const f of fences) await this.checkFence(tx, f)
        const editor = new RowEditor(this.graph())
        const out = edit(editor)
        if (editor.changed.size === 0) return { out }
        const ids = [...editor.changed]
        const tasks = ids.map((id) => editor.tasks.get(id)!.task)
        const version = snap.version + 1
        const docs = tasks.map(docText)
        await tx`
          UPDATE tasks AS t SET status = v.status, doc = v.doc::json, rev = ${version},
            depends_on = ARRAY(SELECT DISTINCT json_array_elements_text(coalesce(v.doc::json -> 'depends_on', '[]'::json)))
          FROM (SELECT unnest(${tx.array(ids)}::text[]) AS id, unnest(${tx.array(tasks.map((t) => t.status))}::text[]) AS status,
                       unnest(${tx.array(docs)}::text[]) AS doc) AS v
          WHERE t.project = ${this.setting.key} AND t.id = v.id`
        await this.bump(tx, version, false)
        const committed = () => {
          if (this.version !== snap.version) return // the cache moved on meanwhile: the next load brings these rows
          ids.forEach((id, i) => {
            const row = this.rows.get(id)
            if (row) this.rows.set(id, { ...row, status: tasks[i].status, doc: docs[i] })
          })
          this.version = version
        }
        return { out, committed }
      }),
    )
  }

  async replace<T>(command: string, build: (current: Current | undefined) => Promise<{ text?: string; result: T }>): Promise<T> {
    return this.db.run((sql) =>
      this.locked(sql, command, async (tx, snap) => {
        const data = this.graph()
        const [{ source }] = await tx`SELECT source FROM projects WHERE key = ${this.setting.key}`
        const currentText = textOnto(source ?? undefined, data)
        const { text, result } = await build({ data, version: String(snap.version), text: currentText })
        if (text === undefined || text === currentText) return { out: result }
        await this.write(tx, Bun.YAML.parse(text) as TaskFile, text, snap.version + 1)
        return { out: result } // the generation moved: the next load reads every row
      }),
    )
  }

  async text(): Promise<string> {
    return this.db.run(async (sql) => {
      await this.load(sql, false)
      const [{ source }] = await sql`SELECT source FROM projects WHERE key = ${this.setting.key}`
      return textOnto(source ?? undefined, this.graph())
    })
  }

  validated(_text: string): void {}

  shown(_cwd: string): string {
    return this.where
  }

  /**
   * Writes a whole graph as the project's (share's import and generate's replace): rows upserted, so the
   * claims of tasks that stay are kept, and rows of tasks no longer there deleted; `text` becomes the text
   * export writes onto. The project's row must exist and be locked by the caller's transaction.
   */
  async write(tx: SQL, data: TaskFile, text: string | null, version: number): Promise<void> {
    const { top, rows } = toRows(data)
    const col = <K extends keyof TaskRow>(k: K) => rows.map((r) => r[k])
    if (rows.length > 0) {
      await tx`
        INSERT INTO tasks (project, id, parent, position, ord, status, doc, depends_on, rev)
        SELECT ${this.setting.key}, v.id, v.parent, v.position, v.ord, v.status, v.doc::json,
               ARRAY(SELECT json_array_elements_text(v.deps::json)), ${version}
        FROM (SELECT unnest(${tx.array(col("id"))}::text[]) AS id, unnest(${tx.array(col("parent"))}::text[]) AS parent,
                     unnest(${tx.array(col("position"))}::int[]) AS position, unnest(${tx.array(col("ord"))}::int[]) AS ord,
                     unnest(${tx.array(col("status"))}::text[]) AS status, unnest(${tx.array(col("doc"))}::text[]) AS doc,
                     unnest(${tx.array(rows.map((r) => JSON.stringify(r.depends_on)))}::text[]) AS deps) AS v
        ON CONFLICT (project, id) DO UPDATE SET parent = excluded.parent, position = excluded.position, ord = excluded.ord,
          status = excluded.status, doc = excluded.doc, depends_on = excluded.depends_on, rev = excluded.rev`
    }
    await tx`DELETE FROM tasks WHERE project = ${this.setting.key} AND rev <> ${version}`
    await tx`UPDATE projects SET top = ${JSON.stringify(top)}::text::json, source = ${text} WHERE key = ${this.setting.key}`
    // Fresh statistics for the planner: a claim right after a share must find its candidates by primary key
    // (claims.ts), not by a plan made for an empty table (autovacuum analyzes only a minute or so later).
    await tx`ANALYZE tasks`
    await this.bump(tx, version, true)
  }

  /**
   * `fn` in a transaction holding the project's row (every writer of the project waits its turn); its
   * `committed` runs once the transaction committed (the cache takes the rows written then, not before).
   */
  private async locked<T>(sql: SQL, command: string, fn: (tx: SQL, snap: Snapshot) => Promise<{ out: T; committed?: () => void }>): Promise<T> {
    let done: { out: T; committed?: () => void }
    try {
      done = await sql.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(this.setting.waitMs))}`)
        const snap = await this.load(tx, true)
        return fn(tx, snap)
      })
    } catch (e) {
      if ((e as { errno?: string }).errno === "55P03") {
        throw new FlowError(
          `${command}: another writer held project '${this.setting.key}' for ${this.setting.waitMs / 1000} s (${this.setting.shown})`,
          Exit.failure,
          "try again; if it persists, look for a stuck flow process on the machines sharing it, or raise FLOW_LOCK_TIMEOUT (seconds)",
        )
      }
      throw e
    }
    done.committed?.()
    return done.out
  }

  private async bump(tx: SQL, version: number, generation: boolean): Promise<void> {
    // One statement, one round trip, while every other writer of the project waits for this transaction.
    await tx`
      WITH bumped AS (
        UPDATE projects SET version = ${version}, generation = generation + ${generation ? 1 : 0} WHERE key = ${this.setting.key} RETURNING 1)
      SELECT pg_notify(${channelOf(this.setting.key)}, ${String(version)}) FROM bumped`
  }

  /** The task's claim must still be the fence's; otherwise the write is refused. */
  private async checkFence(tx: SQL, fence: Fence): Promise<void> {
    const [row] = await tx`SELECT attempt, claimed_by FROM tasks WHERE project = ${this.setting.key} AND id = ${fence.taskId} FOR UPDATE`
    if (row && row.attempt === fence.attempt && row.claimed_by === fence.run) return
    const now = row ? ` (attempt ${row.attempt}${row.claimed_by ? ` by run ${row.claimed_by}` : ", released"})` : " (it is no longer in the graph)"
    throw new FlowError(
      `this run no longer holds task '${fence.taskId}': it was taken over${now}; attempt ${fence.attempt} may change nothing`,
      Exit.failure,
      "the run that holds it now finishes it; nothing of this attempt is written",
    )
  }

  /**
   * Loads what changed since the cache's version, in one statement (one snapshot): the project's row, and
   * its rows newer than the cache (all of them when the generation moved). `lock` takes the project's row.
   * A load older than the cache (a read that raced a write of this process) leaves the cache as it is.
   */
  private async load(sql: SQL, lock: boolean): Promise<Snapshot> {
    // The lock is its own statement: a locking statement that waited sees the locked row's newest version, but
    // the rows it joins from the snapshot it started with; the next statement's snapshot has every write.
    // FOR NO KEY UPDATE, not FOR UPDATE: an insert into a table that references projects(key) (events, moves,
    // the queue's rows) takes the row FOR KEY SHARE for its foreign key, and waited behind every writer.
    if (lock) await sql`SELECT 1 AS one FROM projects WHERE key = ${this.setting.key} FOR NO KEY UPDATE`
    const [since, generation] = [this.version, this.generation]
    const rows = await sql`
      SELECT p.version::float8 AS version, p.generation::float8 AS generation, p.top::text AS top,
             t.id, t.parent, t.ord, t.status, t.doc::text AS doc
      FROM projects p LEFT JOIN tasks t ON t.project = p.key AND (p.generation <> ${generation} OR t.rev > ${since})
      WHERE p.key = ${this.setting.key}`
    if (rows.length === 0) throw await missingProject(sql, this.setting)
    const snap: Snapshot = { version: rows[0].version, generation: rows[0].generation }
    if (snap.version < this.version) return snap
    // Rows newer than `since` came back, or every row when the generation the query was given was not current.
    const full = snap.generation !== generation
    if (full) this.rows = new Map()
    for (const r of rows as (Cached & { id: string | null })[]) {
      if (r.id !== null) this.rows.set(r.id, { id: r.id, parent: r.parent, ord: r.ord, status: r.status, doc: r.doc })
    }
    if (full) this.order = [...this.rows.values()].sort((a, b) => a.ord - b.ord).map((r) => r.id)
    this.top = rows[0].top
    this.version = snap.version
    this.generation = snap.generation
    return snap
  }

  /** A fresh graph from the cache. */
  private graph(): TaskFile {
    return fromRows(
      this.top,
      this.order.map((id) => this.rows.get(id)!),
    )
  }
}
