// Budgets (docs/BUDGETS.md): what a task, an agent or a run may spend, what it spent, and the question flow
// asks when a task reaches its cap. Pure: the spend comes from lib/budget/budget-meter.ts, the grants from the
// answers to those questions in the state database.
import { Exit, FlowError } from "../cli/errors"
import { bare, hint } from "../cli/hint"
import { formatDuration, parseDuration } from "../cli/duration"
import type { Question } from "../model/json-shapes"
import type { Budget } from "../model/schema"
import type { BudgetConfig } from "../config/config"

export type Unit = "usd" | "tokens" | "minutes"
export const UNITS: readonly Unit[] = ["usd", "tokens", "minutes"]
/** Caps per unit; a unit left out has none. */
export type Limits = Budget
/** What was spent: dollars (reported, or estimated from prices), tokens as billed, minutes of agent turns. */
export type Spend = Record<Unit, number>
export const NO_SPEND: Spend = { usd: 0, tokens: 0, minutes: 0 }

/** The default multiple of a cap past which an agent is stopped at once rather than at the end of its turn. */
export const DEFAULT_CEILING = 1.5

/** A unit spent up to (or past) its cap. */
export type Reached = { unit: Unit; spent: number; cap: number }

/** A task's caps: flow.yaml's budget.task, each field replaced by the task's own `budget:` where it has one. */
export function taskLimits(config: BudgetConfig | undefined, task: { budget?: Budget }): Limits {
  return { ...config?.task, ...task.budget }
}

/** `limits` raised by what people granted (answers to budget questions); a unit without a cap stays without. */
export function withGrants(limits: Limits, grants: Partial<Spend>): Limits {
  const out: Limits = { ...limits }
  for (const unit of UNITS) if (out[unit] !== undefined && grants[unit]) out[unit] = round(out[unit]! + grants[unit]!)
  return out
}

/** The first unit (dollars, tokens, minutes) whose spend reached `factor` times its cap; undefined when none did. */
export function reached(spend: Spend, limits: Limits, factor = 1): Reached | undefined {
  for (const unit of UNITS) {
    const cap = limits[unit]
    if (cap !== undefined && spend[unit] >= cap * factor) return { unit, spent: spend[unit], cap }
  }
  return undefined
}

export function addSpend(a: Spend, b: Partial<Spend>): Spend {
  return { usd: round(a.usd + (b.usd ?? 0)), tokens: a.tokens + (b.tokens ?? 0), minutes: a.minutes + (b.minutes ?? 0) }
}

/** `$5.20`, `2,100,000 tokens`, `47m`: an amount of a unit as people read it. */
export function amount(unit: Unit, n: number): string {
  if (unit === "usd") return `$${n.toFixed(2)}`
  if (unit === "tokens") return `${count(n)} tokens`
  return formatDuration(n * 60_000)
}

/** `spent $5.20 of $5.00`, `used 2,100,000 of 2,000,000 tokens`, `ran 47m of 45m`. */
export function reachedText(r: Reached): string {
  if (r.unit === "usd") return `spent ${amount("usd", r.spent)} of ${amount("usd", r.cap)}`
  if (r.unit === "tokens") return `used ${count(r.spent)} of ${amount("tokens", r.cap)}`
  return `ran ${amount("minutes", r.spent)} of ${amount("minutes", r.cap)}`
}

/** The kind of the question about a unit of a task's budget, in the state database's questions. */
export function budgetKind(unit: Unit): string {
  return `budget:${unit}`
}

export function unitOf(question: Pick<Question, "kind">): Unit | undefined {
  const unit = question.kind?.startsWith("budget:") ? question.kind.slice(7) : undefined
  return UNITS.includes(unit as Unit) ? (unit as Unit) : undefined
}

const EXAMPLE: Record<Unit, string> = { usd: "5 or $5", tokens: "500000, 500k or 2M", minutes: "30 or 30m" }
const WHAT: Record<Unit, string> = { usd: "the dollars", tokens: "the tokens", minutes: "the minutes" }
const NAME: Record<Unit, string> = { usd: "dollars", tokens: "tokens", minutes: "minutes" }

/** The question flow asks when a task reaches a cap: what it spent, and the two answers it takes. */
export function budgetQuestion(taskId: string, r: Reached): string {
  return `task '${taskId}' ${reachedText(r)}: answer with ${WHAT[r.unit]} to add (${EXAMPLE[r.unit]}) and its agent goes on in the same session, or 'block' to block the task (its branch is kept)`
}

/** What an answer to a budget question says: more of the unit, or block the task (with the person's reason, if any). */
export type BudgetAnswer = { grant: number } | { block: string | undefined }

/**
 * An amount as typed, with the unit it names: `$5`, `5 dollars`; `500k`, `2M`, `2m tokens`; `10m`, `1h30m`,
 * `30 minutes`. A plain number names none: it is in the question's unit.
 */
