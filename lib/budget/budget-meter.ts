// What tasks, agents and the run have spent (docs/BUDGETS.md): a task's spend before this run read once from
// the run state's events, and everything since counted from the run's own events as they happen (the
// database is written behind the run, so a read could miss the turn that just ended).
import type { RunState, SpendRow } from "../state/run-state"
import { isSpendEvent, type SpendEvents } from "./budget-events"
import { addSpend, NO_SPEND, type Spend } from "./budget"
import * as clock from "../cli/clock"

function fold(rows: readonly (SpendRow & { task_id: string })[]): Map<string, Spend> {
  const out = new Map<string, Spend>()
  for (const r of rows) {
    const add = r.kind === "agent.exit" ? { minutes: (r.seconds ?? 0) / 60 } : { usd: r.cost ?? 0, tokens: r.tokens ?? 0 }
    out.set(r.task_id, addSpend(out.get(r.task_id) ?? NO_SPEND, add))
  }
  return out
}

/** Every task's spend over all runs (each task's own turns: dollars, billed tokens, minutes of its agents' turns). */
export async function spendByTask(db: RunState): Promise<Map<string, Spend>> {
  return fold(await db.spend.byTask())
}

/** One task's spend from the events recorded before `before` (an ISO time), all of them without it. */
export async function taskSpend(db: RunState, taskId: string, before?: string): Promise<Spend> {
  return fold(await db.spend.byTask(taskId, before)).get(taskId) ?? NO_SPEND
}

/**
 * The spend of one run as it goes: per task (with what it spent in earlier runs), per agent and in all, from
 * the run's `agent` usage and `agent-exit` events. The run's minutes are its wall time; a task's and an
 * agent's, the time their turns ran (a turn still running is added by whoever watches it).
 */
export class SpendMeter {
  private readonly startedMs = clock.now()
  private readonly since = new Date(this.startedMs).toISOString()
  private run: Spend = NO_SPEND
  private readonly tasks = new Map<string, Spend>()
  private readonly agents = new Map<string, Spend>()
  private readonly earlier = new Map<string, Promise<Spend>>()
  private readonly listeners = new Set<() => void>()

  constructor(
    bus: SpendEvents,
    private readonly db: RunState,
  ) {
    bus.subscribe((e) => {
      if (!isSpendEvent(e)) return
      if (e.type === "agent" && e.event.type === "usage") {
        const u = e.event
        const add = { usd: u.costUsd ?? 0, tokens: u.billedTokens ?? (u.inputTokens ?? 0) + (u.outputTokens ?? 0) }
        this.add(e.taskId, e.agent, add)
      } else if (e.type === "agent-exit") {
        this.add(e.taskId, e.agent, { minutes: e.seconds / 60 })
      }
    })
  }

  private add(taskId: string, agent: string, add: Partial<Spend>): void {
    this.run = addSpend(this.run, { ...add, minutes: 0 })
    this.tasks.set(taskId, addSpend(this.tasks.get(taskId) ?? NO_SPEND, add))
    this.agents.set(agent, addSpend(this.agents.get(agent) ?? NO_SPEND, add))
    for (const listener of this.listeners) listener()
  }

  /** A task's spend over every run, this one included. */
  async task(taskId: string): Promise<Spend> {
    let before = this.earlier.get(taskId)
    if (!before) {
      before = taskSpend(this.db, taskId, this.since)
      this.earlier.set(taskId, before)
      before.catch(() => this.earlier.delete(taskId)) // a busy or full database: asked again next time
    }
    return addSpend(await before, this.tasks.get(taskId) ?? NO_SPEND)
  }

  /** What an agent spent in this run. */
  agent(name: string): Spend {
    return this.agents.get(name) ?? NO_SPEND
  }

  /** What the run spent, its minutes being its wall time so far. */
  total(): Spend {
    return { ...this.run, minutes: (clock.now() - this.startedMs) / 60_000 }
  }

  /** Calls `listener` after every report; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
