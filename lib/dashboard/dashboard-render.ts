// The dashboard as lines of a given width: every line fits (titles are clipped with "…", nothing wraps),
// so redrawing in place never scrolls the terminal. Colour comes from the caller's Colours (lib/terminal/colour.ts).
import { STATUS_COLOUR, type Colours } from "../terminal/colour"
import { formatDuration } from "../cli/duration"
import type { DashboardReport, LiveRun } from "../model/json-shapes"
import { ago } from "../terminal/question-format"
import { queueDetail } from "../landing/queue-report"
import { sanitize, textWidth, truncate } from "../terminal/screen"
import { TASK_STATUSES } from "../model/statuses"
import { oneLine } from "../graph/task-lines"
import { usageCell, usageText } from "../budget/usage"
import { budgetText } from "../budget/budget-report"
import { clockTime } from "../run/log"

export type RenderOptions = {
  /** Infinity: nothing is cut (piped output) */
  width: number
  /** at most this many lines: the last one then says there is more */
  height?: number
  colours: Colours
  /** set when the screen redraws itself: the header says how often and how to leave */
  intervalSeconds?: number
  /** why the last read failed; the report is then the last good one, and the screen says so */
  error?: string
}

/** A piece of a line, painted or not. */
type Part = string | readonly [text: string, paint: (s: string) => string]

const BAR_WIDTH = 20
const GAP = "  "

/** The dashboard's lines, each at most `width` columns wide. */
export function renderDashboard(r: DashboardReport, o: RenderOptions): string[] {
  const c = o.colours
  const w = Math.max(1, o.width)
  const out = [
    ...headerLines(r, o, w),
    "",
    ...countLines(r, w, c),
    "",
    ...phaseLines(r, w, c),
    ...needsLines(r, w, c),
    "",
    ...runningLines(r, w, c),
    "",
    ...(r.queue.length > 0 ? [...queueLines(r, w, c), ""] : []),
    ...recentLines(r, w, c),
  ]
  // A line more than the screen holds would scroll it.
  if (o.height !== undefined && out.length > o.height)
    return [...out.slice(0, Math.max(0, o.height - 1)), fit([["… more below: enlarge the window", c.dim]], w)]
  return out
}

/** The project and the time of the report, after what the last read's failure was. */
function headerLines(r: DashboardReport, o: RenderOptions, w: number): string[] {
  const c = o.colours
  const out: string[] = []
  const time = new Date(Date.parse(r.at)).toTimeString().slice(0, 8)
  if (o.error) {
    out.push(fit([[`! ${oneLine(o.error)}`, c.red]], w))
    out.push(fit([[`! showing the data read at ${time}; fix the file and this clears at the next refresh`, c.red]], w))
  }
  const right = o.intervalSeconds === undefined ? `at ${time}` : `updated ${time}, every ${o.intervalSeconds}s; q quits`
  const left = `flow dashboard: ${r.project}`
  const room = w - textWidth(left) - textWidth(right)
  // Piped output is not cut (width Infinity): the time then follows the name.
  out.push(fit(room >= 2 && room !== Infinity ? [[left, c.bold], " ".repeat(room), [right, c.dim]] : [[left, c.bold], GAP, [right, c.dim]], w))
  return out
}

/** The tasks by status, with a bar of those done, and what the agents spent. */
function countLines(r: DashboardReport, w: number, c: Colours): string[] {
  const out: string[] = []
  const filled = r.counts.total === 0 ? 0 : Math.round((r.counts.done * BAR_WIDTH) / r.counts.total)
  out.push(
    fit(
      [
        ["Tasks", c.bold],
        `: ${r.counts.total} total, ${r.counts.percent_done}% done  `,
        ["█".repeat(filled), c.green],
        ["░".repeat(BAR_WIDTH - filled), c.dim],
      ],
      w,
    ),
  )
  out.push(
    ...pack(
      TASK_STATUSES.map((s) => [`${s} ${r.counts[s]}`, c[STATUS_COLOUR[s]]] as const),
      w,
    ),
  )
  // Only once an agent reported something: scripted and `command` agents report nothing.
  const spent = usageText(r.usage.total)
  const runBudget = budgetText(r.usage.budget)
  if (spent || runBudget) {
    const run = usageText(r.usage.run)
    const budget = runBudget ? `${spent ? "; " : ""}run budget: ${runBudget} in the last run` : ""
    out.push(fit([["Usage", c.bold], `: ${spent ? `${run ? `last run ${run}; ` : ""}all runs ${spent}` : ""}${budget}`], w))
  }
  return out
}

