// The merge journal: the intent and the outcome of every merge `flow run` makes, in the state database
// (table `merges`), so that a run killed at any instruction is recovered by the next one without running an
// agent again or merging twice (docs/RUN.md, "Merge journal"). An entry's life:
//
//   begin      intent written before `git merge`: task, repo, branch and its head, target and its head
//   outcome    after `git merge`: merged (with the merge commit) or failed (with the reason)
//   close      once tasks.yaml says so (done, or blocked), or when the task starts afresh
//
// An entry that is not closed means "this task's work was finished at branch_head and handed to a merge":
// the next run lands it (merges it if branch_head is not yet in the target) and never reruns its agent.
// This module is the whole API; lib/run/landing.ts is its only writer.
import type { StateDb } from "./state-db"

export type MergeIntent = { taskId: string; repo: string; branch: string; branchHead: string; target: string; targetBefore: string }
export type MergeOutcome = "merged" | "failed"
export type MergeEntry = MergeIntent & {
  id: number
  startedAt: string
  outcome: MergeOutcome | null
  mergeCommit: string | null
  detail: string | null
  closedAt: string | null
}

type Row = {
  id: number
  task_id: string
  repo: string
  branch: string
  branch_head: string
  target: string
  target_before: string
  started_at: string
  outcome: MergeOutcome | null
  merge_commit: string | null
  detail: string | null
  closed_at: string | null
}

const entry = (r: Row): MergeEntry => ({
  id: r.id,
  taskId: r.task_id,
  repo: r.repo,
  branch: r.branch,
  branchHead: r.branch_head,
  target: r.target,
  targetBefore: r.target_before,
  startedAt: r.started_at,
  outcome: r.outcome,
  mergeCommit: r.merge_commit,
  detail: r.detail,
  closedAt: r.closed_at,
})

const now = () => new Date().toISOString()

export class MergeJournal {
  constructor(private db: StateDb) {}

  /** Records the intent to merge; returns the entry's id. */
  begin(i: MergeIntent): Promise<number> {
    return this.db.transact((db) =>
      Number(
        db
          .query("INSERT INTO merges (task_id, repo, branch, branch_head, target, target_before, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
          .run(i.taskId, i.repo, i.branch, i.branchHead, i.target, i.targetBefore, now()).lastInsertRowid,
      ),
    )
  }

  /** Records what the merge did. */
  outcome(id: number, outcome: MergeOutcome, detail: { commit?: string; reason?: string } = {}): Promise<void> {
    return this.db.transact((db) => {
      db.query("UPDATE merges SET outcome = ?, merge_commit = ?, detail = ? WHERE id = ?").run(outcome, detail.commit ?? null, detail.reason ?? null, id)
    })
  }

  /** Closes the task's open entries: tasks.yaml now holds their result, or the task starts afresh. */
  close(taskId: string): Promise<void> {
    return this.db.transact((db) => {
      db.query("UPDATE merges SET closed_at = ? WHERE task_id = ? AND closed_at IS NULL").run(now(), taskId)
    })
  }

  /** The latest open entry of each task that has one (an index lookup: cheap to call on every run start). */
  open(): Promise<Map<string, MergeEntry>> {
    return this.db.read(
      (db) =>
        new Map(
          db
            .query<Row, []>("SELECT * FROM merges WHERE closed_at IS NULL ORDER BY id")
            .all()
            .map((r) => [r.task_id, entry(r)]),
        ),
    )
  }

  /** The task's latest entry, open or closed. */
  latest(taskId: string): Promise<MergeEntry | undefined> {
    return this.db.read((db) => {
      const r = db.query<Row, [string]>("SELECT * FROM merges WHERE task_id = ? ORDER BY id DESC LIMIT 1").get(taskId)
      return r ? entry(r) : undefined
    })
  }
}

/** A journaled move of a checked-out target (lib/run/checkout-move.ts): `ref` from `old` to `new` in `checkout`. */
export type CheckoutMove = { id: number; repo: string; checkout: string; ref: string; old: string; new: string; started_at?: string }
export type MoveOutcome = "moved" | "given-up" | "recovered"

export class MoveJournal {
  constructor(private db: StateDb) {}

  begin(m: Omit<CheckoutMove, "id">): Promise<number> {
    return this.db.transact((db) =>
      Number(
        db.query("INSERT INTO moves (repo, checkout, ref, old, new, started_at) VALUES (?, ?, ?, ?, ?, ?)").run(m.repo, m.checkout, m.ref, m.old, m.new, now())
          .lastInsertRowid,
      ),
    )
  }

  end(id: number, outcome: MoveOutcome): Promise<void> {
    return this.db.transact((db) => {
      db.query("UPDATE moves SET ended_at = ?, outcome = ? WHERE id = ?").run(now(), outcome, id)
    })
  }

  /** Moves a killed run left unfinished, oldest first. */
  open(): Promise<CheckoutMove[]> {
    return this.db.read((db) =>
      db.query<CheckoutMove, []>("SELECT id, repo, checkout, ref, old, new, started_at FROM moves WHERE ended_at IS NULL ORDER BY id").all(),
    )
  }
}
