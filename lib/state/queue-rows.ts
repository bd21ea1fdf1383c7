// The merge queue's rows in the run state (docs/RUN.md, "Merge queue"): one engine (lib/landing/merge-queue.ts)
// over two backends, .flow/state.db in files and the shared PostgreSQL database in a fleet, so that every run of
// every machine sees one line per target and takes its part of the work from it. A candidate is a row: its task
// and the branch's commit that lands, what its merge is built on, the merge, and its check's claim (who, which
// attempt, until when). A queue's lead (who builds the window and moves the target) is a lease of its own row.
// Every lease is on the state's clock (the database's now() in a fleet), every write fenced: by the lead's
// epoch, by a row's generation (bumped at each rebuild) and by a check's attempt.

/**
 * A candidate's place: waiting (not built), ready (built, its check not taken yet), checking, passed, failed; then
 * landed or left. covered: built in a batch (docs/RUN.md, "Batches") whose check is the one of the first candidate
 * behind it that is not covered, the batch's last: it lands when that one passes, and is never checked alone.
 */
export type QueueRowState = "waiting" | "ready" | "covered" | "checking" | "passed" | "failed" | "landed" | "left"

/** The states of a candidate still in line. */
export const IN_LINE: readonly QueueRowState[] = ["waiting", "ready", "covered", "checking", "passed", "failed"]

export type QueueRow = {
  id: number
  /** the queue's key: the same on every clone of one target (a remote's URL and the branch in a fleet) */
  queue: string
  /** the target branch, for what is shown */
  target: string
  /** its place in line: lower goes first (a queue may one day choose the order: only seq says it) */
  seq: number
  task_id: string
  branch: string
  /** the branch's commit that lands */
  head: string
  message: string
  /** the run that handed it over, and in a fleet its claim's attempt on the task (the fence its landing needs) */
  run_id: string
  attempt: number | null
  /** the machine of that run (a fleet's; null in files) */
  machine: string | null
  submitted_at: string
  /** bumped at every (re)build: a check of an older build reports into nothing */
  gen: number
  /** the commit its merge is built on (the target's, or the merge of the candidate ahead), and the merge */
  base: string | null
  merge: string | null
  /** where every machine fetches the merge from (a ref on the shared remote), when it has to */
  ref: string | null
  /** the tasks of the candidates ahead whose merges its merge holds, in order ([] on the target itself) */
  ahead: string[]
  state: QueueRowState
  /** why it waits, failed or left, in words */
  reason: string | null
  /** the verdict it left with, or its check's failure (lib/landing/merge-queue.ts `Verdict`) */
  verdict: unknown
  /** who checks (or checked) its current build: the run and its machine, and the claim's attempt */
  check_run: string | null
  check_machine: string | null
  check_attempt: number
  /** how long its last check took */
  seconds: number | null
  /** checks started for it, and checks of it thrown away (rebuilt under them, or a lease that lapsed) */
  checks: number
  thrown: number
  landed_at: string | null
}

/** A candidate handed over. */
export type NewCandidate = Pick<QueueRow, "queue" | "target" | "task_id" | "branch" | "head" | "message" | "run_id" | "attempt">

/** A queue's lead, held by one run at a time for a lease: `epoch` fences its writes; `tip` is the target's commit as it last recorded it. */
export type QueueLead = { queue: string; run: string; epoch: number; tip: string | null }

/** What a lead changes in one row, decided on its generation `gen`: a row rebuilt meanwhile is left alone. */
export type QueueChange = {
  id: number
  gen: number
  state: QueueRowState
  /** a new build (or, with nulls, none): the generation is bumped and its check's claim dropped */
  build?: { base: string | null; merge: string | null; ref: string | null; ahead: string[] }
  reason?: string | null
  verdict?: unknown
  /** checks of this row the change throws away */
  thrown?: number
}

/** A check taken: the row's build (id, gen) and the claim's attempt, which fence its heartbeats and its result. */
export type CheckClaim = {
  id: number
  queue: string
  gen: number
  attempt: number
  run: string
  task_id: string
  merge: string
  ref: string | null
  ahead: string[]
  /** the run that handed the candidate over, and its machine (a fleet's) */
  of: { run: string; machine: string | null }
}

/** A check's result. */
export type CheckOutcome = { ok: boolean; seconds: number; reason?: string; verdict?: unknown }

export interface QueueRows {
  /** Adds a candidate at the end of its queue's line. */
  submit(c: NewCandidate): Promise<QueueRow>
  /** The candidates in line, in order: of one queue, or of every queue (what a person is shown). */
  line(queue?: string): Promise<QueueRow[]>
  /** The candidates `run` handed over that left the line (landed, or left with a verdict), in order. */
  ended(queue: string, run: string): Promise<QueueRow[]>
  /** Deletes rows: verdicts read by their run, or candidates a stopping run withdraws. */
  forget(ids: readonly number[]): Promise<void>
  /**
   * Deletes every row and lead of the queues (this machine's in a fleet): a run's start in files, where one run
   * at a time uses a state database and whatever a killed run left is nobody's. Never called in a fleet.
   */
  clear(): Promise<void>
  /** Takes the queue's lead for `leaseMs` unless another run holds it: its epoch and the recorded tip. */
  lead(queue: string, run: string, leaseMs: number): Promise<QueueLead | undefined>
  /** Applies `changes` (and records `tip`) in one transaction while `lead` still holds; false: it lapsed, nothing was written. */
  apply(lead: QueueLead, changes: readonly QueueChange[], tip?: string): Promise<boolean>
  /** Renews the lead's lease while it works; false once another run took it over. */
  renewLead(lead: QueueLead, leaseMs: number): Promise<boolean>
  /** Lets the lead go. */
  release(lead: QueueLead): Promise<void>
  /**
   * A run proved dead (killed outright, on this machine: lib/store/postgres/claims.ts freeDead): its leads go, and
   * the checks it held are to be taken again at once, rather than after their leases.
   */
  freeRun(run: string): Promise<void>
  /** Takes the first check of the queue no live claim holds (ready, or checking under a lapsed lease), in one statement. */
  claimCheck(queue: string, run: string, leaseMs: number): Promise<CheckClaim | undefined>
  /** Renews a check's lease; false once the claim no longer holds (rebuilt, or taken over after it lapsed). */
  renewCheck(c: CheckClaim, leaseMs: number): Promise<boolean>
  /** Records a check's result while its claim holds (its lease live, its build and attempt current); false: nothing was written. */
  checkDone(c: CheckClaim, outcome: CheckOutcome): Promise<boolean>
  /** Calls `wake` whenever another process changes a queue (a fleet's notifications; nothing in files): the returned function stops it. */
  listen(wake: () => void): Promise<() => Promise<void>>
}