/** Where the plan stands: the header of each phase as `flow list` prints it, its tasks done and running. */
function phaseLines(r: DashboardReport, w: number, c: Colours): string[] {
  if (r.phases.length === 0) return []
  const rows = r.phases.map((p): Part[] => {
    const [label, title] = p.title.includes(": ") ? [p.title.slice(0, p.title.indexOf(": ") + 1), p.title.slice(p.title.indexOf(": ") + 2)] : [p.title, ""]
    return [label, title, [`${p.done}/${p.total} done`, p.done === p.total ? c.green : (s) => s], p.running > 0 ? [`${p.running} running`, c.yellow] : ""]
  })
  return [fit([["Phases", c.bold], ":"], w), ...table(rows, w, [false, false, true, false]), ""]
}

/** What waits for a person: the command to run for each, or nothing. */
function needsLines(r: DashboardReport, w: number, c: Colours): string[] {
  const out: string[] = []
  const needs = needsYou(r, c)
  if (needs.length === 0) out.push(fit([["Needs you", c.bold], ": nothing"], w))
  else {
    // The command first, so a narrow window clips the list of ids rather than what to run.
    const cw = Math.max(...needs.map(([command]) => textWidth(sanitize(command))))
    out.push(fit([["Needs you", c.bold], ":"], w))
    for (const [command, ...text] of needs) out.push(fit(["  ", [command, c.cyan], " ".repeat(cw - textWidth(sanitize(command))), GAP, ...text], w))
  }
  return out
}

/** The runs going on and their tasks: agent, time, step, whether live or parked, and spend. */
function runningLines(r: DashboardReport, w: number, c: Colours): string[] {
  const out: string[] = []
  const runs = r.runs ?? (r.run ? [r.run] : [])
  const run = runs.length ? ([runsText(runs), c.green] as const) : (["no flow run", c.dim] as const)
  out.push(fit([[`Running (${r.running.length})`, c.bold], ": ", run], w))
  if (r.running.length === 0) out.push(fit([["  none", c.dim]], w))
  else {
    const rows = r.running.map((t): Part[] => [
      [t.id, c[STATUS_COLOUR[t.status]]],
      oneLine(t.title),
      t.agent ?? "-",
      t.seconds === null ? "-" : formatDuration(t.seconds * 1000),
      t.step ? `step ${t.step.current}/${t.step.total}` : "",
      t.parked_until
        ? [`parked until ${clockTime(new Date(t.parked_until), new Date(Date.parse(r.at)))}`, c.yellow]
        : t.live === null
          ? ""
          : t.live
            ? ["live", c.green]
            : ["stopped", c.yellow],
      // Spend beside the cap where the task has one (docs/BUDGETS.md), else the cost or tokens alone.
      budgetText(t.budget) ?? usageCell(t.usage),
    ])
    out.push(...table(rows, w, [false, false, false, true, false, false, true]))
  }
  return out
}

/** The tasks completed last, with how long ago. */
function recentLines(r: DashboardReport, w: number, c: Colours): string[] {
  const out: string[] = []
  out.push(fit([[`Recently completed (${r.recent.length})`, c.bold], ":"], w))
  if (r.recent.length === 0) out.push(fit([["  none yet", c.dim]], w))
  else {
    const now = Date.parse(r.at)
    out.push(
      ...table(
        r.recent.map((t) => [[t.id, c.green], oneLine(t.title), [ago(t.completed_at, now), c.dim]] as const),
        w,
        [false, false, true],
      ),
    )
  }
  return out
}

/** How many blocked tasks "Needs you" lists one by one; the rest are counted on one line. */
const BLOCKED_ROWS = 5

/** What waits for a person, a row each: the command to run, then what it is about. */
function needsYou(r: DashboardReport, c: Colours): [command: string, ...text: Part[]][] {
  const rows: [string, ...Part[]][] = []
  if (r.questions > 0) rows.push(["flow questions", `${plural(r.questions, "question")} waiting for an answer`])
  if (r.review.length > 0) rows.push(["flow view", `${plural(r.review.length, "checkpoint")} waiting for review: ${r.review.join(", ")}`])
  // A review's wait is a landing's too (the queue records it as one): told once, as the review it is.
  // An agent's review is not the person's to do until that agent leaves it undecided (its reviewer is then `person`).
  for (const v of r.reviews.filter((x) => x.reviewer === "person"))
    rows.push([`flow review ${v.task}`, ["review waits", c.yellow], `: ${v.title}: its merge passed its check; 'flow review ${v.task} approve' lands it`])
  for (const l of r.landing) if (!r.reviews.some((v) => v.task === l.task)) rows.push([`flow show ${l.task}`, ["landing waits", c.yellow], `: ${l.reason}`])
  const shown = r.blocked.length > BLOCKED_ROWS ? r.blocked.slice(0, BLOCKED_ROWS - 1) : r.blocked
  for (const b of shown) rows.push([`flow show ${b.id}`, ["blocked", c.red], `: ${b.note ?? "no note says why"}`])
  const more = r.blocked.length - shown.length
  if (more > 0) rows.push(["flow list blocked", `${more} more blocked task${more === 1 ? "" : "s"}`])
  return rows
}

