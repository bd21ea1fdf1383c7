// What the budget layer hears from the run and tells it: lib/run/events.ts's stream carries these among the
// run's, so the layer sits below the run and knows only the events it counts and the ones it raises.
import type { AgentEvent } from "../agents/types"
import type { LandingEvent } from "../landing/merge-queue"

/** The run's events a spend is counted from (lib/budget/budget-meter.ts): an agent's own events and its exit. */
export type SpendEvent =
  | { type: "agent"; taskId: string; agent: string; event: AgentEvent }
  | { type: "agent-exit"; taskId: string; agent: string; code: number; seconds: number }

/** What the budget layer tells the run as it goes. */
export type BudgetEvent =
  /** the task reached its budget (`text`: what it spent of what): flow asked `question` and waits (docs/BUDGETS.md) */
  | { type: "budget"; taskId: string; agent: string; question: string; unit: string; text: string }
  /** the answer to a budget question raised the task's cap (`text`: by how much): its agent goes on */
  | { type: "budget-raised"; taskId: string; question: string; text: string }
  /**
   * the agent's CLI reported a usage limit: the task waits (in progress, its session kept) until `until` (ISO)
   * for `agent`, or moves at once to the agent `to` (flow.yaml `fallback`)
   */
  /** `backoffMs`, `streak`: the CLI named no reset, so a back-off after the task's `streak`-th limit in a row */
  | { type: "parked"; taskId: string; agent: string; until: string; reason: string; backoffMs?: number; streak?: number; to?: string }

/** Where the budget layer says what it did: its own events, and a notice as the run's landing gives one. */
export type BudgetEvents = { emit(event: BudgetEvent | Extract<LandingEvent, { type: "notice" }>): void }

/** The run's event stream as the spend meter reads it: every event, of which it counts the SpendEvents. */
export type SpendEvents = { subscribe(listener: (event: { type: string }) => void): unknown }

/** An event of the run's stream is a SpendEvent by its type: the stream's types name one shape each. */
export function isSpendEvent(event: { type: string }): event is SpendEvent {
  return event.type === "agent" || event.type === "agent-exit"
}
