// .flow/state.db's rows as the run state's shapes (lib/state/run-state.ts): the merge journal's entries, and
// the whole state as a StateDump and back, for `flow share` (into the shared store) and `flow unshare` (out of
// it). Process groups and landing waits are left out of a dump: they mean something only to the run that wrote
// them, and neither command runs beside a run.
import type { Database } from "bun:sqlite"
import { type MergeRow, mergeEntry, type StateDump } from "../run-state"

/** Every row of the state database that a dump holds. */
export function dumpRows(d: Database): StateDump {
  return {
    questions: d
      .query<StateDump["questions"][number], []>(
        "SELECT id, seq, task_id, agent, text, kind, asked_at, answer, answered_at, answered_by FROM questions ORDER BY seq",
      )
      .all(),
    events: d
      .query<{ at: string; kind: string; task_id: string | null; agent: string | null; data: string | null }, []>(
        "SELECT at, kind, task_id, agent, data FROM events ORDER BY id",
      )
      .all()
      .map((e) => ({ ...e, data: e.data === null ? null : JSON.parse(e.data) })),
    agents: d
      .query<StateDump["agents"][number], []>(
        "SELECT name, cli, current_task, completed, session_id, updated_at, parked_until, parked_reason, parked_task FROM agents ORDER BY name",
      )
      .all(),
    merges: d.query<MergeRow, []>("SELECT * FROM merges ORDER BY id").all().map(mergeEntry),
    moves: d.query<StateDump["moves"][number], []>("SELECT id, repo, checkout, ref, old, new, started_at, ended_at, outcome FROM moves ORDER BY id").all(),
  }
}

/** Adds a dump's rows to an empty state database (the caller's transaction). */
export function loadRows(d: Database, dump: StateDump): void {
  const q = d.query(
    "INSERT INTO questions (id, seq, task_id, agent, text, kind, asked_at, answer, answered_at, answered_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  )
  for (const r of dump.questions) q.run(r.id, r.seq, r.task_id, r.agent, r.text, r.kind ?? null, r.asked_at, r.answer, r.answered_at, r.answered_by)
  const e = d.query("INSERT INTO events (at, kind, task_id, agent, data) VALUES (?, ?, ?, ?, ?)")
  for (const r of dump.events) e.run(r.at, r.kind, r.task_id, r.agent, r.data === null || r.data === undefined ? null : JSON.stringify(r.data))
  const a = d.query(
    "INSERT INTO agents (name, cli, current_task, completed, session_id, updated_at, parked_until, parked_reason, parked_task) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
  )
  for (const r of dump.agents) a.run(r.name, r.cli, r.current_task, r.completed, r.session_id, r.updated_at, r.parked_until, r.parked_reason, r.parked_task)
  const m = d.query(
    "INSERT INTO merges (task_id, repo, branch, branch_head, target, target_before, started_at, outcome, merge_commit, detail, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  )
  for (const r of dump.merges)
    m.run(r.taskId, r.repo, r.branch, r.branchHead, r.target, r.targetBefore, r.startedAt, r.outcome, r.mergeCommit, r.detail, r.closedAt)
  const v = d.query("INSERT INTO moves (repo, checkout, ref, old, new, started_at, ended_at, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
  for (const r of dump.moves) v.run(r.repo, r.checkout, r.ref, r.old, r.new, r.started_at ?? "", r.ended_at, r.outcome)
}
