// Tokens and cost per turn from what a CLI reports. Some CLIs report running totals (Claude Code's
// total_cost_usd, Codex's token counts on `exec resume`): a turn's usage is then the difference from the
// totals last seen. A session's totals (what the adapter's totalsPer says for the CLI's version) are kept
// beside the session file, so a stopped and resumed run (a new flow process) still subtracts the right
// amount; a process's totals (Claude Code before 2.1.277) start afresh with each CLI process, so they are
// measured from what this meter saw of the same process only. Rules: docs/AGENTS.md "Tokens and cost".
import { mkdirSync, readFileSync } from "node:fs"
import { dirname } from "node:path"
import type { Adapter, AgentEvent, TotalsScope, UsageEvent } from "../agents/types"
import { writeFileAtomic } from "../store/atomic-write"
import { type PriceTable, priced } from "./prices"

const FIELDS = { tokens: ["inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"], cost: ["costUsd"] } as const
type Field = "inputTokens" | "outputTokens" | "cacheReadTokens" | "cacheWriteTokens" | "costUsd"

/** The running totals a session's CLI last reported, per field (only the fields it reports as totals). */
export type SeenTotals = { cli: string; session: string } & Partial<Record<Field, number>>

/**
 * The turn's own usage from one report, and the totals to remember. A total below the one last seen means
 * the CLI counted afresh (a new process without the transcript's total, a cleared session): the whole
 * report is the turn's; a zero total (a crash result's zeroed values) adds nothing and is not remembered.
 */
export function turnUsage(
  report: UsageEvent,
  seen: SeenTotals | undefined,
  cli: string,
  session: string,
  resumed?: string,
): { usage: UsageEvent; seen: SeenTotals | undefined } {
  const { totals = [], ...usage } = report
  if (totals.length === 0) return { usage, seen }
  // A CLI may give a resumed conversation a new id while carrying its totals on: the resumed id counts too.
  const before = seen?.cli === cli && (seen.session === session || (resumed !== undefined && seen.session === resumed)) ? seen : undefined
  const next: SeenTotals = { ...before, cli, session }
  for (const field of totals.flatMap((f) => FIELDS[f])) {
    const reported = usage[field]
    if (reported === undefined) continue
    const last = before?.[field]
    if (last === undefined || reported > last) {
      usage[field] = round(reported - (last ?? 0))
      next[field] = reported
    } else if (reported === 0 || reported === last) {
      usage[field] = 0
    } else {
      usage[field] = reported
      next[field] = reported
    }
  }
  return { usage, seen: next }
}

// Differences of decimal dollars leave binary noise (0.0246 - 0.0123 = 0.012300000000000002).
const round = (n: number) => Math.round(n * 1e10) / 1e10

/**
 * The totals last seen for a task's session, in `file` (.flow/sessions/<task>.usage.json); in memory without
 * one. One meter serves one CLI process (one turn), which is what a process's totals are measured within.
 */
export class UsageMeter {
  private seen: SeenTotals | undefined
  private processSeen: SeenTotals | undefined

  constructor(
    private readonly cli: string,
    private readonly file?: string,
  ) {
    try {
      if (file !== undefined) this.seen = JSON.parse(readFileSync(file, "utf8")) as SeenTotals
    } catch {
      this.seen = undefined // never reported, or unreadable: the next report counts whole
    }
  }

  /**
   * The turn's usage from `report` in `session` (resumed from `resumed`, if it was), its totals counted per
   * `scope`; remembers a session's totals on disk before returning, so a crash loses none.
   */
  turn(report: UsageEvent, session: string | undefined, resumed?: string, scope: TotalsScope = "session"): UsageEvent {
    if (scope === "process") {
      // Never the file: the next process counts from zero, whatever this one reached.
      const r = turnUsage(report, this.processSeen, this.cli, session ?? "")
      this.processSeen = r.seen
      return r.usage
    }
    const r = turnUsage(report, this.seen, this.cli, session ?? "", resumed)
    if (r.seen !== this.seen) {
      this.seen = r.seen
      if (this.file === undefined) return r.usage
      try {
        mkdirSync(dirname(this.file), { recursive: true })
        writeFileAtomic(this.file, `${JSON.stringify(r.seen)}\n`)
      } catch {
        // Usage accounting must never stop a run; the next report is then measured from the older totals.
      }
    }
    return r.usage
  }
}

/** How a turn's tokens are priced: the table, and the model flow.yaml names for the agent (if any). */
export type Pricing = { table: PriceTable; model?: string }

/**
 * One CLI process's stdout, line by line: the adapter's events, each usage made the turn's own by what the
 * stream says of its session and of the CLI's version (the session event's), which decides whether its
 * running totals are the session's or the process's (the adapter's totalsPer); then priced (lib/budget/prices.ts)
 * by the model the stream names, else flow.yaml's.
 */
export class TurnStream {
  private version: string | undefined
  private model: string | undefined
  private readonly meter: UsageMeter

  /** `resumed`: the session this process was asked to resume; `sessionId`: the one it runs, as far as known. */
  constructor(
    private readonly adapter: Adapter,
    usageFile: string | undefined,
    private readonly resumed: string | undefined,
    public sessionId: string | undefined = resumed,
    private readonly pricing?: Pricing,
  ) {
    this.meter = new UsageMeter(adapter.cli, usageFile)
  }

  parse(line: string): AgentEvent[] {
    return this.adapter.parseLine(line).map((event) => {
      if (event.type === "usage") {
        const own = this.meter.turn(event, this.sessionId, this.resumed, this.adapter.totalsPer?.(this.version))
        return this.pricing ? priced(own, this.pricing.table, this.model ?? this.pricing.model) : own
      }
      if (event.type === "session") {
        this.sessionId = event.id
        if (event.version) this.version = event.version
        if (event.model) this.model = event.model
      }
      return event
    })
  }
}