/** Each target's merge queue: a candidate a line, in queue order, the failed ones last (docs/DASHBOARD.md). */
function queueLines(r: DashboardReport, w: number, c: Colours): string[] {
  const paint = { waiting: c.dim, checking: c.yellow, passed: c.green, failed: c.red }
  const out: string[] = []
  for (const q of r.queue) {
    out.push(
      fit(
        [
          [`Merge queue into ${q.target} (${q.candidates.length})`, c.bold],
          ": ",
          r.run ? ["checked before each merge", c.dim] : ["as the last run left it", c.dim],
        ],
        w,
      ),
    )
    const idWidth = Math.max(...q.candidates.map((x) => textWidth(sanitize(x.task))))
    for (const x of q.candidates) {
      out.push(
        fit(
          [
            "  ",
            [x.task, paint[x.state]],
            " ".repeat(idWidth - textWidth(sanitize(x.task))),
            GAP,
            [x.state.padEnd(8), paint[x.state]],
            GAP,
            queueDetail(x, q.target, Date.parse(r.at)),
          ],
          w,
        ).trimEnd(),
      )
    }
  }
  return out
}

/**
 * Rows as columns two spaces apart, indented two. The second column (the title) takes what the others leave
 * and is clipped; empty trailing columns are left out; `alignRight` marks columns padded on the left.
 */
function table(rows: readonly (readonly Part[])[], width: number, alignRight: readonly boolean[]): string[] {
  // Measured as drawn: a title from tasks.yaml may hold codes that `fit` drops.
  const text = (p: Part) => sanitize(typeof p === "string" ? p : p[0])
  const cols = rows[0].length
  const widths = Array.from({ length: cols }, (_, i) => Math.max(...rows.map((row) => textWidth(text(row[i])))))
  const used = widths.filter((cw, i) => i !== 1 && cw > 0).reduce((sum, cw) => sum + cw + GAP.length, 2 + GAP.length)
  const titleWidth = Math.min(widths[1], Math.max(8, width - used))
  return rows.map((row) => {
    const parts: Part[] = ["  "]
    row.forEach((p, i) => {
      if (widths[i] === 0) return
      const cw = i === 1 ? titleWidth : widths[i]
      const cell = i === 1 ? truncate(text(p), cw) : text(p)
      const pad = " ".repeat(Math.max(0, cw - textWidth(cell)))
      const last = row.slice(i + 1).every((_, j) => widths[i + 1 + j] === 0)
      if (i > 0) parts.push(GAP)
      if (alignRight[i]) parts.push(pad)
      parts.push(typeof p === "string" ? cell : [cell, p[1]])
      if (!alignRight[i] && !last) parts.push(pad)
    })
    return fit(parts, width).trimEnd()
  })
}

/** Items side by side two spaces apart, indented two, on as many lines as the width needs. */
function pack(items: readonly Part[], width: number): string[] {
  const lines: Part[][] = []
  let used = 0
  for (const item of items) {
    const iw = textWidth(typeof item === "string" ? item : item[0])
    if (lines.length === 0 || used + GAP.length + iw > width) {
      lines.push(["  ", item])
      used = 2 + iw
    } else {
      lines[lines.length - 1].push(GAP, item)
      used += GAP.length + iw
    }
  }
  return lines.map((parts) => fit(parts, width))
}

/** The parts joined and painted, cut to `width` columns with "…" when they are wider. */
function fit(parts: readonly Part[], width: number): string {
  // Titles come from tasks.yaml: an escape sequence in one must not reach the terminal.
  return truncate(sanitize(parts.map((p) => (typeof p === "string" ? p : p[0] === "" ? "" : p[1](p[0]))).join("")), width)
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`
}

/** `flow run live (pid 4242)`; on a shared project `flow run live on laptop-1 (pid 4242)`, `flow runs live on laptop-1 (pid 4242), laptop-2 (pid 77)`. */
function runsText(runs: readonly LiveRun[]): string {
  const where = runs.map((run) => `${run.machine ? `${run.machine} ` : ""}(pid ${run.pid})`).join(", ")
  return `flow run${runs.length > 1 ? "s" : ""} live ${runs[0].machine ? "on " : ""}${where}`
}
