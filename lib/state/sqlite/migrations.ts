// The schema of .flow/state.db, as numbered migrations (PRAGMA user_version): lib/state/sqlite/state-db.ts
// applies them under the write lock when it opens the database.
/** Schema migrations: entry i takes `PRAGMA user_version` from i to i + 1. Append only; never edit one. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE questions (
     id TEXT PRIMARY KEY,
     seq INTEGER NOT NULL UNIQUE,
     task_id TEXT NOT NULL,
     agent TEXT,
     text TEXT NOT NULL,
     asked_at TEXT NOT NULL,
     answer TEXT,
     answered_at TEXT,
     answered_by TEXT
   );
   CREATE INDEX questions_pending ON questions (seq) WHERE answer IS NULL;
   CREATE TABLE events (
     id INTEGER PRIMARY KEY,
     at TEXT NOT NULL,
     kind TEXT NOT NULL,
     task_id TEXT,
     agent TEXT,
     data TEXT
   );
   CREATE TABLE agents (
     name TEXT PRIMARY KEY,
     cli TEXT,
     current_task TEXT,
     completed INTEGER NOT NULL DEFAULT 0,
     session_id TEXT,
     updated_at TEXT NOT NULL
   );`,
  // The merge journal (lib/landing/merge-journal.ts) and the agent process groups of runs (lib/run/reaper.ts).
  `CREATE TABLE merges (
     id INTEGER PRIMARY KEY,
     task_id TEXT NOT NULL,
     repo TEXT NOT NULL,
     branch TEXT NOT NULL,
     branch_head TEXT NOT NULL,
     target TEXT NOT NULL,
     target_before TEXT NOT NULL,
     started_at TEXT NOT NULL,
     outcome TEXT,
     merge_commit TEXT,
     detail TEXT,
     closed_at TEXT
   );
   CREATE INDEX merges_open ON merges (task_id) WHERE closed_at IS NULL;
   CREATE TABLE agent_groups (
     pgid INTEGER PRIMARY KEY,
     started TEXT NOT NULL,
     run_pid INTEGER NOT NULL,
     task_id TEXT,
     at TEXT NOT NULL
   );`,
  // Moves of a person's checkout that follows its target branch (lib/landing/checkout-move.ts): the intent is
  // written before the two-tree read, the end after the ref moved (or the move was given up).
  `CREATE TABLE moves (
     id INTEGER PRIMARY KEY,
     repo TEXT NOT NULL,
     checkout TEXT NOT NULL,
     ref TEXT NOT NULL,
     old TEXT NOT NULL,
     new TEXT NOT NULL,
     started_at TEXT NOT NULL,
     ended_at TEXT,
     outcome TEXT
   );
   CREATE INDEX moves_open ON moves (id) WHERE ended_at IS NULL;`,
  // Each task's last end (lastTaskEnds), which `flow list` reads for every task (lib/run/worked-by.ts):
  // without it the query scans every event of every run.
  `CREATE INDEX events_task_end ON events (task_id, id) WHERE kind = 'task.end';`,
  // Budgets and usage limits (docs/BUDGETS.md): a question flow asks about a task's budget is of a kind of its
  // own (null: an agent's); an agent parked by its CLI's usage limit waits until parked_until; a task's spend is
  // summed from its own events.
  `ALTER TABLE questions ADD COLUMN kind TEXT;
   ALTER TABLE agents ADD COLUMN parked_until TEXT;
   ALTER TABLE agents ADD COLUMN parked_reason TEXT;
   ALTER TABLE agents ADD COLUMN parked_task TEXT;
   CREATE INDEX events_task_kind ON events (task_id, kind) WHERE task_id IS NOT NULL;`,
  // What each task's landing waits for (lib/landing/landing-waits.ts): the person's change, operation or git lock
  // in the way of its checkout's move; a row per waiting task, of the run (its pid) that said it.
  `CREATE TABLE landing_waits (
     task_id TEXT PRIMARY KEY,
     target TEXT NOT NULL,
     reason TEXT NOT NULL,
     since TEXT NOT NULL,
     run_pid INTEGER NOT NULL
   );`,
  // The merge queue's rows (lib/state/queue-rows.ts, docs/RUN.md "Merge queue"): a candidate per row, in line
  // order (seq), with its build, its check's claim and lease (check_until: flow's clock, milliseconds) and what
  // it cost; a queue's lead per row of queue_leads (until: its lease; epoch: fences its writes; tip: the
  // target's commit as the lead last saw it).
  `CREATE TABLE queue_rows (
     id INTEGER PRIMARY KEY,
     queue TEXT NOT NULL,
     target TEXT NOT NULL,
     seq INTEGER NOT NULL,
     task_id TEXT NOT NULL,
     branch TEXT NOT NULL,
     head TEXT NOT NULL,
     message TEXT NOT NULL,
     run_id TEXT NOT NULL,
     attempt INTEGER,
     machine TEXT,
     submitted_at TEXT NOT NULL,
     gen INTEGER NOT NULL DEFAULT 0,
     base TEXT,
     merge TEXT,
     ref TEXT,
     ahead TEXT NOT NULL DEFAULT '[]',
     state TEXT NOT NULL,
     reason TEXT,
     verdict TEXT,
     check_run TEXT,
     check_machine TEXT,
     check_attempt INTEGER NOT NULL DEFAULT 0,
     check_until INTEGER,
     seconds REAL,
     checks INTEGER NOT NULL DEFAULT 0,
     thrown INTEGER NOT NULL DEFAULT 0,
     landed_at TEXT
   );
   CREATE INDEX queue_rows_line ON queue_rows (queue, seq);
   CREATE TABLE queue_leads (
     queue TEXT PRIMARY KEY,
     run TEXT,
     until INTEGER,
     epoch INTEGER NOT NULL DEFAULT 0,
     tip TEXT
   );`,
]
export const SCHEMA_VERSION = MIGRATIONS.length
