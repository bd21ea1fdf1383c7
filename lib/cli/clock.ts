// Timestamps flow writes into tasks.yaml: ISO 8601 in UTC to the second, so they read the same on every
// machine and sort as text. And what "now" is, which tests may fix.
import { usage } from "./errors"

/** `date` as `2026-11-23T09:15:02Z`. */
export function isoSeconds(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z")
}

/** Milliseconds since the epoch of an ISO 8601 timestamp with a zone, or undefined when it is not one. */
export function parseTimestamp(text: unknown): number | undefined {
  // Date.parse reads a zoneless timestamp as local time; a hand-written one without a zone is refused
  // rather than guessed.
  if (typeof text !== "string" || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(text)) return undefined
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * The time now in milliseconds since the epoch. FLOW_NOW (an ISO 8601 timestamp with a zone) fixes it, so
 * that output saying "3m ago" can be compared whole in tests; it is a test hook, not a user setting.
 */
export function nowMs(env: Record<string, string | undefined>): number {
  if (env.FLOW_NOW === undefined) return Date.now()
  const fixed = parseTimestamp(env.FLOW_NOW)
  if (fixed === undefined) throw usage(`FLOW_NOW must be an ISO 8601 timestamp with a zone (was '${env.FLOW_NOW}')`, "unset FLOW_NOW; it only exists for tests")
  return fixed
}
