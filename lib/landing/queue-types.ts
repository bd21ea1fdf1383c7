// The merge queue's shapes (docs/RUN.md, "Merge queue"): what a landing is told (a verdict), what the queue
// tells the run as it goes (LandingEvents), and what it is given to work with (QueueOptions).
import type { RunState } from "../state/run-state"
import type { Fence } from "../store/store"
import type { MoveJournal } from "./merge-journal"
import type { QueueTarget } from "./queue-target"
import type { Check } from "../worktree/command"
import type { WorktreeSettings } from "../worktree/hooks"

export type Verdict =
  | { ok: true; commit: string; alreadyMerged: boolean }
  | { ok: false; kind: "conflict"; conflicts: string[]; reason: string }
  | { ok: false; kind: "check"; reason: string; output: string; timedOut: boolean }
  | { ok: false; kind: "stopped"; reason: string }
  /** a reviewer asked for changes before it lands (docs/REVIEW.md): `comment` goes to the agent as a fix round */
  | { ok: false; kind: "review"; reason: string; comment: string }
  /** not the agent's to fix: no checkout to merge into, local changes in the way, a git failure */
  | { ok: false; kind: "refused"; reason: string }

/** A merge candidate's place in its target's queue as the run shows it (docs/RUN.md, "Merge queue"). */
export type QueueState = "waiting" | "checking" | "passed" | "failed"

/** How a candidate left the queue, and what it cost there (the queue report's service levels). */
export type QueueExit = {
  /** landed; failed (its own failure, a conflict, refused); stopped (the run stopped, the claim was lost) */
  outcome: "landed" | "failed" | "stopped"
  /** from the landing's start (the agent's work finished) to the verdict */
  seconds: number
  /** checks started for it, and those thrown away (rebuilt under them, or taken over after a lapsed lease) */
  checks: number
  thrown: number
  /** the times its batch failed and was bisected while it was in it (docs/RUN.md, "Batches"); absent: none */
  bisections?: number
}

/** What the landing machinery tells the run as it goes: lib/run/events.ts's stream carries these among the run's. */
export type LandingEvent =
  /**
   * onTopOf: the candidates ahead whose merges the candidate's merge is built on (checking only; [] on the
   * target itself); machine: the machine that checks it, when that is another (a fleet's)
   */
  | {
      type: "queue"
      taskId: string
      target: string
      state: QueueState
      position: number
      reason?: string
      seconds?: number
      onTopOf?: string[]
      machine?: string
    }
  /** a candidate left its queue (landed, or with a verdict): what it cost */
  | ({ type: "queue-end"; taskId: string; target: string } & QueueExit)
  /** at the run's end, for each target this run landed into: the service levels of its candidates (lib/landing/queue-report.ts) */
  | ({ type: "queue-report"; target: string } & ServiceLevels)
  /** a check this machine runs for another machine's candidate (a fleet's): `of`, that machine */
  | { type: "check"; taskId: string; target: string; of: string; state: "checking" | "passed" | "failed"; seconds?: number; reason?: string }
  /**
   * a check this machine ran on a candidate's merge, whoever's, and finished (not stopped): what the task's
   * evidence shows (docs/REVIEW.md); code null when it was killed at its timeout
   */
  | {
      type: "check-result"
      taskId: string
      target: string
      command: string
      passed: boolean
      code: number | null
      timedOut: boolean
      seconds: number
      output: string
    }
  /**
   * taskId: the task that waits (a landing that waits for the person), when it is one task's; review: its
   * landing waits for its reviewer's decision (`flow review`); reviewer: the agent that reviews it (not the person)
   */
  | { type: "waiting"; taskId?: string; reason: string; review?: boolean; reviewer?: string }
  /** something the run or its landing did or found on its own: recovery at start, an unusable tasks.yaml, a skipped task */
  | { type: "notice"; taskId?: string; text: string }

export type LandingEvents = { emit(event: LandingEvent): void }

/**
 * A run's landing service levels in one queue (docs/RUN.md, "Merge queue"): of its candidates that landed,
 * the time from the agent's done to the target's move (p50, p95 by nearest rank, and the longest wait, whose),
 * checks per merge and checks thrown away; and how many left with a failure of their own.
 */
export type ServiceLevels = {
  landed: number
  failed: number
  p50: number
  p95: number
  longest: { taskId: string; seconds: number }
  checksPerMerge: number
  thrown: number
  /** the bisection steps the candidates that failed cost (their batches split to find them); absent: none */
  bisections?: number
}

/**
 * Where a candidate's review stands (docs/REVIEW.md, "The review gate"), for its branch's commit: none needed,
 * waiting for the reviewer (`agent`: an agent reviews it, not yet the person), approved, or changes asked for with a comment.
 */
export type ReviewState = { state: "none" | "approved" } | { state: "waiting"; agent?: string } | { state: "changes"; comment: string }

export type QueueOptions = {
  repo: string
  target: string
  /** undefined: no check configured (a merge passes once it is built) */
  check: Check | undefined
  /** where scratch worktrees go; what a killed run left there is cleared at the next run's start (clearScratch) */
  scratchDir: string
  /** how many candidates are built and checked at once, fleet-wide: 1 is a strictly serial queue */
  depth: number
  /** how many consecutive candidates are checked as one merge (flow.yaml `queue: { batch }`; 1: each its own) */
  batch: number
  /** how many checks this run takes at once (0: it leaves them to other machines') */
  slots: number
  /** how long a lead or a check's claim holds without a renewal, on the state's clock (flow.yaml `lease`) */
  leaseMs: number
  /** this run (lib/run/reaper.ts RUN_ID): whose candidates, leads and checks */
  run: string
  /** the run state, whose `queue` holds the rows */
  state: RunState
  /** the target the queue moves: this clone's branch, or a shared remote's (lib/landing/queue-target.ts) */
  into: QueueTarget
  /** whether a candidate's claim of its task still holds (a fleet's: nothing lands of a task another run took over) */
  holds?: (fence: Fence) => Promise<boolean>
  /** one git operation on the repository's worktree registrations (and fetches) at a time */
  serial: <T>(fn: () => Promise<T>, later?: boolean) => Promise<T>
  bus: LandingEvents
  signal: AbortSignal
  author: { name: string; email: string }
  /** repository-relative paths of flow's own files: a branch's changes to them are left out of its merge */
  keepOut: string[]
  /** where moves of a checked-out target are journaled (lib/landing/checkout-move.ts) */
  moves: MoveJournal
  /** the check's environment beyond the task's: FLOW_RUN_ID and FLOW_PROJECT, so the reaper knows its processes */
  checkEnv: Record<string, string>
  /** records each check's process group for the reaper, as agents' are (lib/run/reaper.ts) */
  track: (pid: number, taskId: string) => void
  /** where a candidate's review stands (flow.yaml `review`); absent: no candidate waits for one */
  review?: (taskId: string, head: string) => Promise<ReviewState>
  /** where a landing that waits for the person is recorded while it waits (lib/landing/landing-waits.ts) */
  waits: { set: (taskId: string, reason: string) => void; clear: (taskId: string) => void }
  /** each check's scratch worktree made ready as a task's is (flow.yaml copy, ports, setup), and torn down */
  worktree: WorktreeSettings
}
