// The run state: everything about a project's runs that is not the task graph (questions, agents and their
// sessions, the event log with tokens and cost, the merge journal, the moves of checkouts, the process groups
// of agents, what landings wait for, the merge queues' rows), behind one interface with two backends
// (docs/ARCHITECTURE.md, "The store seam"): .flow/state.db (lib/state/sqlite/, the default) and the shared PostgreSQL database
// (lib/state/postgres/, docs/FLEET.md). No module outside a backend writes SQL; callers get a RunState from
// `openState` / `openExistingState` and never ask which one they hold.
//
// Rows that only make sense on one machine (process groups, checkout moves, landing waits) belong to the
// machine that wrote them in the shared backend, and each machine reads and clears only its own.
import type { Question, Usage } from "../model/json-shapes"
import type { QueueRows } from "./queue-rows"

export type { Question, Usage }

/** A task's last end in a run: its agent (on a shared project with its machine), when, and the status it left. */
export type TaskEnd = { agent: string | null; at: string; status: string; machine?: string }

export type FlowEvent = { id: number; at: string; kind: string; task_id: string | null; agent: string | null; data: unknown }
export type NewEvent = { kind: string; task_id?: string | null; agent?: string | null; data?: unknown }

/** `parked_until`: the agent's CLI reported a usage limit; it takes no work before then (its task: parked_task). */
export type AgentRecord = {
  name: string
  cli: string | null
  current_task: string | null
  completed: number
  session_id: string | null
  updated_at: string
  parked_until: string | null
  parked_reason: string | null
  parked_task: string | null
  /** on a shared project, the machine whose runs the agent works in (absent in files) */
  machine?: string
}
/**
 * How usage and spend are keyed by agent: by name in files; on a shared project by name and machine, as agents
 * are (two machines' runs may name their agents alike: docs/FLEET.md, "Many runs per shared project").
 */
export function agentKey(name: string, machine?: string | null): string {
  // '@' is in no agent name (lib/cli/agent-name.ts), so the key is never another agent's.
  return machine == null ? name : `${name}@${machine}`
}
/** The fields of an agent a caller sets. */
export const AGENT_FIELDS = ["cli", "current_task", "completed", "session_id", "parked_until", "parked_reason", "parked_task"] as const
/** Fields to set on an agent; a key left out keeps its value, `null` clears it. */
export type AgentUpdate = Partial<Pick<AgentRecord, (typeof AGENT_FIELDS)[number]>>

/** What a question may be answered with: a FlowError refuses the answer (a budget question's: lib/budget/budget.ts). */
export type AnswerCheck = (question: Question, answer: string) => void

/** Spend summed from `agent.usage` (dollars, billed tokens) and `agent.exit` (seconds) events, by `kind`. */
export type SpendRow = { kind: string; cost: number | null; tokens: number | null; seconds: number | null }

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

/** A journaled move of a checked-out target (lib/landing/checkout-move.ts): `ref` from `old` to `new` in `checkout`. */
export type CheckoutMove = { id: number; repo: string; checkout: string; ref: string; old: string; new: string; started_at?: string }
export type MoveOutcome = "moved" | "given-up" | "recovered"

/** A recorded process group of an agent or a check (lib/run/reaper.ts): its leader's pid and start time. */
export type AgentGroup = { pgid: number; started: string; task_id: string | null }

/** What a task's landing waits for (lib/landing/landing-waits.ts), as the run that said it recorded it. */
export type LandingWaitRow = { task_id: string; target: string; reason: string; since: string }

/** Everything a run state holds, for moving a project between backends (`flow share`, `flow unshare`). */
export type StateDump = {
  questions: (Question & { seq: number })[]
  events: Omit<FlowEvent, "id">[]
  agents: AgentRecord[]
  merges: MergeEntry[]
  moves: (CheckoutMove & { ended_at: string | null; outcome: string | null })[]
}

