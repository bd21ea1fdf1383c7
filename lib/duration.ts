// Durations on the command line (`--timeout 30m`): whole numbers with a unit, largest unit first.
import { usage } from "./errors"

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 } as const
const ORDER = Object.keys(UNIT_MS)

/** `90s`, `30m`, `2h`, `1d`, `1h30m` → milliseconds; anything else is a usage error that shows the forms. */
export function parseDuration(text: string): number {
  const parts = [...text.trim().matchAll(/(\d+)([a-z]+)/gy)]
  const consumed = parts.map((p) => p[0]).join("")
  const units = parts.map((p) => p[2])
  const ordered = units.every((u, i) => ORDER.includes(u) && (i === 0 || ORDER.indexOf(u) > ORDER.indexOf(units[i - 1])))
  if (parts.length === 0 || consumed !== text.trim() || !ordered) {
    throw usage(`'${text}' is not a duration`, "write a number with a unit (s, m, h, d), largest first: 90s, 30m, 2h, 1d, 1h30m")
  }
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNIT_MS[p[2] as keyof typeof UNIT_MS], 0)
}

/** 0 → `0s`, 5_400_000 → `1h30m`: the inverse of parseDuration, dropping anything below a second. */
export function formatDuration(ms: number): string {
  let rest = Math.floor(ms / 1000) * 1000
  let out = ""
  for (const [unit, size] of Object.entries(UNIT_MS)) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`
      rest %= size
    }
  }
  return out || "0s"
}
