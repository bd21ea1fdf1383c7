// The orchestrator's typed event stream: the headless log, the terminal UI and the inspector all subscribe
// to the same events, so what one shows the others can show too.
import type { BudgetEvent, SpendEvent } from "../budget/budget-events"
import type { LandingEvent } from "../landing/merge-queue"
import type { WorktreeEvent } from "../worktree/events"
import * as clock from "../cli/clock"

export type RunEvent =
  | { type: "run-start"; agents: string[]; tasks: number; target: string }
  | { type: "task-assigned"; taskId: string; agent: string; cli: string }
  | { type: "task-start"; taskId: string; agent: string; branch: string; worktree: string; resumed: boolean }
  | { type: "step-start"; taskId: string; stepId: string; agent: string; session?: string }
  /** an agent's own events and its exit: what the budget layer counts a spend from */
  | SpendEvent
  | { type: "task-end"; taskId: string; agent: string; cli: string; status: string }
  | { type: "status"; taskId: string; from: string; to: string; reason?: string }
  | { type: "merge"; taskId: string; branch: string; target: string; commit: string }
  | { type: "merge-failed"; taskId: string; branch: string; target: string; reason: string }
  | { type: "fix"; taskId: string; attempt: number; of: number; kind: "check" | "conflict" | "review"; reason: string }
  | { type: "published"; taskId: string; what: "push" | "pull-request"; detail: string }
  | { type: "publish-failed"; taskId: string; what: "push" | "pull-request"; detail: string }
  | { type: "question-wait"; taskId: string; questions: string[] }
  | { type: "question-answered"; taskId: string; questions: string[] }
  /** `quiet`: another run of the fleet (the oldest live one) tells people of it; this run only shows it */
  | { type: "checkpoint"; taskId: string; quiet?: true }
  | { type: "retry"; taskId: string; attempt: number; reason: string }
  | BudgetEvent
  | LandingEvent
  | WorktreeEvent
  | {
      type: "run-end"
      done: number
      blocked: string[]
      remaining: number
      seconds: number
      interrupted: boolean
      unassignable: { id: string; agent: string }[]
    }

export type Listener = (event: RunEvent, at: Date) => void

export class EventBus {
  private listeners = new Set<Listener>()

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  emit(event: RunEvent): void {
    const at = clock.nowDate()
    for (const listener of this.listeners) listener(event, at)
  }
}
