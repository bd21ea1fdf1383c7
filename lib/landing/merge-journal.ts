// The merge journal: the intent and the outcome of every merge `flow run` makes, in the run state
// (lib/state/: table `merges`), so that a run killed at any instruction is recovered by the next one without running an
// agent again or merging twice (docs/RUN.md, "Merge journal"). An entry's life:
//
//   begin      intent written before `git merge`: task, repo, branch and its head, target and its head
//   outcome    after `git merge`: merged (with the merge commit) or failed (with the reason)
//   close      once tasks.yaml says so (done, or blocked), or when the task starts afresh
//
// An entry that is not closed means "this task's work was finished at branch_head and handed to a merge":
// the next run lands it (merges it if branch_head is not yet in the target) and never reruns its agent.
// This module is the whole API; lib/run/landing.ts is its only writer.
import type { CheckoutMove, MergeEntry, MergeIntent, MergeOutcome, MoveOutcome, RunState } from "../state/run-state"

export type { CheckoutMove, MergeEntry, MergeIntent, MergeOutcome, MoveOutcome }

export class MergeJournal {
  constructor(private db: RunState) {}

  /** Records the intent to merge; returns the entry's id. */
  begin(i: MergeIntent): Promise<number> {
    return this.db.merges.begin(i)
  }

  /** Records what the merge did. */
  outcome(id: number, outcome: MergeOutcome, detail: { commit?: string; reason?: string } = {}): Promise<void> {
    return this.db.merges.outcome(id, outcome, detail)
  }

  /** Closes the task's open entries: tasks.yaml now holds their result, or the task starts afresh. */
  close(taskId: string): Promise<void> {
    return this.db.merges.close(taskId)
  }

  /** The latest open entry of each task that has one (an index lookup: cheap to call on every run start). */
  open(): Promise<Map<string, MergeEntry>> {
    return this.db.merges.open()
  }

  /** The task's latest entry, open or closed. */
  latest(taskId: string): Promise<MergeEntry | undefined> {
    return this.db.merges.latest(taskId)
  }
}

/** The journal of moves of a checked-out target (lib/landing/checkout-move.ts). */
export class MoveJournal {
  constructor(private db: RunState) {}

  begin(m: Omit<CheckoutMove, "id">): Promise<number> {
    return this.db.moves.begin(m)
  }

  end(id: number, outcome: MoveOutcome): Promise<void> {
    return this.db.moves.end(id, outcome)
  }

  /** Moves a killed run left unfinished, oldest first. */
  open(): Promise<CheckoutMove[]> {
    return this.db.moves.open()
  }
}
