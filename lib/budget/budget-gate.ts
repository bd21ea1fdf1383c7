// A task's budget under `flow run` (docs/BUDGETS.md): checked before every turn of its agent, and watched
// during one. At a task's cap the run asks a person and waits (its agent's work committed first); at the
// run's or the agent's, the task is left in progress for the next run; past the ceiling a turn is stopped
// at once instead of at its end.
import type { BudgetConfig } from "../config/config"
import type { RunState } from "../state/run-state"
import type { BudgetEvents } from "./budget-events"
import type { SpendMeter } from "./budget-meter"
import {
  checkBudgetAnswer,
  amount,
  budgetKind,
  budgetQuestion,
  DEFAULT_CEILING,
  grantsOf,
  NO_SPEND,
  parseBudgetAnswer,
  reached,
  reachedText,
  type Reached,
  type Spend,
  taskLimits,
  unitOf,
  withGrants,
} from "./budget"
import type { Question } from "../model/json-shapes"
import { sleepUnlessStopped } from "../cli/stop-sleep"
import { callVerb, flowCall } from "../agents/flow-call"
import * as clock from "../cli/clock"

/** What a session is told when it goes on after a budget's ceiling stopped its turn and a person gave more; `tools` as in fixPrompt. */
export function budgetNote(taskId: string, why: string, tools = false): string {
  const done = flowCall({ done: taskId }, tools, "'")
  const block = flowCall({ block: taskId, reason: "<reason>" }, tools, "'")
  return `Your last turn was stopped (${why}). Go on with task '${taskId}' where you left off; when it is finished, ${callVerb(tools)} ${done}, or ${block} if you cannot finish it.\n`
}

/** How often a task waiting for a budget answer looks for it (one indexed read of the state database). */
const ANSWER_POLL_MS = 200

/** go: the next turn may start; paused: the run's or the agent's budget is spent, the task waits for the next run. */
export type Gate = "go" | "paused" | "blocked" | "stopped"

/** What the gate needs of the run's settings (lib/run/settings.ts). */
export type GateSettings = {
  /** flow.yaml `budget` */
  budget?: BudgetConfig
  db: RunState
  bus: BudgetEvents
  /** the run's stop */
  signal: AbortSignal
}

/** What the gate needs of its task worker. */
export type GateTask = {
  taskId: string
  agent: string
  /** the task's own `budget:` (tasks.yaml, read afresh: a person may raise it during the run) */
  budget: () => Promise<{ budget?: { usd?: number; tokens?: number; minutes?: number } }>
  /** commits what the agent left in its worktree, on its branch, saying why */
  commit: (why: string) => Promise<void>
  block: (note: string) => Promise<void>
}

export class TaskBudget {
  private pausedSaid = false

  constructor(
    private readonly s: GateSettings,
    private readonly meter: SpendMeter,
    private readonly t: GateTask,
  ) {}

  private get ceiling(): number {
    return this.s.budget?.ceiling ?? DEFAULT_CEILING
  }

  /** The run's or the agent's cap, when spent (`factor` times it, `running` minutes of a turn under way counted): how. */
  private shared(factor = 1, running = 0): string | undefined {
    const run = reached(this.meter.total(), this.s.budget?.run ?? {}, factor)
    if (run) return `the run's budget is reached (${reachedText(run)})`
    const spent = this.meter.agent(this.t.agent)
    const agent = reached({ ...spent, minutes: spent.minutes + running }, this.s.budget?.agent ?? {}, factor)
    if (agent) return `agent ${this.t.agent}'s budget for this run is reached (${reachedText(agent)})`
    return undefined
  }

  /** The task's caps now, with what people granted, and what it spent (plus `running` minutes of a turn under way). */
  private async state(running = 0): Promise<{ spend: Spend; caps: ReturnType<typeof taskLimits>; asked: Question[] }> {
    const asked = await this.s.db.questions.aboutBudget(this.t.taskId)
    const caps = withGrants(taskLimits(this.s.budget, await this.t.budget()), grantsOf(asked))
    // Without a cap nothing needs the spend: the events are not read.
    const spend = Object.keys(caps).length > 0 ? await this.meter.task(this.t.taskId) : NO_SPEND
    return { spend: { ...spend, minutes: spend.minutes + running }, caps, asked }
  }

  /**
   * Before a turn: `go`, or why not. At the task's cap its work is committed and a question asked (or the one
   * already asked waited for): an amount raises the cap and the check runs again, `block` blocks the task.
   */
  async gate(): Promise<Gate> {
    for (;;) {
      if (this.s.signal.aborted) return "stopped"
      const why = this.shared()
      if (why) {
        if (!this.pausedSaid) {
          await this.t.commit(why)
          this.s.bus.emit({ type: "notice", taskId: this.t.taskId, text: `${why}: its agent stops here, the task stays in progress for the next 'flow run'` })
        }
        this.pausedSaid = true
        return "paused"
      }
      const { spend, caps, asked } = await this.state()
      const over = reached(spend, caps)
      if (!over) {
        await this.retire(asked)
        return "go"
      }
      const answer = await this.ask(over, asked)
      if (answer === undefined) return "stopped"
      if ("block" in answer.reply) {
        await this.t.block(
          `blocked at its budget: it ${reachedText(over)}; ${answer.question.id} was answered 'block' by ${answer.question.answered_by ?? "a person"}${answer.reply.block ? `: ${answer.reply.block}` : ""} (its branch is kept)`,
        )
        return "blocked"
      }
      this.s.bus.emit({
        type: "budget-raised",
        taskId: this.t.taskId,
        question: answer.question.id,
        text: `${amount(over.unit, answer.reply.grant)} more`,
      })
    }
  }

