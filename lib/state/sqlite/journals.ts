// The run state's journals in .flow/state.db (lib/state/run-state.ts): the merge journal, the moves of
// checkouts, the process groups of agents and checks, and what landings wait for. Apart from state-db.ts,
// which holds the connection, its retries and the rest of the run state.
import type { Database } from "bun:sqlite"
import {
  type AgentGroup,
  type CheckoutMove,
  type LandingWaitRow,
  type MergeEntry,
  type MergeIntent,
  type MergeOutcome,
  type MergeRow,
  type MoveOutcome,
  mergeEntry,
  type RunState,
} from "../run-state"
import * as clock from "../../cli/clock"

/** The database and StateDb's transactions (retried while busy). */
export type Access = { db: Database; write<T>(fn: () => T): Promise<T>; retry<T>(fn: () => T): Promise<T> }

const now = () => clock.nowDate().toISOString()

export function mergesOf(a: Access): RunState["merges"] {
  return {
    begin: (i: MergeIntent): Promise<number> =>
      a.write(() =>
        Number(
          a.db
            .query("INSERT INTO merges (task_id, repo, branch, branch_head, target, target_before, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .run(i.taskId, i.repo, i.branch, i.branchHead, i.target, i.targetBefore, now()).lastInsertRowid,
        ),
      ),
    outcome: (id: number, outcome: MergeOutcome, detail: { commit?: string; reason?: string } = {}): Promise<void> =>
      a.write(() => {
        a.db.query("UPDATE merges SET outcome = ?, merge_commit = ?, detail = ? WHERE id = ?").run(outcome, detail.commit ?? null, detail.reason ?? null, id)
      }),
    close: (taskId: string): Promise<void> =>
      a.write(() => {
        a.db.query("UPDATE merges SET closed_at = ? WHERE task_id = ? AND closed_at IS NULL").run(now(), taskId)
      }),
    /** An index lookup: cheap to call on every run start. */
    open: (): Promise<Map<string, MergeEntry>> =>
      a.retry(
        () =>
          new Map(
            a.db
              .query<MergeRow, []>("SELECT * FROM merges WHERE closed_at IS NULL ORDER BY id")
              .all()
              .map((r) => [r.task_id, mergeEntry(r)]),
          ),
      ),
    latest: (taskId: string): Promise<MergeEntry | undefined> =>
      a.retry(() => {
        const r = a.db.query<MergeRow, [string]>("SELECT * FROM merges WHERE task_id = ? ORDER BY id DESC LIMIT 1").get(taskId)
        return r ? mergeEntry(r) : undefined
      }),
  }
}

export function movesOf(a: Access): RunState["moves"] {
  return {
    begin: (m: Omit<CheckoutMove, "id">): Promise<number> =>
      a.write(() =>
        Number(
          a.db
            .query("INSERT INTO moves (repo, checkout, ref, old, new, started_at) VALUES (?, ?, ?, ?, ?, ?)")
            .run(m.repo, m.checkout, m.ref, m.old, m.new, now()).lastInsertRowid,
        ),
      ),
    end: (id: number, outcome: MoveOutcome): Promise<void> =>
      a.write(() => {
        a.db.query("UPDATE moves SET ended_at = ?, outcome = ? WHERE id = ?").run(now(), outcome, id)
      }),
    open: (): Promise<CheckoutMove[]> =>
      a.retry(() => a.db.query<CheckoutMove, []>("SELECT id, repo, checkout, ref, old, new, started_at FROM moves WHERE ended_at IS NULL ORDER BY id").all()),
  }
}

export function groupsOf(a: Access): RunState["groups"] {
  return {
    track: (g: AgentGroup & { run_pid: number }): Promise<void> =>
      a.write(() => {
        a.db
          .query("INSERT OR REPLACE INTO agent_groups (pgid, started, run_pid, task_id, at) VALUES (?, ?, ?, ?, ?)")
          .run(g.pgid, g.started, g.run_pid, g.task_id, now())
      }),
    list: (): Promise<AgentGroup[]> => a.retry(() => a.db.query<AgentGroup, []>("SELECT pgid, started, task_id FROM agent_groups").all()),
    clear: (): Promise<void> =>
      a.write(() => {
        a.db.query("DELETE FROM agent_groups").run()
      }),
  }
}

export function landingWaitsOf(a: Access): RunState["landingWaits"] {
  return {
    set: (taskId: string, target: string, reason: string, runPid: number): Promise<void> =>
      a.write(() => {
        a.db
          .query(
            "INSERT INTO landing_waits (task_id, target, reason, since, run_pid) VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET target = excluded.target, reason = excluded.reason, run_pid = excluded.run_pid",
          )
          .run(taskId, target, reason, now().replace(/\.\d{3}Z$/, "Z"), runPid)
      }),
    clear: (taskId: string): Promise<void> =>
      a.write(() => {
        a.db.query("DELETE FROM landing_waits WHERE task_id = ?").run(taskId)
      }),
    clearAll: (): Promise<void> =>
      a.write(() => {
        a.db.query("DELETE FROM landing_waits").run()
      }),
    ofRun: (runPid: number): Promise<LandingWaitRow[]> =>
      a.retry(() =>
        a.db.query<LandingWaitRow, [number]>("SELECT task_id, target, reason, since FROM landing_waits WHERE run_pid = ? ORDER BY since, task_id").all(runPid),
      ),
  }
}
