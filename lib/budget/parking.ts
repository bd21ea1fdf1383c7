// Usage limits under `flow run` (docs/BUDGETS.md "Usage limits"): an agent whose CLI reports a rate limit, a
// used-up quota or an overloaded API is parked, not failed. Its task goes back to the run's queue, still in
// progress with its worktree and session; the agent takes nothing until the reset its CLI named (or a back-off),
// then resumes that task in the same session. An agent with `fallback:` hands the task to another agent, of
// another CLI, at once: a fresh session with the whole task and the branch's work so far.
import type { UsageLimit } from "../agents/limits"
import type { AgentConfig } from "../config/config"
import { fallbacksOf } from "../config/fallback"
import type { AgentRecord } from "../state/run-state"
import type { BudgetEvents } from "./budget-events"
import { callVerb, flowCall } from "../agents/flow-call"
import * as clock from "../cli/clock"

/** A parked task: the agent it waits for, and the agents it may move to meanwhile (its fallbacks, in order). */
export type ParkedTask = { taskId: string; agent: string; cli: string; until: number; reason: string; fallbacks: string[] }

/** A back-off instead of a reset time the CLI named: how long, and which limit in a row of the task it follows. */
export type Backoff = { ms: number; streak: number }

/** Who takes a parked task, and what its next prompt says about the turn the limit stopped. */
export type Handover = { taskId: string; note: string }

/** Without a reset time: a minute (flow.yaml `limit_backoff`), doubled for each limit in a row of the task. */
export const DEFAULT_LIMIT_BACKOFF_MS = 60_000
/** The back-off doubles up to half an hour (or the first back-off, when that is longer). */
const BACKOFF_MAX_MS = 30 * 60_000

export class Parking {
  /** agent → parked until (ms) */
  private readonly agents = new Map<string, number>()
  /**
   * task → how many limits in a row its turns met. Counted per task, not per agent: a turn that never reached
   * the provider (a resume the CLI refused: it never saved the session) is no sign the limit is over.
   */
  private readonly streaks = new Map<string, number>()
  private readonly tasks = new Map<string, ParkedTask>()
  private readonly wakes = new Map<number, ReturnType<typeof setTimeout>>()

  /** `wake`: called when a parked agent's time comes (the scheduler looks again); `backoffMs`: the first back-off. */
  constructor(
    private readonly runAgents: readonly AgentConfig[],
    private readonly wake: () => void,
    private readonly backoffMs = DEFAULT_LIMIT_BACKOFF_MS,
  ) {}

  /** Agents an earlier run left parked (the state database's agents), each until its time. */
  restore(records: readonly AgentRecord[], now = clock.now()): void {
    for (const r of records) {
      const until = r.parked_until ? Date.parse(r.parked_until) : Number.NaN
      if (!(until > now) || !this.runAgents.some((a) => a.name === r.name)) continue
      this.agents.set(r.name, until)
      this.timer(until)
      if (r.parked_task) {
        this.streaks.set(r.parked_task, 1)
        const agent = this.runAgents.find((a) => a.name === r.name)!
        this.tasks.set(r.parked_task, {
          taskId: r.parked_task,
          agent: r.name,
          cli: agent.cli,
          until,
          reason: r.parked_reason ?? "usage limit",
          fallbacks: this.fallbacks(agent),
        })
      }
    }
  }

  /**
   * Parks `agent` (its task `taskId`, which may not move when `pinned` by agent_name) after `limit`: until the
   * reset the CLI named, else a back-off, `backoffMs` doubled for each limit in a row of the task. Returns until
   * when, the back-off when no reset was named (and which limit in a row it was), and the fallback agent the
   * task moves to, if any.
   */
  park(taskId: string, agent: AgentConfig, limit: UsageLimit, pinned: boolean, now = clock.now()): { until: Date; backoff?: Backoff; to?: string } {
    const streak = (this.streaks.get(taskId) ?? 0) + 1
    this.streaks.set(taskId, streak)
    const named = limit.resetsAt && limit.resetsAt.getTime() > now ? limit.resetsAt.getTime() : undefined
    const backoff = Math.min(Math.max(BACKOFF_MAX_MS, this.backoffMs), this.backoffMs * 2 ** (streak - 1))
    const until = named ?? now + backoff
    this.agents.set(agent.name, until)
    this.timer(until)
    const fallbacks = pinned ? [] : this.fallbacks(agent)
    this.tasks.set(taskId, { taskId, agent: agent.name, cli: agent.cli, until, reason: limit.message, fallbacks })
    const to = fallbacks.find((name) => !this.isParked(name, now))
    return { until: new Date(until), ...(named === undefined ? { backoff: { ms: backoff, streak } } : {}), ...(to ? { to } : {}) }
  }