export interface RunState extends Disposable {
  /** Where the state lives, for messages: the file, or the database's URL without its password and the project. */
  readonly where: string

  /** True when another process may have written since the last call (the first call is true): a waiting process re-reads only then. */
  changed(): Promise<boolean>

  readonly questions: {
    /**
     * Records a question and its `question.asked` event; ids are sequential per project: q-1, q-2, ... `kind`:
     * null for an agent's question, `budget:<unit>` for flow's own about a task's budget (lib/budget/budget.ts).
     */
    ask(q: { task_id: string; agent?: string | null; text: string; kind?: string | null }): Promise<Question>
    get(id: string): Promise<Question | undefined>
    /** Oldest first. */
    pending(): Promise<Question[]>
    all(): Promise<Question[]>
    /** One task's questions from its agents (not flow's own about its budget), answered or not, oldest first. */
    forTask(taskId: string): Promise<Question[]>
    /** The questions flow asked about one task's budget, answered or not, oldest first. */
    aboutBudget(taskId: string): Promise<Question[]>
    /** The task's answered agent questions not yet given to its agent (no `question.delivered` since the answer), oldest first. */
    undelivered(taskId: string): Promise<Question[]>
    /** Records that the task's agent was given these answers (`via`: by `flow ask --wait`, or in a prompt). */
    delivered(taskId: string, ids: readonly string[], via: string): Promise<void>
    /**
     * Records the answer unless the question has one (then `replace` decides); returns the question before and
     * after. `accept` sees the question inside the write and refuses an answer it cannot take: nothing is written.
     */
    answer(
      id: string,
      answer: string,
      by: string,
      opts: { replace?: boolean; accept: AnswerCheck },
    ): Promise<{ before: Question | undefined; after: Question | undefined }>
  }

  readonly events: {
    append(e: NewEvent): Promise<number>
    /** Events with an id above `afterId`, oldest first: a subscriber keeps the last id it saw. */
    since(afterId?: number, limit?: number): Promise<FlowEvent[]>
    /**
     * The events of the given kinds since the latest `run.start` (all of them when no run started), oldest first.
     * "The last run" on a shared project is this machine's: its latest `run.start` and the events it wrote since
     * (docs/FLEET.md, "The last run"); so are `usage.lastRun` and `spend.lastRun`.
     */
    ofLastRun(kinds: readonly string[]): Promise<FlowEvent[]>
    /**
     * Each task's last end in a run (`task.end`): which agent had it, when, and the status it was left in (on a
     * shared project also on which machine).
     */
    lastTaskEnds(): Promise<Map<string, TaskEnd>>
    /** One task's events of the given kinds over every run (every machine's on a shared project), oldest first. */
    ofTask(taskId: string, kinds: readonly string[]): Promise<FlowEvent[]>
  }

  /** Tokens and cost summed from the `agent.usage` events, by task, by agent, or over the last run. */
  readonly usage: {
    byTask(): Promise<Map<string, Usage>>
    /** keyed by agentKey */
    byAgent(): Promise<Map<string, Usage>>
    lastRun(): Promise<Usage | null>
  }

  /** What budgets count (docs/BUDGETS.md; lib/budget/budget-meter.ts folds the rows). */
  readonly spend: {
    /** Every task's spend over all runs, or one task's from the events before `before` (an ISO time). */
    byTask(taskId?: string, before?: string): Promise<(SpendRow & { task_id: string })[]>
    /**
     * The latest run (as `events.ofLastRun` says which; on a shared project `machine`'s, by default this
     * machine's): its start and end (none while it runs), and its spend by agent.
     */
    lastRun(
      machine?: string,
    ): Promise<{ startedAt: string; endedAt: string | null; rows: (SpendRow & { agent: string | null; machine?: string })[] } | undefined>
  }

