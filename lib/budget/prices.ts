// What tokens cost, for the CLIs that report tokens but no dollars (Codex, Gemini CLI, Copilot, Cursor), and
// how tokens count against a token budget: as the provider bills them, cached input at its price. The table
// is an estimate (docs/BUDGETS.md "Prices"): flow.yaml's `prices` add models or replace these.
import type { UsageEvent } from "../agents/types"
import type { PriceConfig } from "../config/config"

/** Dollars per million tokens. `cached_input`: a read from the prompt cache; `cache_write`: a write to it. */
export type Price = PriceConfig
export type PriceTable = Readonly<Record<string, Price>>

/**
 * flow's own prices, in dollars per million tokens, standard (not batch, not priority) rates for prompts under
 * the long-context tier. Compiled 2026-11-25 from the vendors' published price lists (docs.anthropic.com
 * "Pricing", platform.openai.com "Pricing", ai.google.dev "Gemini Developer API pricing"), as quoted by
 * copies of those pages: estimates, to check against your provider's bill.
 */
export const DEFAULT_PRICES: PriceTable = {
  // Anthropic: a 5-minute cache write costs 1.25 times input, a read 0.1 times.
  "claude-opus-4": { input: 15, output: 75, cached_input: 1.5, cache_write: 18.75 },
  "claude-opus-4-1": { input: 15, output: 75, cached_input: 1.5, cache_write: 18.75 },
  "claude-opus-4-5": { input: 5, output: 25, cached_input: 0.5, cache_write: 6.25 },
  "claude-opus-4-6": { input: 5, output: 25, cached_input: 0.5, cache_write: 6.25 },
  "claude-sonnet-4": { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 },
  "claude-sonnet-4-5": { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 },
  "claude-sonnet-4-6": { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 },
  "claude-haiku-4-5": { input: 1, output: 5, cached_input: 0.1, cache_write: 1.25 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cached_input: 0.08, cache_write: 1 },
  // OpenAI: cached input is a tenth of input for the GPT-5 family; writing the cache costs nothing extra.
  "gpt-5": { input: 1.25, output: 10, cached_input: 0.125 },
  "gpt-5-codex": { input: 1.25, output: 10, cached_input: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cached_input: 0.025 },
  "gpt-5.1": { input: 1.25, output: 10, cached_input: 0.125 },
  "gpt-5.1-codex": { input: 1.25, output: 10, cached_input: 0.125 },
  "gpt-5.1-codex-max": { input: 1.25, output: 10, cached_input: 0.125 },
  "gpt-5.1-codex-mini": { input: 0.25, output: 2, cached_input: 0.025 },
  "gpt-5.2": { input: 1.75, output: 14, cached_input: 0.175 },
  "gpt-5.2-codex": { input: 1.75, output: 14, cached_input: 0.175 },
  "gpt-5.3-codex": { input: 1.75, output: 14, cached_input: 0.175 },
  "gpt-5.4": { input: 2.5, output: 15, cached_input: 0.25 },
  "gpt-5.4-mini": { input: 0.75, output: 4.5, cached_input: 0.075 },
  "gpt-5.5": { input: 5, output: 30, cached_input: 0.5 },
  "gpt-4.1": { input: 2, output: 8, cached_input: 0.5 },
  o3: { input: 2, output: 8, cached_input: 0.5 },
  // Google: cached input is a tenth of input (storage of an explicit cache is not counted).
  "gemini-2.5-pro": { input: 1.25, output: 10, cached_input: 0.125 },
  "gemini-2.5-flash": { input: 0.3, output: 2.5, cached_input: 0.03 },
  "gemini-2.5-flash-lite": { input: 0.1, output: 0.4, cached_input: 0.01 },
  "gemini-3-pro": { input: 2, output: 12, cached_input: 0.2 },
  "gemini-3-flash": { input: 0.5, output: 3, cached_input: 0.05 },
  "gemini-3.1-pro": { input: 2, output: 12, cached_input: 0.2 },
  "gemini-3.1-flash-lite": { input: 0.25, output: 1.5, cached_input: 0.025 },
}

/** flow's prices with flow.yaml's on top (a model named in both takes flow.yaml's). */
export function priceTable(configured: Record<string, Price> | undefined): PriceTable {
  return { ...DEFAULT_PRICES, ...configured }
}

/**
 * The price of `model`: its own entry, else the longest entry it extends (`claude-sonnet-4-5-20250929`,
 * `gemini-3.1-pro-preview`), after any provider prefix (`anthropic/claude-sonnet-4-5`); undefined for a
 * model the table does not know.
 */
export function priceOf(table: PriceTable, model: string | undefined): Price | undefined {
  if (!model) return undefined
  const name = model.slice(model.lastIndexOf("/") + 1).toLowerCase()
  if (table[name]) return table[name]
  let best: string | undefined
  for (const key of Object.keys(table)) {
    if (name.startsWith(key) && /^[-@:]/.test(name.slice(key.length)) && key.length > (best?.length ?? 0)) best = key
  }
  return best === undefined ? undefined : table[best]
}

// Without a price: what the providers charge in common, a cache read at a tenth of input, a write at input.
const CACHE_READ_WEIGHT = 0.1
const CACHE_WRITE_WEIGHT = 1

/**
 * The report's tokens as the provider bills them, in input tokens' worth for the input side: fresh input,
 * cache writes and cache reads each at their price relative to input, plus output tokens one for one. A long
 * session reads most of its context from the cache at a tenth of the price: counted whole, it would reach a
 * token cap for nothing.
 */
export function billedTokens(u: UsageEvent, price: Price | undefined): number | undefined {
  if (u.inputTokens === undefined && u.outputTokens === undefined) return undefined
  const read = u.cacheReadTokens ?? 0
  const write = u.cacheWriteTokens ?? 0
  const fresh = Math.max(0, (u.inputTokens ?? 0) - read - write)
  const weight = (p: number | undefined, fallback: number) => (price && price.input > 0 && p !== undefined ? p / price.input : fallback)
  const billed = fresh + write * weight(price?.cache_write, CACHE_WRITE_WEIGHT) + read * weight(price?.cached_input, CACHE_READ_WEIGHT) + (u.outputTokens ?? 0)
  return Math.round(billed)
}

/** The report's cost at `price` in dollars (cached input at its own price when the table has one). */
export function estimateCost(u: UsageEvent, price: Price): number {
  const read = u.cacheReadTokens ?? 0
  const write = u.cacheWriteTokens ?? 0
  const fresh = Math.max(0, (u.inputTokens ?? 0) - read - write)
  const dollars =
    fresh * price.input + read * (price.cached_input ?? price.input) + write * (price.cache_write ?? price.input) + (u.outputTokens ?? 0) * price.output
  return Math.round((dollars / 1e6) * 1e10) / 1e10
}

/**
 * The report as flow records it: with the tokens as billed, and a cost estimated from the model's price when
 * the CLI gave tokens but no dollars (marked `costEstimated`). `model` is what the stream or flow.yaml says
 * the agent runs; a report naming its own model wins.
 */
export function priced(u: UsageEvent, table: PriceTable, model: string | undefined): UsageEvent {
  const price = priceOf(table, u.model ?? model)
  const out: UsageEvent = { ...u }
  const billed = billedTokens(u, price)
  if (billed !== undefined) out.billedTokens = billed
  if (out.costUsd === undefined && price && (u.inputTokens !== undefined || u.outputTokens !== undefined)) {
    out.costUsd = estimateCost(u, price)
    out.costEstimated = true
  }
  return out
}
