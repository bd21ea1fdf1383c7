// Shared reading of JSON-lines streams: tolerant field access and one-line tool details.
import type { AgentEvent, UsageEvent, UsageField } from "./types"

type Json = Record<string, unknown>

/**
 * One stdout line → events. Blank lines give nothing; a line that is not a JSON object is passed on as
 * text (a CLI's stray log line must not vanish); `map` reads the object, and a shape it does not expect
 * gives nothing rather than an exception, because a newer CLI adding fields must never crash a run.
 */
export function parseJsonLine(line: string, map: (event: Json) => AgentEvent[]): AgentEvent[] {
  const trimmed = line.trim()
  if (trimmed === "") return []
  let value: unknown
  try {
    value = JSON.parse(trimmed)
  } catch {
    return [{ type: "text", text: line.replace(/\r?\n$/, "") }]
  }
  if (!isObject(value)) return [{ type: "text", text: trimmed }]
  try {
    return map(value)
  } catch {
    return []
  }
}

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}

export function obj(value: unknown): Json {
  return isObject(value) ? value : {}
}

export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined
}

export function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined
}

/** Sum of the numbers among `values`, or undefined when none is a number (so "not reported" stays distinct from 0). */
export function sum(...values: unknown[]): number | undefined {
  const nums = values.map(num).filter((n) => n !== undefined)
  return nums.length === 0 ? undefined : nums.reduce((a, b) => a + b, 0)
}

/** What one report says, each count undefined when it was not reported. */
export type Reported = { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; cost?: number; model?: string }

/**
 * A usage event with only the fields that were reported; none when no count or cost was. `totals`: the fields
 * the CLI reports as session running totals (see UsageEvent), kept only for fields present.
 */
export function usage(r: Reported, totals: readonly UsageField[] = []): AgentEvent[] {
  const event: UsageEvent = { type: "usage" }
  if (r.input !== undefined) event.inputTokens = r.input
  if (r.output !== undefined) event.outputTokens = r.output
  if (r.cacheRead !== undefined && r.cacheRead > 0) event.cacheReadTokens = r.cacheRead
  if (r.cacheWrite !== undefined && r.cacheWrite > 0) event.cacheWriteTokens = r.cacheWrite
  if (r.cost !== undefined) event.costUsd = r.cost
  if (Object.keys(event).length === 1) return []
  if (r.model) event.model = r.model
  const present = totals.filter((f) => (f === "cost" ? r.cost !== undefined : r.input !== undefined || r.output !== undefined))
  if (present.length > 0) event.totals = present
  return [event]
}

export function text(value: unknown): AgentEvent[] {
  const t = str(value)
  return t === undefined || t.trim() === "" ? [] : [{ type: "text", text: t }]
}

export function tool(name: string, input?: unknown): AgentEvent {
  const detail = toolDetail(input)
  return detail === undefined ? { type: "tool", name } : { type: "tool", name, detail }
}

// The argument that says what a tool call does, across the CLIs' spellings, in order of preference.
const DETAIL_KEYS = [
  "command",
  "cmd",
  "file_path",
  "filePath",
  "absolute_path",
  "notebook_path",
  "path",
  "dir_path",
  "pattern",
  "url",
  "query",
  "description",
  "prompt",
]
const DETAIL_MAX = 120

/** A short one-line summary of a tool's input: the command or file it works on, else nothing. */
export function toolDetail(input: unknown): string | undefined {
  let raw: unknown = input
  if (typeof raw === "string") {
    try {
      raw = JSON.parse(raw) // some CLIs send arguments as a JSON string
    } catch {
      return oneLine(raw as string)
    }
  }
  if (Array.isArray(raw) && raw.every((part) => typeof part === "string")) return oneLine(raw.join(" "))
  const o = obj(raw)
  for (const key of DETAIL_KEYS) {
    const v = o[key]
    if (typeof v === "string" && v.trim() !== "") return oneLine(v)
    if (Array.isArray(v) && v.length > 0 && v.every((part) => typeof part === "string")) return oneLine(v.join(" "))
  }
  return undefined
}

export function oneLine(s: string): string | undefined {
  const flat = s.replace(/\s+/g, " ").trim()
  if (flat === "") return undefined
  return flat.length > DETAIL_MAX ? `${flat.slice(0, DETAIL_MAX - 1)}…` : flat
}

export function withModel(model: string | undefined, flag: string): string[] {
  return model === undefined || model === "" ? [] : [flag, model]
}