  /** The task's agent worked a turn without meeting a limit: the task's next limit starts the back-off afresh. */
  ok(taskId: string): void {
    this.streaks.delete(taskId)
  }

  isParked(agent: string, now = clock.now()): boolean {
    return (this.agents.get(agent) ?? 0) > now
  }

  /** Whether a task waits here (it is not to be taken as an ordinary task meanwhile). */
  holds(taskId: string): boolean {
    return this.tasks.has(taskId)
  }

  /** How many tasks wait, and the earliest time one of them may go on: for the run's "waiting" line. */
  waiting(): ParkedTask[] {
    return [...this.tasks.values()]
  }

  /**
   * The parked task `agent` takes now, with the note for its next prompt: its own task once its park is over
   * (the same session), or a task parked by another agent that lists it as a fallback (a fresh session).
   * undefined when none; the task leaves the parking.
   */
  takeFor(agent: AgentConfig, now = clock.now()): Handover | undefined {
    if (this.isParked(agent.name, now)) return undefined
    for (const p of this.tasks.values()) {
      if (p.agent === agent.name && p.until <= now) {
        this.tasks.delete(p.taskId)
        return { taskId: p.taskId, note: resumeNote(p, agent.mcp) }
      }
    }
    for (const p of this.tasks.values()) {
      if (p.agent !== agent.name && p.fallbacks.includes(agent.name) && agent.cli !== p.cli) {
        this.tasks.delete(p.taskId)
        return { taskId: p.taskId, note: fallbackNote(p) }
      }
    }
    return undefined
  }

  /** The task is no longer waiting here (its worker keeps it: a fix waiting in place). */
  forget(taskId: string): void {
    this.tasks.delete(taskId)
  }

  /** Stops the timers (the run ends). */
  close(): void {
    for (const t of this.wakes.values()) clearTimeout(t)
    this.wakes.clear()
  }

  private fallbacks(agent: AgentConfig): string[] {
    return fallbacksOf(agent).filter((name) => this.runAgents.some((a) => a.name === name && a.cli !== agent.cli))
  }

  private timer(until: number): void {
    if (this.wakes.has(until)) return
    const t = setTimeout(
      () => {
        this.wakes.delete(until)
        this.wake()
      },
      Math.max(0, until - clock.now()) + 50,
    )
    t.unref?.()
    this.wakes.set(until, t)
  }
}

/**
 * Parks `agent` after `limit` and says so on the bus (`parked`, with the fallback the task moves to); returns
 * until when. `inPlace`: the task stays with its worker, which waits (a fix for the merge queue under way).
 */
export function parkAndSay(o: {
  parking: Parking
  bus: BudgetEvents
  taskId: string
  agent: AgentConfig
  limit: UsageLimit
  pinned?: boolean
  inPlace?: boolean
}): Date {
  const { until, backoff, to } = o.parking.park(o.taskId, o.agent, o.limit, Boolean(o.pinned || o.inPlace))
  if (o.inPlace) o.parking.forget(o.taskId)
  o.bus.emit({
    type: "parked",
    taskId: o.taskId,
    agent: o.agent.name,
    until: until.toISOString(),
    reason: o.limit.message,
    ...(backoff ? { backoffMs: backoff.ms, streak: backoff.streak } : {}),
    ...(to ? { to } : {}),
  })
  return until
}

/** What a session is told when it goes on, in place, after its provider's usage limit reset. */
export function limitNote(taskId: string, reason: string): string {
  return `Your last turn was stopped by a usage limit of your provider (${reason}); it has reset. Go on with task '${taskId}' where you left off.\n`
}

/** What the agent whose limit has reset is told in its own session; `tools`: it has flow's MCP server. */
function resumeNote(p: ParkedTask, tools = false): string {
  const run = callVerb(tools)
  return (
    `Your last turn on task '${p.taskId}' was stopped by a usage limit of your provider (${p.reason}); it has reset. ` +
    `Go on with the task where you left off. When it is finished, ${run} ${flowCall({ done: p.taskId }, tools, "'")}; ` +
    `if you cannot finish it, ${run} ${flowCall({ block: p.taskId, reason: "<reason>" }, tools, "'")}.\n`
  )
}

/** What an agent of another CLI taking over the task is told, after the whole task prompt. */
function fallbackNote(p: ParkedTask): string {
  return (
    `## Work so far\n\nAgent ${p.agent} (${p.cli}) worked on this task before you and was stopped by its provider's usage limit ` +
    `(${p.reason}). What it did is committed on this branch: read 'git log' and the changes since the branch started before you go on, ` +
    `and go on from there rather than starting over.\n`
  )
}
