// Time comes from one clock (lib/cli/clock.ts): a "now" read anywhere else is how the suite came to pass on
// one day only (a time a test passed in, compared with the real date inside). This test keeps it so, and
// checks the clock's own promises.
import { expect, test } from "bun:test"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { isoSeconds, now, nowDate, nowMs, setClock } from "../lib/cli/clock"
import { clockTime, logLine } from "../lib/run/log"
import { ROOT } from "./helpers"

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`
    if (statSync(join(ROOT, rel)).isDirectory()) return sources(rel)
    return /\.ts$/.test(name) && !name.endsWith(".d.ts") ? [rel] : []
  })
}

test("no code but lib/cli/clock.ts reads the time of day", () => {
  const reads = ["flow.ts", ...sources("commands"), ...sources("lib")]
    .filter((f) => f !== "lib/cli/clock.ts")
    .flatMap((f) =>
      readFileSync(join(ROOT, f), "utf8")
        .split("\n")
        .flatMap((line, i) => (/\bDate\.now\(\)|\bnew Date\(\s*\)/.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
    )
  expect(reads).toEqual([])
})

test("a clock set by a test is the one every reader sees, and is put back", () => {
  const at = Date.parse("2031-02-03T04:05:06.789Z")
  const restore = setClock(() => at)
  try {
    expect([now(), nowDate().getTime(), isoSeconds(), nowMs({})]).toEqual([at, at, "2031-02-03T04:05:06Z", at])
    // FLOW_NOW still wins for the commands that take it (a snapshot compared whole).
    expect(nowMs({ FLOW_NOW: "2030-01-01T00:00:00Z" })).toBe(Date.parse("2030-01-01T00:00:00Z"))
  } finally {
    restore()
  }
  expect(Math.abs(now() - Date.now())).toBeLessThan(60_000)
})

test("a time shown is read against the moment given, in the local zone, on any day", () => {
  // Built from local fields, so the expectation holds in every time zone the suite runs in.
  const at = new Date(2031, 1, 3, 23, 50, 7)
  const later = new Date(2031, 1, 3, 23, 59, 0)
  const tomorrow = new Date(2031, 1, 4, 0, 30, 0)
  expect(clockTime(later, at)).toBe("23:59")
  expect(clockTime(tomorrow, at)).toBe("Feb 4 00:30")
  const restore = setClock(() => Date.parse("1999-01-01T00:00:00Z")) // a clock far off changes nothing here
  try {
    expect(logLine({ type: "parked", taskId: "a", agent: "claude-1", until: tomorrow.toISOString(), reason: "limit" }, at)).toBe(
      "23:50:07 a: claude-1's usage limit is reached (limit): parked until Feb 4 00:30, then resumed in the same session",
    )
  } finally {
    restore()
  }
})
