// The shared store's schema, migrated by flow itself: entry i takes the database from version i to i + 1, and
// `flow_schema` records every version applied. Append only; never edit an entry once released. Every table
// carries the project's key, so one database holds many projects (docs/FLEET.md, "The shared store").
//
// The first flow to start on a new database migrates it; others starting at the same instant wait for its
// transaction on an advisory lock and then find the schema current. A database migrated by a newer flow is
// refused: this flow would misread tables it does not know.
import type { SQL } from "bun"
import { Exit, FlowError } from "../../cli/errors"

/** The advisory lock (two keys: 'flow' in ASCII, 0) that migrations take for their transaction. */
const MIGRATION_LOCK = [0x666c6f77, 0] as const

const MIGRATIONS: readonly string[] = [
  // 1. The graph, its progress and the claims of runs; the run state of .flow/state.db with a project key.
  // Times of the run state are text in the form state.db holds them, from the database's clock (flow_now):
  // machines' clocks may differ, the database's is one.
  `CREATE FUNCTION flow_now() RETURNS text LANGUAGE sql VOLATILE
     AS $$ SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
   CREATE TABLE projects (
     key text PRIMARY KEY,
     -- bumped by every write of the graph: a reader that saw version v loads only rows with rev > v
     version bigint NOT NULL DEFAULT 1,
     -- bumped when tasks are added or removed (flow generate): a reader reloads every row
     generation bigint NOT NULL DEFAULT 1,
     -- tasks.yaml's top-level mapping without the tasks, keys in order ("tasks": [] marks the list's place)
     top json NOT NULL,
     -- the text flow export applies the graph onto: the imported tasks.yaml, then the last generated one
     source text,
     -- the last question number handed out (q-1, q-2, ... per project)
     question_seq integer NOT NULL DEFAULT 0,
     created_at timestamptz NOT NULL DEFAULT now()
   );
   CREATE TABLE tasks (
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     id text NOT NULL,
     parent text,
     -- its place among its parent's subtasks (or the top-level tasks), and in the whole file (depth first)
     position integer NOT NULL,
     ord integer NOT NULL,
     -- the status is this column; doc's "status" only keeps the key's place
     status text NOT NULL,
     -- the task as tasks.yaml holds it, without its subtasks ("subtasks": [] marks the list's place), keys in order
     doc json NOT NULL,
     depends_on text[] NOT NULL DEFAULT '{}',
     rev bigint NOT NULL,
     -- claims (docs/FLEET.md, "Claims and fencing"): how many times the task was claimed, by which run,
     -- agent and machine, and until when the claim holds without a heartbeat
     attempt integer NOT NULL DEFAULT 0,
     claimed_by text,
     claimed_agent text,
     machine text,
     lease_until timestamptz,
     PRIMARY KEY (project, id)
   );
   CREATE INDEX tasks_rev ON tasks (project, rev);
   CREATE INDEX tasks_status ON tasks (project, status);
   CREATE INDEX tasks_claimed ON tasks (project, claimed_by) WHERE claimed_by IS NOT NULL;
   CREATE TABLE questions (
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     id text NOT NULL,
     seq integer NOT NULL,
     task_id text NOT NULL,
     agent text,
     text text NOT NULL,
     -- null: an agent's question; budget:<unit>: flow's own about a task's budget (docs/BUDGETS.md)
     kind text,
     asked_at text NOT NULL,
     answer text,
     answered_at text,
     answered_by text,
     machine text,
     PRIMARY KEY (project, id),
     UNIQUE (project, seq)
   );
   CREATE INDEX questions_pending ON questions (project, seq) WHERE answer IS NULL;
   CREATE TABLE events (
     id bigserial PRIMARY KEY,
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     at text NOT NULL,
     kind text NOT NULL,
     task_id text,
     agent text,
     machine text,
     data json
   );
   CREATE INDEX events_project ON events (project, id);
   CREATE INDEX events_kind ON events (project, kind, id);
   CREATE INDEX events_task ON events (project, task_id, kind, id) WHERE task_id IS NOT NULL;
   CREATE TABLE agents (
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     name text NOT NULL,
     cli text,
     current_task text,
     completed integer NOT NULL DEFAULT 0,
     session_id text,
     parked_until text,
     parked_reason text,
     parked_task text,
     machine text,
     updated_at text NOT NULL,
     PRIMARY KEY (project, name)
   );
   CREATE TABLE merges (
     id bigserial PRIMARY KEY,
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     task_id text NOT NULL,
     repo text NOT NULL,
     branch text NOT NULL,
     branch_head text NOT NULL,
     target text NOT NULL,
     target_before text NOT NULL,
     started_at text NOT NULL,
     outcome text,
     merge_commit text,
     detail text,
     closed_at text,
     machine text
   );
   CREATE INDEX merges_open ON merges (project, task_id) WHERE closed_at IS NULL;
   CREATE INDEX merges_task ON merges (project, task_id, id);
   CREATE TABLE agent_groups (
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     machine text NOT NULL,
     pgid integer NOT NULL,
     started text NOT NULL,
     run_pid integer NOT NULL,
     task_id text,
     at text NOT NULL,
     PRIMARY KEY (project, machine, pgid)
   );
   CREATE TABLE moves (
     id bigserial PRIMARY KEY,
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     machine text NOT NULL,
     repo text NOT NULL,
     checkout text NOT NULL,
     ref text NOT NULL,
     old text NOT NULL,
     new text NOT NULL,
     started_at text NOT NULL,
     ended_at text,
     outcome text
   );
   CREATE INDEX moves_open ON moves (project, machine, id) WHERE ended_at IS NULL;
   CREATE TABLE landing_waits (
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     task_id text NOT NULL,
     target text NOT NULL,
     reason text NOT NULL,
     since text NOT NULL,
     machine text NOT NULL,
     run_pid integer NOT NULL,
     PRIMARY KEY (project, task_id)
   );`,
  // 2. One live run per shared project (lib/store/postgres/run-lock.ts): the number of the project's advisory
  // lock, and who took it last (what a refused run quotes; the lock itself says whether that one still runs).
  `CREATE TABLE run_locks (
     project text PRIMARY KEY REFERENCES projects (key) ON DELETE CASCADE,
     lock_id integer GENERATED ALWAYS AS IDENTITY UNIQUE,
     command text,
     machine text,
     pid integer,
     -- the holder's session (pg_backend_pid): a row counts only while this session holds the lock
     backend_pid integer,
     since timestamptz
   );`,
  // 3. Many live runs per shared project (docs/FLEET.md, "Many runs per shared project"): each run holds the
  // project's lock shared and writes a row of its own (a row counts only while its session holds the lock);
  // run_locks keeps the lock's number and says who holds it exclusively (flow unshare). Agents are one row
  // per machine and name: two machines' runs may name their agents alike. A row without a machine (none flow
  // wrote: every write names its machine) becomes the machine '', nobody's.
  `CREATE TABLE live_runs (
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     -- the run's RUN_ID (lib/run/reaper.ts): pid and start, unique to the run on its machine
     run_id text NOT NULL,
     command text NOT NULL,
     machine text NOT NULL,
     pid integer NOT NULL,
     backend_pid integer NOT NULL,
     since timestamptz NOT NULL,
     PRIMARY KEY (project, machine, run_id)
   );
   UPDATE agents SET machine = '' WHERE machine IS NULL;
   ALTER TABLE agents ALTER COLUMN machine SET NOT NULL;
   ALTER TABLE agents DROP CONSTRAINT agents_pkey;
   ALTER TABLE agents ADD PRIMARY KEY (project, machine, name);`,
  // 4. A run's process as a run of the same machine can prove it dead (lib/cli/pid.ts, isGoneHere): its start
  // time (clock ticks since boot), the boot id and the pid namespace. A claim of a run proved dead is given
  // back at once rather than after its lease (docs/FLEET.md, "Claims, leases, fencing"); a row without them
  // (written by an older flow) proves nothing.
  `ALTER TABLE live_runs ADD COLUMN pid_start text, ADD COLUMN boot_id text, ADD COLUMN pid_ns text;`,
  // 5. One merge queue for the whole fleet (lib/state/queue-rows.ts, docs/RUN.md "Merge queue"): a candidate per
  // row, in line order (seq, then id), with its build, its check's claim (check_run, check_attempt) and lease
  // (check_until, on the database's clock) and what it cost; a queue's lead per row of queue_leads (until: its
  // lease; epoch: fences its writes; tip: the target's commit as the lead last saw it). Replaces the landing
  // lock, which held a session across a whole check and push.
  `CREATE TABLE queue_rows (
     id bigserial PRIMARY KEY,
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     queue text NOT NULL,
     target text NOT NULL,
     seq bigint NOT NULL,
     task_id text NOT NULL,
     branch text NOT NULL,
     head text NOT NULL,
     message text NOT NULL,
     run_id text NOT NULL,
     attempt integer,
     machine text NOT NULL,
     submitted_at text NOT NULL,
     gen integer NOT NULL DEFAULT 0,
     base text,
     merge text,
     ref text,
     ahead json NOT NULL DEFAULT '[]',
     state text NOT NULL,
     reason text,
     verdict json,
     check_run text,
     check_machine text,
     check_attempt integer NOT NULL DEFAULT 0,
     check_until timestamptz,
     seconds float8,
     checks integer NOT NULL DEFAULT 0,
     thrown integer NOT NULL DEFAULT 0,
     landed_at text
   );
   CREATE INDEX queue_rows_line ON queue_rows (project, queue, seq, id);
   CREATE TABLE queue_leads (
     project text NOT NULL REFERENCES projects (key) ON DELETE CASCADE,
     queue text NOT NULL,
     run text,
     until timestamptz,
     epoch integer NOT NULL DEFAULT 0,
     tip text,
     PRIMARY KEY (project, queue)
   );`,
]

