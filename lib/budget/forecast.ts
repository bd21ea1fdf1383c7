// The forecast `flow run --dry-run` prints and a run logs when it starts (docs/BUDGETS.md "Forecast"): the
// tasks left to do, what each finished task spent, and an estimate of the rest with what it rests on.
import type { Indexed } from "../model/task-index"
import type { BudgetConfig } from "../config/config"
import { amount, DEFAULT_CEILING, type Limits, NO_SPEND, type Spend, taskLimits, type Unit, UNITS } from "./budget"

export type Forecast = {
  /** tasks agents will still work on: not done, not blocked, not checkpoints or parents of subtasks */
  todo: string[]
  /** the done tasks with recorded spend, in file order */
  finished: { id: string; spend: Spend }[]
  /** tasks in progress with recorded spend: counted in the estimate for what they still need */
  started: { id: string; spend: Spend }[]
  /** what the rest costs in each unit with a basis (absent: no basis); `basis` says how it was made */
  rest: Partial<Spend>
  basis: string
}

const worked = (s: Spend | undefined): s is Spend => s !== undefined && (s.usd > 0 || s.tokens > 0 || s.minutes > 0)

/**
 * The forecast from the tasks and every task's spend so far (lib/budget/budget-meter.ts spendByTask). The rest
 * is the mean spend of the finished tasks for each task to do (less what a started one spent already); with
 * none finished, each task is counted at its budget (said not to be a bound); with neither, there is no estimate.
 */
export function forecast(index: Map<string, Indexed>, spent: Map<string, Spend>, budget: BudgetConfig | undefined): Forecast {
  const work = [...index.values()].map((e) => e.task).filter((t) => t.checkpoint !== true && !t.subtasks?.length)
  const todo = work.filter((t) => t.status !== "done" && t.status !== "blocked")
  const finished = work.filter((t) => t.status === "done" && worked(spent.get(t.id))).map((t) => ({ id: t.id, spend: spent.get(t.id)! }))
  const started = todo.filter((t) => worked(spent.get(t.id))).map((t) => ({ id: t.id, spend: spent.get(t.id)! }))
  const rest: Partial<Spend> = {}
  let basis: string
  if (finished.length > 0) {
    const mean = Object.fromEntries(UNITS.map((u) => [u, finished.reduce((sum, f) => sum + f.spend[u], 0) / finished.length])) as Spend
    for (const unit of UNITS) {
      if (mean[unit] === 0) continue
      rest[unit] = todo.reduce((sum, t) => sum + Math.max(0, mean[unit] - (spent.get(t.id)?.[unit] ?? 0)), 0)
    }
    basis = `${todo.length} task${todo.length === 1 ? "" : "s"} at the mean of the ${finished.length} finished (${spendText(mean)} each), less what the started ones spent`
  } else {
    const caps = todo.map((t) => taskLimits(budget, t))
    for (const unit of UNITS) {
      if (todo.length > 0 && caps.every((c) => c[unit] !== undefined)) {
        rest[unit] = caps.reduce((sum, c, i) => sum + Math.max(0, c[unit]! - (spent.get(todo[i].id)?.[unit] ?? 0)), 0)
      }
    }
    // Not a bound: a cap is checked before a turn and watched during one, so the last turn of a task can go
    // past it (minutes until the ceiling stops it; dollars and tokens arrive when the CLI reports them).
    const ceiling = budget?.ceiling ?? DEFAULT_CEILING
    basis =
      Object.keys(rest).length > 0
        ? `no task has finished yet, so each task to do is counted at its budget; not a bound: a task's last turn can go past its budget (minutes up to about ${ceiling} times it, where the agent is stopped; dollars and tokens by what that turn spends before its CLI reports it), and answers to budget questions add more`
        : "no estimate: no task has finished yet and the tasks have no budget"
  }
  return { todo: todo.map((t) => t.id), finished, started, rest, basis }
}

