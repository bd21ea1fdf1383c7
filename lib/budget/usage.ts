// Tokens and cost per task, agent and run, read from the state database, and as people read them: the same
// words in `flow show`, `flow agents`, the dashboard and the inspector (docs/AGENTS.md "Tokens and cost").
import type { Usage } from "../model/json-shapes"
import type { Project } from "../cli/project"
import type { RunState } from "../state/run-state"
import { openExistingState } from "../state/state"

export type UsageTotals = {
  byTask: Map<string, Usage>
  byAgent: Map<string, Usage>
  /** the latest `flow run`'s (null before any run or when it reported nothing) */
  run: Usage | null
  /** every report the project's state database holds */
  total: Usage | null
}

export const NO_USAGE: UsageTotals = { byTask: new Map(), byAgent: new Map(), run: null, total: null }

/** Every sum at once; nothing when the project has no state database yet. */
export async function readUsage(project: Project): Promise<UsageTotals> {
  const db = await openExistingState(project)
  if (!db) return NO_USAGE
  using open = db
  return await usageFrom(open) // awaited before `using` closes the database
}

export async function usageFrom(db: RunState): Promise<UsageTotals> {
  const byTask = await db.usage.byTask()
  return { byTask, byAgent: await db.usage.byAgent(), run: await db.usage.lastRun(), total: addUsage(byTask.values()) }
}

/** A table cell: the cost when reported, else the tokens in and out together (`3,290 tok`); "" for none. */
export function usageCell(u: Usage | null | undefined): string {
  if (!u) return ""
  if (u.cost_usd !== undefined) return `${u.cost_estimated ? "~" : ""}$${u.cost_usd.toFixed(4)}`
  const tokens = (u.input_tokens ?? 0) + (u.output_tokens ?? 0)
  return u.input_tokens === undefined && u.output_tokens === undefined ? "" : `${count(tokens)} tok`
}

/** `12,345 in, 678 out, $0.0421`: only the parts that were reported; undefined when none was. */
export function usageText(u: Usage | null | undefined): string | undefined {
  if (!u) return undefined
  const parts = [
    u.input_tokens !== undefined ? `${count(u.input_tokens)} in` : "",
    u.output_tokens !== undefined ? `${count(u.output_tokens)} out` : "",
  ].filter(Boolean)
  const tokens = parts.length > 0 ? `tokens ${parts.join(", ")}` : ""
  const cost = u.cost_usd !== undefined ? `$${u.cost_usd.toFixed(4)}${u.cost_estimated ? " (estimated)" : ""}` : ""
  const text = [tokens, cost].filter(Boolean).join(", ")
  return text === "" ? undefined : text
}

/** The sum of several usages; null when none had anything. */
export function addUsage(usages: Iterable<Usage | null | undefined>): Usage | null {
  const out: Usage = {}
  for (const u of usages) {
    if (!u) continue
    if (u.input_tokens !== undefined) out.input_tokens = (out.input_tokens ?? 0) + u.input_tokens
    if (u.output_tokens !== undefined) out.output_tokens = (out.output_tokens ?? 0) + u.output_tokens
    if (u.cost_usd !== undefined) out.cost_usd = Math.round(((out.cost_usd ?? 0) + u.cost_usd) * 1e10) / 1e10
    if (u.cost_estimated) out.cost_estimated = true
  }
  return Object.keys(out).length === 0 ? null : out
}

// Thousands separated by commas whatever the locale, so output is the same on every machine.
const count = (n: number) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",")