function readAmount(text: string): { unit: Unit | undefined; n: number } | undefined {
  const t = text.trim().replaceAll(",", "")
  const num = String.raw`(\d+(?:\.\d+)?)`
  let m = new RegExp(`^${num}$`).exec(t)
  if (m) return { unit: undefined, n: Number(m[1]) }
  m = new RegExp(String.raw`^\$\s*${num}$|^${num}\s*(?:\$|usd|dollars?)$`, "i").exec(t)
  if (m) return { unit: "usd", n: Number(m[1] ?? m[2]) }
  // `10m` is ten minutes, as every duration flow takes; millions of tokens are `M`, or `m` with the word tokens.
  m = new RegExp(String.raw`^${num}\s*([km])?\s*tokens?$`, "i").exec(t) ?? new RegExp(String.raw`^${num}\s*([kKM])$`).exec(t)
  if (m) return { unit: "tokens", n: Math.round(Number(m[1]) * (m[2] === undefined ? 1 : m[2].toLowerCase() === "k" ? 1e3 : 1e6)) }
  m = new RegExp(String.raw`^${num}\s*(?:min|mins|minutes?)$`, "i").exec(t)
  if (m) return { unit: "minutes", n: Number(m[1]) }
  try {
    return { unit: "minutes", n: parseDuration(t, "") / 60_000 }
  } catch {
    return undefined
  }
}

/** The answer to a budget question about `unit`; undefined when it is neither an amount of that unit nor `block`. */
export function parseBudgetAnswer(unit: Unit, text: string): BudgetAnswer | undefined {
  const block = /^block\b[\s:,-]*(.*)$/is.exec(text.trim())
  if (block) return { block: block[1].trim() || undefined }
  const a = readAmount(text)
  // Answers taken before `m` meant minutes: `2m` to a token question granted two million tokens, and still does.
  if (unit === "tokens" && a?.unit === "minutes" && /^\d+(?:\.\d+)?\s*m$/.test(text.trim())) return { grant: Math.round(Number.parseFloat(text) * 1e6) }
  return a && (a.unit ?? unit) === unit ? { grant: a.n } : undefined
}

/** A task's spend and cap in one unit, the cap with what people granted (the question being answered aside). */
export type BudgetLine = { taskId: string; spent: number; cap: number }

/**
 * Refuses an answer a budget question cannot take (a usage error: `flow answer` exits 2, the run screen and
 * the inspector say why and keep the text): neither an amount of its unit nor `block`, or, given the task's
 * `line`, an amount that leaves the task over its cap, saying what clears it. Other questions take any text.
 */
export function checkBudgetAnswer(question: Pick<Question, "id" | "kind">, text: string, line?: BudgetLine): void {
  const unit = unitOf(question)
  if (unit === undefined) return
  const typed = readAmount(text)
  const answer = typed?.unit !== undefined && typed.unit !== unit ? undefined : parseBudgetAnswer(unit, text)
  if (answer === undefined) {
    throw new FlowError(
      typed?.unit
        ? `${question.id} asks for more ${NAME[unit]}, and ${JSON.stringify(text)} is ${NAME[typed.unit]}: answer with ${WHAT[unit]} to add (${EXAMPLE[unit]}) or 'block'`
        : `${question.id} asks for more budget: answer with ${WHAT[unit]} to add (${EXAMPLE[unit]}) or 'block' (was ${JSON.stringify(text)})`,
      Exit.usage,
      unit === "tokens" && typed?.unit === "minutes"
        ? "an 'm' is minutes; millions of tokens are written 2M (or 2m tokens)"
        : hint`for example: ${bare("answer", { question_id: question.id, text: EXAMPLE[unit].split(/,? or |, /)[0]! })}`,
    )
  }
  if (!line || !("grant" in answer) || line.spent < line.cap + answer.grant) return
  // Shown rounded up (a cent, a token, a second): every amount more than what is shown clears the cap.
  const need = Math.ceil((line.spent - line.cap) * PER[unit] - 1e-9) / PER[unit]
  throw new FlowError(
    `${question.id}: ${amount(unit, answer.grant)} more leaves task '${line.taskId}' over its budget (it ${reachedText({ unit, spent: line.spent, cap: round(line.cap + answer.grant) })}); more than ${amount(unit, need)} clears it`,
    Exit.usage,
    hint`for example: ${bare("answer", { question_id: question.id, text: clearing(unit, need) })}, or ${bare("answer", { question_id: question.id, text: "block" })} to block the task`,
  )
}

/** The smallest step of a unit as amounts show it: a cent, a token, a second. */
const PER: Record<Unit, number> = { usd: 100, tokens: 1, minutes: 60 }

/** A round amount, as typed, just above `need`: `$3`, `200k`, `2M`, `5m`. */
function clearing(unit: Unit, need: number): string {
  if (unit === "usd") return `$${Math.floor(need) + 1}`
  if (unit === "minutes") return formatDuration((Math.floor(need) + 1) * 60_000).replaceAll(" ", "")
  const step = 10 ** Math.max(3, Math.floor(Math.log10(Math.max(need, 1))))
  const n = (Math.floor(need / step) + 1) * step
  return n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n % 1e3 === 0 ? `${n / 1e3}k` : String(n)
}

/** What people granted a task, per unit: the sum of the amounts answered to its budget questions. */
export function grantsOf(questions: readonly Question[]): Partial<Spend> {
  const out: Partial<Spend> = {}
  for (const q of questions) {
    const unit = unitOf(q)
    if (unit === undefined || q.answer === null) continue
    const a = parseBudgetAnswer(unit, q.answer)
    if (a && "grant" in a) out[unit] = round((out[unit] ?? 0) + a.grant)
  }
  return out
}

const round = (n: number) => Math.round(n * 1e10) / 1e10
// Thousands separated by commas whatever the locale, so output is the same on every machine.
const count = (n: number) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",")
