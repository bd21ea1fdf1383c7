// Usage limits: how a CLI says that its provider refused a request for a rate limit, a plan's quota or an
// overloaded API, and when it says the limit resets. Each adapter keeps its CLI's wordings in one table
// (`limits`), checked in the CLI's source or binary at the version its adapter names (and, for Claude Code
// 2.1.330, Codex 0.169.0, Gemini CLI 0.61.0 and Copilot 1.0.102, against a server answering 429); the runner
// matches the turn's error against it, and a limited turn parks its task instead of failing it
// (docs/BUDGETS.md "Usage limits").

/** rate: requests or tokens per minute; quota: a plan's or account's usage (hours to weeks); overloaded: the provider's capacity. */
export type LimitKind = "rate" | "quota" | "overloaded"

/** One wording of a refusal: the pattern of the CLI's error text, and whether the text names when it resets. */
export type LimitPattern = { kind: LimitKind; pattern: RegExp }

/** A refusal the turn ended with: its kind, the CLI's words, and the reset time when the CLI gave one. */
export type UsageLimit = { kind: LimitKind; message: string; resetsAt?: Date }

/**
 * The limit `text` (a CLI's error, on one line) reports according to `table`, with the reset time the text
 * names (`resetTime`); undefined when no pattern matches. The first matching row wins.
 */
export function matchLimit(table: readonly LimitPattern[], text: string, now: Date): UsageLimit | undefined {
  const row = table.find((p) => p.pattern.test(text))
  if (!row) return undefined
  const resetsAt = resetTime(text, now)
  return resetsAt ? { kind: row.kind, message: text, resetsAt } : { kind: row.kind, message: text }
}

/** Wordings every OpenAI-compatible or Anthropic API error may carry, whichever CLI passes them on. */
export const HTTP_LIMITS: readonly LimitPattern[] = [
  { kind: "overloaded", pattern: /\b529\b|\boverloaded/i },
  { kind: "quota", pattern: /usage limit|insufficient_quota|quota exceeded|exceeded your current quota|RESOURCE_EXHAUSTED/i },
  { kind: "rate", pattern: /\b429\b|too many requests|rate[ _-]?limit/i },
]

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * When `text` says the limit resets, in any of the forms the CLIs print: an epoch after `|` (Claude Code's
 * older `usage limit reached|1751234567`), an ISO 8601 time, a delay (`retry in 2.5s`, `reset in 2 hours 5
 * minutes`, `Please try again in 20s`), or a clock time, with a date or not (`try again at 3:05 PM`, `Nov
 * 26th, 2026 3:05 PM`, `resets 2pm (Europe/Paris)`, `resets at 14:05`), in the named zone, else local time.
 * A clock time without a date is the next one to come; one without seconds means the end of that minute, so
 * a wait never ends before the limit does. Undefined when the text names no time.
 */
export function resetTime(text: string, now: Date): Date | undefined {
  const epoch = /\|(\d{10})\b/.exec(text)
  if (epoch) return new Date(Number(epoch[1]) * 1000)
  const iso = /\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}))/.exec(text)
  if (iso) return new Date(iso[1])
  const delay = /\b(?:in|after)\s+((?:\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hrs?|hours?|d|days?)\b[\s,]*(?:and\s+)?)+)/i.exec(text)
  if (delay) {
    let ms = 0
    for (const [, n, unit] of delay[1].matchAll(/(\d+(?:\.\d+)?)\s*(ms|[smhd])/gi)) ms += Number(n) * UNIT_MS[unit.toLowerCase()]
    if (ms > 0) return new Date(now.getTime() + Math.ceil(ms))
  }
  const clock =
    /\b(?:resets?|try again|retry|until)\b[^\d]{0,12}?(?:\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([A-Za-z_]+(?:\/[A-Za-z_+-]+)*)\))?/i.exec(
      text,
    )
  if (!clock) return undefined
  const [, month, day, year, h, mi, s, ampm, zone] = clock
  if (mi === undefined && ampm === undefined) return undefined // a bare number is no time of day
  let hour = Number(h)
  if (hour > 23 || Number(mi ?? 0) > 59) return undefined
  if (ampm) hour = (hour % 12) + (ampm.toLowerCase() === "pm" ? 12 : 0)
  const timeZone = zone && validZone(zone) ? zone : undefined
  const today = partsIn(now, timeZone)
  const date = {
    year: year ? Number(year) : today.year,
    month: month ? MONTHS.indexOf(month.toLowerCase()) + 1 : today.month,
    day: day ? Number(day) : today.day,
  }
  // Without seconds the limit may end anywhere in that minute: wait for its end.
  const slack = s === undefined && mi !== undefined ? 60_000 : 0
  let at = wallTime({ ...date, hour, minute: Number(mi ?? 0), second: Number(s ?? 0) }, timeZone).getTime() + slack
  if (!month && at <= now.getTime()) at += 86_400_000 // a time of day already past today is tomorrow's
  return new Date(at)
}

type Parts = { year: number; month: number; day: number; hour: number; minute: number; second: number }

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** The wall clock of `at` in `timeZone` (local time without one). */
function partsIn(at: Date, timeZone: string | undefined): Parts {
  if (timeZone === undefined)
    return { year: at.getFullYear(), month: at.getMonth() + 1, day: at.getDate(), hour: at.getHours(), minute: at.getMinutes(), second: at.getSeconds() }
  const f = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  })
  const p = Object.fromEntries(f.formatToParts(at).map((x) => [x.type, Number(x.value)]))
  return { year: p.year, month: p.month, day: p.day, hour: p.hour, minute: p.minute, second: p.second }
}

/** The instant a wall clock reading shows in `timeZone` (local time without one). */
function wallTime(w: Parts, timeZone: string | undefined): Date {
  if (timeZone === undefined) return new Date(w.year, w.month - 1, w.day, w.hour, w.minute, w.second)
  const guess = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second)
  // The zone's offset at the guess, applied once, and again if the first step crossed a change of offset.
  let at = guess
  for (let i = 0; i < 2; i++) {
    const p = partsIn(new Date(at), timeZone)
    at = guess - (Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - at)
  }
  return new Date(at)
}