  /**
   * The agents, by name: on a shared project the agents of this machine (its runs' agents, their sessions and
   * parking), except `everywhere`, every machine's, for what a person reads.
   */
  readonly agents: {
    /** Creates the agent or updates the given fields. */
    upsert(name: string, update?: AgentUpdate): Promise<AgentRecord>
    /** Adds one to the agent's completed count, atomically. */
    countCompleted(name: string): Promise<number>
    get(name: string): Promise<AgentRecord | undefined>
    list(): Promise<AgentRecord[]>
    /** every machine's agents, by name then machine (in files: `list`) */
    everywhere(): Promise<AgentRecord[]>
  }

  /** The merge journal (lib/landing/merge-journal.ts): intent before a merge, outcome after, closed once the graph says so. */
  readonly merges: {
    begin(i: MergeIntent): Promise<number>
    outcome(id: number, outcome: MergeOutcome, detail?: { commit?: string; reason?: string }): Promise<void>
    close(taskId: string): Promise<void>
    /** The latest open entry of each task that has one (on a shared project: this machine's). */
    open(): Promise<Map<string, MergeEntry>>
    /** The task's latest entry, open or closed. */
    latest(taskId: string): Promise<MergeEntry | undefined>
  }

  /** The journal of checkout moves (this machine's). */
  readonly moves: {
    begin(m: Omit<CheckoutMove, "id">): Promise<number>
    end(id: number, outcome: MoveOutcome): Promise<void>
    /** Moves a killed run left unfinished, oldest first. */
    open(): Promise<CheckoutMove[]>
  }

  /** The process groups of agents and checks (this machine's). */
  readonly groups: {
    /** Records a group (its leader `pgid` started at `started`) of run `runPid`. */
    track(g: AgentGroup & { run_pid: number }): Promise<void>
    list(): Promise<AgentGroup[]>
    clear(): Promise<void>
  }

  /** What landings wait for (this machine's runs'). */
  readonly landingWaits: {
    /** Records (or rewords) what the task's landing waits for; `since` stays the wait's first. */
    set(taskId: string, target: string, reason: string, runPid: number): Promise<void>
    clear(taskId: string): Promise<void>
    clearAll(): Promise<void>
    /** The waits run `runPid` recorded, oldest first; a shared project's run on `machine` (default: this one). */
    ofRun(runPid: number, machine?: string): Promise<LandingWaitRow[]>
  }

  /**
   * The merge queues' rows (lib/state/queue-rows.ts): every machine's in a fleet, as one line per target. Not part
   * of a dump: a queue lives only while runs land through it.
   */
  readonly queue: QueueRows

  /** Everything held, for `flow share` and `flow unshare`. */
  dump(): Promise<StateDump>
  /** Adds a dump's rows (an empty state takes another backend's whole state). */
  load(dump: StateDump): Promise<void>

  close(): void
}

/** Who answers a question: $USER, or `person` when it is unset (never FLOW_AGENT: agents answer nothing). */
export function answerer(env: Record<string, string | undefined>): string {
  return env.USER || "person"
}

/** The merge journal's row as both backends store it (table `merges`). */
export type MergeRow = {
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

export const mergeEntry = (r: MergeRow): MergeEntry => ({
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

/** Usage sums by key as both backends read them: a key with no report is absent, a field no report had stays absent. */
export type UsageSum = { key: string | null; input: number | null; output: number | null; cost: number | null; estimated: unknown }

export function usageByKey(rows: readonly UsageSum[]): Map<string, Usage> {
  const out = new Map<string, Usage>()
  for (const r of rows) {
    if (r.key === null) continue
    const u: Usage = {}
    if (r.input !== null) u.input_tokens = r.input
    if (r.output !== null) u.output_tokens = r.output
    if (r.cost !== null) u.cost_usd = Math.round(r.cost * 1e10) / 1e10
    if (r.cost !== null && r.estimated) u.cost_estimated = true
    if (Object.keys(u).length > 0) out.set(r.key, u)
  }
  return out
}
