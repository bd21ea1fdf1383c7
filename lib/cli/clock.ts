// Timestamps flow writes into tasks.yaml: ISO 8601 in UTC to the second, so they read the same on every
// machine and sort as text. And what "now" is, which tests may fix.
import { usage } from "./errors"

// Every "now" of lib/ and commands/ is read here (test/clock.test.ts fails on any other): a function that
// compares a time it was given with the real clock behind the caller's back shows one thing in a test and
// another on the day the test runs, the bug that made the suite pass on one day only.
let source: () => number = () => Date.now()

/** flow's wall clock, in milliseconds since the epoch. */
export function now(): number {
  return source()
}

/** flow's wall clock as a Date. */
export function nowDate(): Date {
  return new Date(source())
}

/**
 * The kernel's clock, for comparisons with the kernel's own timestamps (a file's mtime, a lock's age) and
 * for names that must not repeat; never for what a person is shown.
 */
export function systemNow(): number {
  return Date.now()
}

/** Replaces flow's wall clock (in-process tests); returns what puts the previous one back. */
export function setClock(clock: () => number): () => void {
  const before = source
  source = clock
  return () => {
    source = before
  }
}

/** `date` as `2026-11-23T09:15:02Z`. */
export function isoSeconds(date: Date = nowDate()): string {
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
  if (env.FLOW_NOW === undefined) return now()
  const fixed = parseTimestamp(env.FLOW_NOW)
  if (fixed === undefined) throw usage(`FLOW_NOW must be an ISO 8601 timestamp with a zone (was '${env.FLOW_NOW}')`, "unset FLOW_NOW; it only exists for tests")
  return fixed
}