/** The schema version this flow writes and reads. */
export const PG_SCHEMA_VERSION = MIGRATIONS.length

/** The tables and indexes flow's migrations create, by name: what must not be another application's. */
const RELATIONS = [...MIGRATIONS.join("\n").matchAll(/CREATE (?:TABLE|INDEX) (\w+)/g)].map((m) => m[1])

/** Brings the database to PG_SCHEMA_VERSION (a no-op when it is there); a newer schema is a FlowError. */
export async function migrate(sql: SQL, shown: string): Promise<void> {
  if ((await currentVersion(sql)) === PG_SCHEMA_VERSION) return
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK[0]}, ${MIGRATION_LOCK[1]})`
    await refuseForeign(tx, shown)
    await tx`CREATE TABLE IF NOT EXISTS flow_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`
    // Read again under the lock: another flow may have migrated meanwhile.
    const [{ v }] = await tx`SELECT coalesce(max(version), 0)::int AS v FROM flow_schema`
    refuseNewer(v, shown)
    for (let i = v; i < PG_SCHEMA_VERSION; i++) {
      await tx.unsafe(MIGRATIONS[i])
      await tx`INSERT INTO flow_schema (version) VALUES (${i + 1})`
    }
  })
}

/** The database's schema version, 0 before flow's first start there; a newer one than this flow's is refused. */
async function currentVersion(sql: SQL): Promise<number> {
  try {
    const [{ v }] = await sql`SELECT coalesce(max(version), 0)::int AS v FROM flow_schema`
    return v
  } catch (e) {
    if ((e as { errno?: string }).errno === "42P01") return 0 // no flow_schema yet
    throw e
  }
}

/**
 * Before flow's first migration in a schema, nothing there may bear the name of a table or index flow creates:
 * another application's `projects` or `tasks` would be written over, or fail the migration halfway with the
 * server's words. Refused before anything is written, saying how to give flow a schema of its own. A schema
 * flow migrated already (flow_schema there) holds flow's own.
 */
async function refuseForeign(tx: SQL, shown: string): Promise<void> {
  const [{ schema, path, ours }] = await tx`
    SELECT current_schema() AS schema, current_setting('search_path') AS path, to_regclass('flow_schema') IS NOT NULL AS ours`
  if (schema === null) {
    const named =
      path
        .split(",")
        .map((p: string) => p.trim().replace(/^"(.*)"$/, "$1"))
        .find((p: string) => p !== "$user") ?? "flow"
    throw new FlowError(
      `the database at ${shown} has no schema to create flow's tables in: its search_path (${path}) names none that exists`,
      Exit.invalid,
      `create it in that database (CREATE SCHEMA ${named}), or name one that exists in the URL's options=-csearch_path%3D<schema>`,
    )
  }
  if (ours) return
  const found: { relname: string; kind: string }[] = await tx`
    SELECT c.relname, CASE WHEN c.relkind = 'i' THEN 'index' ELSE 'table' END AS kind
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ${schema} AND c.relname = ANY(${tx.array(RELATIONS)}::text[]) ORDER BY c.relname`
  if (found.length === 0) return
  const named = (kind: string, plural: string) => {
    const names = found.filter((r) => r.kind === kind).map((r) => r.relname)
    return names.length === 0 ? [] : [`${names.length === 1 ? kind : plural} ${names.join(", ")}`]
  }
  throw new FlowError(
    `the database at ${shown} already has ${[...named("table", "tables"), ...named("index", "indexes")].join(" and ")} in schema ${schema} that are not flow's (flow creates its own under those names): nothing was written`,
    Exit.invalid,
    `give flow a schema of its own: run CREATE SCHEMA flow in that database and add options=-csearch_path%3Dflow to the URL (${shown}${shown.includes("?") ? "&" : "?"}options=-csearch_path%3Dflow); or use another database`,
  )
}

function refuseNewer(version: number, shown: string): void {
  if (version <= PG_SCHEMA_VERSION) return
  throw new FlowError(
    `the database at ${shown} has flow's schema version ${version}, newer than this flow knows (${PG_SCHEMA_VERSION})`,
    Exit.invalid,
    "update flow on this machine to the version the other machines run ('flow --version' there)",
  )
}