/** `$0.42, 12,000 tokens, 3m`: the units that were spent. */
export function spendText(s: Partial<Spend>): string {
  const parts = UNITS.filter((u) => (s[u] ?? 0) > 0).map((u) => amount(u, s[u]!))
  return parts.length > 0 ? parts.join(", ") : "nothing recorded"
}

/** The caps of flow.yaml's budget, one phrase per scope: `$100.00 for the run, $5.00 for each task`. */
export function budgetText(budget: BudgetConfig | undefined): string | undefined {
  const phrase = (limits: Limits | undefined, what: string) => {
    const set = UNITS.filter((u: Unit) => limits?.[u] !== undefined)
    return set.length > 0 ? `${set.map((u) => amount(u, limits![u]!)).join(", ")} ${what}` : undefined
  }
  const parts = [phrase(budget?.run, "for the run"), phrase(budget?.agent, "for each agent in a run"), phrase(budget?.task, "for each task")].filter(Boolean)
  return parts.length > 0 ? parts.join("; ") : undefined
}

/** The forecast as lines, without a prefix. */
export function forecastLines(f: Forecast, budget: BudgetConfig | undefined): string[] {
  const sum = (list: { spend: Spend }[]) =>
    list.reduce((all, x) => ({ usd: all.usd + x.spend.usd, tokens: all.tokens + x.spend.tokens, minutes: all.minutes + x.spend.minutes }), NO_SPEND)
  const lines = [`${f.todo.length} task${f.todo.length === 1 ? "" : "s"} to do${f.started.length ? ` (${f.started.length} started)` : ""}`]
  if (f.finished.length > 0)
    lines.push(`spent by the finished tasks: ${f.finished.map((x) => `${x.id} ${spendText(x.spend)}`).join("; ")} (in all ${spendText(sum(f.finished))})`)
  if (f.started.length > 0) lines.push(`spent by the started tasks: ${f.started.map((x) => `${x.id} ${spendText(x.spend)}`).join("; ")}`)
  lines.push(Object.keys(f.rest).length > 0 ? `estimate for the rest: ${spendText(f.rest)} (${f.basis})` : `estimate for the rest: ${f.basis}`)
  const caps = budgetText(budget)
  if (caps) lines.push(`budget: ${caps}`)
  return lines
}

/** What each CLI's stream reports of its spending (docs/AGENTS.md "Tokens and cost", docs/BUDGETS.md). */
const REPORTS: Readonly<Record<string, "dollars" | "tokens and model" | "tokens" | "nothing">> = {
  claude: "dollars",
  opencode: "dollars",
  goose: "dollars",
  gemini: "tokens and model",
  codex: "tokens",
  cursor: "tokens",
  copilot: "nothing",
  command: "nothing",
  script: "nothing",
}

/**
 * The caps of flow.yaml's budget that cannot hold an agent back, said before a run: dollars for a CLI that
 * reports none and whose model (flow.yaml's `model:`) has no price, tokens for one that reports none.
 */
export function budgetWarnings(
  agents: readonly { name: string; cli: string; model?: string }[],
  budget: BudgetConfig | undefined,
  priced: (model: string | undefined) => boolean,
): string[] {
  const capped = (unit: Unit) => [budget?.task, budget?.agent, budget?.run].some((l) => l?.[unit] !== undefined)
  const out: string[] = []
  for (const a of agents) {
    const reports = REPORTS[a.cli] ?? "nothing"
    if (capped("usd") && (reports === "nothing" || (reports === "tokens" && !priced(a.model))))
      out.push(
        reports === "nothing"
          ? `${a.name} (${a.cli}) reports no tokens or dollars: dollar caps count none of its work (minutes still do)`
          : `${a.name} (${a.cli}) reports tokens but no dollars, and flow knows no price for its model (${a.model ?? "none named in flow.yaml"}): dollar caps count none of its work; name its model in flow.yaml (model:), with a price under prices: if flow has none`,
      )
    else if (capped("tokens") && reports === "nothing") out.push(`${a.name} (${a.cli}) reports no tokens: token caps count none of its work (minutes still do)`)
  }
  return out
}
