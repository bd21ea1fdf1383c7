// Who works on a task: the agent of a `flow run` that holds it or held it last, apart from tasks.yaml's
// `agent_name` (a restriction on who may take it). Read from the state database (an agent's current_task,
// set when the run assigns it the task, cleared at the task's end; each task's last `task.end` event)
// and the live runs (this clone's run lock; on a shared project the database's, whatever the machine), in a
// fixed number of queries whatever the number of tasks: `flow list` asks for every task at once (docs/CLI.md
// "Who works on a task").
import { parseTimestamp } from "../cli/clock"
import type { Project } from "../cli/project"
import type { LiveRun, WorkedBy } from "../model/json-shapes"
import type { Task } from "../model/task-index"
import type { RunState, TaskEnd } from "../state/run-state"
import { liveRuns, openExistingState } from "../state/state"

export type { WorkedBy }

/** What the state database and the run lock say about every task's agents. */
export type WorkLedger = {
  /**
   * per task: the agent whose current task it is (the latest to take it), when that record last changed, and on a
   * shared project the agent's machine
   */
  holders: Map<string, { agent: string; at: string; machine?: string }>
  /** per task: its last end in a run */
  ends: Map<string, TaskEnd>
  /** the live `flow run`s (the run lock's holders, lib/state/state.ts liveRuns) */
  runs: LiveRun[]
}

export const NO_WORK: WorkLedger = { holders: new Map(), ends: new Map(), runs: [] }

/** The ledger of the project; empty when it has no state database (nothing is created). */
export async function readWork(project: Project): Promise<WorkLedger> {
  const [db, runs] = await Promise.all([openExistingState(project), liveRuns(project)])
  if (!db) return { ...NO_WORK, runs }
  using open = db
  return await workFrom(open, runs)
}

/** The ledger from an open database and the live runs (`readWork` without opening anything). */
export async function workFrom(db: RunState, runs: LiveRun[]): Promise<WorkLedger> {
  const holders: WorkLedger["holders"] = new Map()
  for (const a of await db.agents.everywhere()) {
    if (a.current_task === null) continue
    const known = holders.get(a.current_task)
    // A run killed outright leaves its agents' records: the agent that took the task last is the one.
    if (!known || a.updated_at > known.at) holders.set(a.current_task, { agent: a.name, at: a.updated_at, machine: a.machine })
  }
  return { holders, ends: await db.events.lastTaskEnds(), runs }
}

/**
 * Whether an agent's record (its machine, when it last changed) is a live run's: a run of its machine took the
 * lock before the record was written (in files, where neither says a machine, the one live run).
 */
export function ofLiveRun(runs: readonly LiveRun[], record: { machine?: string; at: string }): boolean {
  return liveRunOf(runs, record) !== undefined
}

function liveRunOf(runs: readonly LiveRun[], record: { machine?: string; at: string }): LiveRun | undefined {
  return runs.find((r) => r.machine === record.machine && record.at >= r.since)
}

/** The agent of a live `flow run` at work on `taskId` now, with its run; undefined when none is. */
export async function liveWorkOn(project: Project, taskId: string): Promise<{ agent: string; run: LiveRun } | undefined> {
  const work = await readWork(project)
  const held = work.holders.get(taskId)
  const run = held && liveRunOf(work.runs, held)
  return run && { agent: held.agent, run }
}

/**
 * Who works or worked on `task`: `working` while an agent of a live run holds it; `stopped` when its
 * run is gone (killed: the agent still holds it; or stopped with q or Ctrl-C, which ended the task in the
 * status it still has and nobody started it since): the next `flow run` resumes it; else `ended`, the
 * agent that had it last and the status it left. Null when no run ever had it.
 */
export function workedBy(task: Task, work: WorkLedger): WorkedBy | null {
  const held = work.holders.get(task.id)
  if (held) {
    const state = ofLiveRun(work.runs, held) ? "working" : "stopped"
    return { agent: held.agent, ...machineOf(held), state, ended_at: null, ended_status: null }
  }
  const end = work.ends.get(task.id)
  if (!end || end.agent === null) return null
  const running = task.status === "in_progress" || task.status === "assigned"
  const state = running && end.status === task.status && !startedAfter(task, end.at) ? "stopped" : "ended"
  return { agent: end.agent, ...machineOf(end), state, ended_at: end.at, ended_status: end.status }
}

/** `machine` on a shared project only: in files the JSON stays as it was. */
function machineOf(r: { machine?: string }): { machine?: string } {
  return r.machine === undefined ? {} : { machine: r.machine }
}

function startedAfter(task: Task, at: string): boolean {
  const started = parseTimestamp(task.started_at)
  const ended = parseTimestamp(at)
  return started !== undefined && ended !== undefined && started > ended
}

/**
 * `flow list`'s mark after a task's line: ` (working: claude-1)`, ` (stopped: claude-1)`, ` (by claude-1)`; on a
 * shared project with the agent's machine (` (working: claude-1 on laptop-1)`).
 */
export function workedByMark(w: WorkedBy | null): string {
  if (!w) return ""
  return w.state === "ended" ? ` (by ${agentOf(w)})` : ` (${w.state}: ${agentOf(w)})`
}

/** `flow show`'s `Worked by:` value, as the inspector words it too (web/text.js workedByText). */
export function workedByText(w: WorkedBy): string {
  if (w.state === "working") return `${agentOf(w)} (working on it now)`
  if (w.state === "stopped") return `${agentOf(w)} (stopped with its run; the next 'flow run' resumes it)`
  return `${agentOf(w)} (until ${w.ended_at}, leaving it ${w.ended_status})`
}

function agentOf(w: WorkedBy): string {
  return w.machine ? `${w.agent} on ${w.machine}` : w.agent
}