  /**
   * The task's question about `over` (an unanswered one a stopped run left, or a new one, after committing
   * the work), waited for; undefined when the run stops first.
   */
  private async ask(over: Reached, asked: Question[]) {
    const kind = budgetKind(over.unit)
    let question = asked.find((q) => q.kind === kind && q.answer === null)
    if (!question) {
      await this.t.commit(`its budget is reached (${reachedText(over)})`)
      question = await this.s.db.questions.ask({ task_id: this.t.taskId, agent: null, text: budgetQuestion(this.t.taskId, over), kind })
    }
    this.s.bus.emit({ type: "budget", taskId: this.t.taskId, agent: this.t.agent, question: question.id, unit: over.unit, text: reachedText(over) })
    for (;;) {
      if (this.s.signal.aborted) return undefined
      const now = await this.s.db.questions.get(question.id)
      if (now?.answer != null) {
        const reply = parseBudgetAnswer(over.unit, now.answer)
        // Refused at the door (questions.answer checks it); an answer written around it is taken as a block, the safe side.
        await this.s.db.questions.delivered(this.t.taskId, [now.id], "flow run")
        return { question: now, reply: reply ?? { block: `the answer ${JSON.stringify(now.answer)} is not an amount` } }
      }
      await sleepUnlessStopped(ANSWER_POLL_MS, this.s.signal)
    }
  }

  /** Budget questions of units no longer over their caps (flow.yaml raised meanwhile): answered, so none stays pending. */
  private async retire(asked: Question[]): Promise<void> {
    for (const q of asked) {
      if (q.answer !== null || unitOf(q) === undefined) continue
      await this.s.db.questions.answer(q.id, "0", "flow run", { accept: checkBudgetAnswer })
    }
  }

  /**
   * Watches one turn: past the ceiling (1.5 times a cap by default) of the task's, the agent's or the run's
   * budget the returned signal aborts (the turn stops at once); `stopped()` says why. The turn's own minutes
   * count as it runs. `parent`: the run's stop.
   */
  async watch(parent: AbortSignal): Promise<{ signal: AbortSignal; stopped: () => string | undefined; clear: () => void }> {
    const controller = new AbortController()
    const abort = () => controller.abort()
    parent.addEventListener("abort", abort, { once: true })
    if (parent.aborted) controller.abort()
    let why: string | undefined
    const started = clock.now()
    const { caps } = await this.state()
    if (Object.keys(caps).length === 0 && !this.s.budget?.agent && !this.s.budget?.run) {
      return { signal: controller.signal, stopped: () => undefined, clear: () => parent.removeEventListener("abort", abort) }
    }
    const check = async () => {
      if (why || controller.signal.aborted) return
      const minutes = (clock.now() - started) / 60_000
      const spend = await this.meter.task(this.t.taskId)
      const over = reached({ ...spend, minutes: spend.minutes + minutes }, caps, this.ceiling)
      const shared = this.shared(this.ceiling, minutes)
      const reason = over
        ? `task '${this.t.taskId}' ${reachedText(over)}, past ${this.ceiling} times its budget`
        : shared && `${shared}, past ${this.ceiling} times`
      if (!reason || controller.signal.aborted) return
      why = reason
      this.s.bus.emit({ type: "notice", taskId: this.t.taskId, text: `${reason}: stopping its agent now` })
      controller.abort()
    }
    const unsubscribe = this.meter.onChange(() => void check().catch(() => {}))
    // Minutes pass without reports: a timer for the moment the first cap in minutes passes its ceiling.
    let timer: ReturnType<typeof setTimeout> | undefined
    const schedule = async () => {
      const spend = await this.meter.task(this.t.taskId)
      const elapsed = (clock.now() - started) / 60_000
      const left = [
        caps.minutes === undefined ? Infinity : caps.minutes * this.ceiling - spend.minutes - elapsed,
        this.s.budget?.agent?.minutes === undefined ? Infinity : this.s.budget.agent.minutes * this.ceiling - this.meter.agent(this.t.agent).minutes - elapsed,
        this.s.budget?.run?.minutes === undefined ? Infinity : this.s.budget.run.minutes * this.ceiling - this.meter.total().minutes,
      ]
      const ms = Math.min(...left) * 60_000
      if (!Number.isFinite(ms) || controller.signal.aborted) return
      timer = setTimeout(
        () =>
          void check().then(
            () => (why ? undefined : schedule()),
            () => {},
          ),
        Math.max(0, ms) + 20,
      )
    }
    await schedule()
    return {
      signal: controller.signal,
      stopped: () => why,
      clear: () => {
        unsubscribe()
        if (timer) clearTimeout(timer)
        parent.removeEventListener("abort", abort)
      },
    }
  }
}
