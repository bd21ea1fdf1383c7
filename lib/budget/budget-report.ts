// Spend beside the caps of a budget, as `flow show`, `flow agents`, the dashboard and the inspector show it
// (docs/BUDGETS.md): a task's over every run, an agent's and the run's in the latest run.
import type { BudgetReport, Question } from "../model/json-shapes"
import type { BudgetConfig } from "../config/config"
import { addSpend, amount, grantsOf, type Limits, NO_SPEND, type Spend, taskLimits, UNITS, withGrants } from "./budget"
import { spendByTask, taskSpend } from "./budget-meter"
import type { Project } from "../cli/project"
import { agentKey, type RunState } from "../state/run-state"
import { openExistingState } from "../state/state"
import * as clock from "../cli/clock"

/** Each capped unit with its spend; null when nothing is capped. */
export function budgetReport(spend: Spend, caps: Limits): BudgetReport | null {
  const out: BudgetReport = {}
  for (const unit of UNITS) {
    const cap = caps[unit]
    if (cap !== undefined) out[unit] = { spent: round(spend[unit]), cap }
  }
  return Object.keys(out).length === 0 ? null : out
}

/** `$0.46 of $5.01, 3m of 45m`; undefined for no report. */
export function budgetText(r: BudgetReport | null | undefined): string | undefined {
  if (!r) return undefined
  const parts = UNITS.filter((u) => r[u]).map((u) => {
    const line = r[u]!
    return u === "tokens"
      ? `${amount("tokens", line.spent).replace(" tokens", "")} of ${amount("tokens", line.cap)}`
      : `${amount(u, line.spent)} of ${amount(u, line.cap)}`
  })
  return parts.join(", ")
}

/**
 * A task's spend over every run beside its caps: flow.yaml's budget.task under its own `budget:`, raised by
 * what people answered to its budget questions. `spend`: when the caller read every task's at once.
 */
export async function taskBudget(
  db: RunState | undefined,
  config: BudgetConfig | undefined,
  task: { id: string; budget?: Limits },
  spend?: Spend,
): Promise<BudgetReport | null> {
  const caps = taskLimits(config, task)
  if (Object.keys(caps).length === 0) return null
  if (!db) return budgetReport(NO_SPEND, caps)
  const granted = withGrants(caps, grantsOf(await db.questions.aboutBudget(task.id)))
  return budgetReport(spend ?? (await taskSpend(db, task.id)), granted)
}

/**
 * The latest run's spend, in all and per agent: its usage and turns since its `run.start`, its minutes the
 * time from its start to its end (to now while it runs or when it died without one). By agentKey. On a
 * shared project `machine`'s latest run, by default this machine's (docs/FLEET.md, "The last run").
 */
export async function lastRunSpend(db: RunState, machine?: string): Promise<{ run: Spend; byAgent: Map<string, Spend> } | undefined> {
  const last = await db.spend.lastRun(machine)
  if (!last) return undefined
  let run: Spend = { ...NO_SPEND, minutes: ((last.endedAt ? Date.parse(last.endedAt) : clock.now()) - Date.parse(last.startedAt)) / 60_000 }
  const byAgent = new Map<string, Spend>()
  for (const r of last.rows) {
    const add = r.kind === "agent.exit" ? { minutes: (r.seconds ?? 0) / 60 } : { usd: r.cost ?? 0, tokens: r.tokens ?? 0 }
    if (r.kind !== "agent.exit") run = addSpend(run, add)
    if (r.agent) {
      const key = agentKey(r.agent, r.machine)
      byAgent.set(key, addSpend(byAgent.get(key) ?? NO_SPEND, add))
    }
  }
  return { run, byAgent }
}

const round = (n: number) => Math.round(n * 1e6) / 1e6

/** A task's budget report, opening the project's state database if there is one (read-only commands create nothing). */
export async function readTaskBudget(project: Project, config: BudgetConfig | undefined, task: { id: string; budget?: Limits }): Promise<BudgetReport | null> {
  if (Object.keys(taskLimits(config, task)).length === 0) return null
  const db = await openExistingState(project)
  if (!db) return taskBudget(undefined, config, task)
  using open = db
  return await taskBudget(open, config, task)
}

/** What the dashboard and the inspector need to put spend beside budgets, read at once. */
export type BudgetState = {
  config?: BudgetConfig
  /** every task's spend over all runs */
  spends: Map<string, Spend>
  /** what people granted each task (answers to its budget questions) */
  grants: Map<string, Partial<Spend>>
  /** the latest run's spend */
  lastRun?: Spend
  /** tasks whose agent is parked by its CLI's usage limit, and until when (ISO) */
  parked: Map<string, string>
}

export const NO_BUDGET_STATE: BudgetState = { spends: new Map(), grants: new Map(), parked: new Map() }

export async function readBudgetState(db: RunState, config: BudgetConfig | undefined, now = clock.now()): Promise<BudgetState> {
  const byTask = new Map<string, Question[]>()
  for (const q of await db.questions.all()) if (q.kind?.startsWith("budget:")) byTask.set(q.task_id, [...(byTask.get(q.task_id) ?? []), q])
  const parked = new Map<string, string>()
  for (const a of await db.agents.everywhere())
    if (a.parked_task && a.parked_until && Date.parse(a.parked_until) > now) parked.set(a.parked_task, a.parked_until)
  return {
    config,
    spends: await spendByTask(db),
    grants: new Map([...byTask].map(([id, qs]) => [id, grantsOf(qs)])),
    lastRun: (await lastRunSpend(db))?.run,
    parked,
  }
}

/** A task's report from the state read at once. */
export function taskBudgetFrom(state: BudgetState, task: { id: string; budget?: Limits }): BudgetReport | null {
  return budgetReport(state.spends.get(task.id) ?? NO_SPEND, withGrants(taskLimits(state.config, task), state.grants.get(task.id) ?? {}))
}

/** The latest run's spend beside flow.yaml's budget.run. */
export function runBudgetFrom(state: BudgetState): BudgetReport | null {
  return budgetReport(state.lastRun ?? NO_SPEND, state.config?.run ?? {})
}

/** The latest run's spend beside flow.yaml's budget.run, opening the state database if there is one. */
export async function readRunBudget(project: Project, config: BudgetConfig | undefined): Promise<BudgetReport | null> {
  if (!config?.run) return null
  const db = await openExistingState(project)
  if (!db) return budgetReport(NO_SPEND, config.run)
  using open = db
  return budgetReport((await lastRunSpend(open))?.run ?? NO_SPEND, config.run)
}

/** When the agent a task waits for is parked until (ISO), if it is. */
export async function parkedUntil(project: Project, taskId: string, now = clock.now()): Promise<string | null> {
  const db = await openExistingState(project)
  if (!db) return null
  using open = db
  const agent = (await open.agents.everywhere()).find((a) => a.parked_task === taskId && a.parked_until && Date.parse(a.parked_until) > now)
  return agent?.parked_until ?? null
}
