// Durations on the command line (`--older-than 90m`) and in messages (`in progress for 3h 12m`).
import { usage } from "./errors"

const UNITS = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
] as const

const SHAPE = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/

/** What parseDuration accepts, as one pattern for schemas: the shape above, not empty and not zero. */
export const DURATION_PATTERN = /^(?=.*[1-9])(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?$/

/** Milliseconds of `90s`, `30m`, `2h`, `1d` or a combination in that order (`1h30m`); a usage error otherwise. */
export function parseDuration(text: string, label: string): number {
  const m = SHAPE.exec(text.trim())
  const ms = m ? UNITS.reduce((sum, [, unit], i) => sum + Number(m[i + 1] ?? 0) * unit, 0) : 0
  if (!m || text.trim() === "" || ms <= 0) {
    throw usage(`${label}: '${text}' is not a duration`, "write a positive whole number with a unit: 90s, 30m, 2h, 1d, or combined largest first, like 1h30m")
  }
  return ms
}

/** The two largest units of a duration, rounded down: `45s`, `1m 30s`, `3h 12m`, `2h`, `1d 4h`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  const counts = UNITS.map(([name, unit], i) => [name, Math.floor(((seconds * 1000) % (i === 0 ? Infinity : UNITS[i - 1][1])) / unit)] as const)
  const first = counts.findIndex(([, n]) => n > 0)
  if (first < 0) return "0s"
  return counts
    .slice(first, first + 2)
    .filter(([, n], i) => i === 0 || n > 0)
    .map(([name, n]) => `${n}${name}`)
    .join(" ")
}
