import { parse } from "../lib/cli/args"
import { nowMs } from "../lib/cli/clock"
import { colours } from "../lib/terminal/colour"
import { STOP_SIGNALS, type Ctx } from "../lib/cli/context"
import { dashboardReport, readRuntime } from "../lib/dashboard/dashboard"
import { renderDashboard } from "../lib/dashboard/dashboard-render"
import { FlowError, usage } from "../lib/cli/errors"
import type { DashboardReport } from "../lib/model/json-shapes"
import { findProject, type Project } from "../lib/cli/project"
import { Screen } from "../lib/terminal/screen"
import { openStore } from "../lib/store/open"

export const meta = {
  usage: "flow dashboard [--interval <seconds>] [--once] [--json]",
  description: `A live status display: task counts by status, the running tasks (agent, time since started, step,
whether a 'flow run' is live for them), the last 10 completed tasks, and what waits for a person: questions,
checkpoints, blocked tasks (with the first line of their last note). On a terminal it redraws in place
every 10 seconds (and when the window is resized) until you press q or Ctrl-C; piped, or with --once, it
prints one snapshot without escape codes and exits (piped, no line is cut). If tasks.yaml turns invalid meanwhile, the error shows at the top over the last good data.
See docs/DASHBOARD.md.`,
  options: {
    interval: { type: "string", default: "10", arg: "seconds", help: "seconds between refreshes on a terminal (1 to 86400; default 10)" },
    once: { type: "boolean", help: "print one snapshot and exit, even on a terminal" },
    json: { type: "boolean", help: "print one snapshot as JSON and exit" },
  },
} as const

const MAX_INTERVAL = 86_400

/** Where no terminal says how wide the snapshot may be. */
const DEFAULT_WIDTH = 80

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const interval = Number(values.interval)
  // At most a day: a timer longer than 2^31 ms fires at once, over and over.
  if (!/^\d+(\.\d+)?$/.test(values.interval) || !(interval >= 1 && interval <= MAX_INTERVAL)) {
    throw usage(`--interval must be a number of seconds from 1 to ${MAX_INTERVAL} (was '${values.interval}')`, `usage: ${meta.usage}`)
  }
  const project = findProject(ctx)
  // Read before anything is drawn: a missing or invalid tasks.yaml at the start is exit 3, like flow list.
  const report = await snapshot(ctx, project)
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  if (!ctx.terminal || values.once) {
    // Piped, nothing is cut: a file or a pager has no width, and a cut line could lose the cost at its end.
    const width = ctx.terminal ? ctx.terminal.output.columns || Number(ctx.env.COLUMNS) || DEFAULT_WIDTH : Infinity
    ctx.stdout(`${renderDashboard(report, { width, colours: colours(ctx) }).join("\n")}\n`)
    return
  }
  await live(ctx, ctx.terminal, project, report, interval)
}

async function snapshot(ctx: Ctx, project: Project): Promise<DashboardReport> {
  const [{ data }, runtime] = await Promise.all([openStore(project).then((s) => s.read()), readRuntime(project)])
  return dashboardReport(project, data, runtime, nowMs(ctx.env))
}

/** Redraws every `interval` seconds and on resize until q, Ctrl-C or a stop signal; the terminal is always given back. */
async function live(ctx: Ctx, terminal: NonNullable<Ctx["terminal"]>, project: Project, first: DashboardReport, interval: number): Promise<void> {
  const screen = new Screen(terminal.input, terminal.output)
  let report = first
  let error: string | undefined
  const draw = () => {
    const { columns, rows } = screen.size()
    screen.draw(renderDashboard(report, { width: columns, height: rows, colours: colours(ctx), intervalSeconds: interval, error }))
  }
  let reading = false
  const refresh = async () => {
    if (reading) return // a slow read (a busy state database) is not stacked up
    reading = true
    try {
      report = await snapshot(ctx, project)
      error = undefined
    } catch (e) {
      if (!(e instanceof FlowError)) throw e
      error = e.message
    } finally {
      reading = false
    }
    draw()
  }
  const stop = Promise.withResolvers<void>()
  const leave = () => stop.resolve()
  const close = () => screen.close()
  process.on("exit", close) // whatever ends the process, the terminal is given back
  for (const s of STOP_SIGNALS) process.on(s, leave) // a viewer closed is not a failure: exit 0, like q
  // In raw mode Ctrl-C is a key, not a signal.
  screen.open((key) => (key.name === "ctrl-c" || (key.name === "char" && (key.char === "q" || key.char === "Q"))) && leave(), draw)
  const timer = setInterval(() => refresh().catch((e) => stop.reject(e)), interval * 1000)
  try {
    draw()
    await stop.promise
  } finally {
    clearInterval(timer)
    for (const s of STOP_SIGNALS) process.off(s, leave)
    process.off("exit", close)
    screen.close()
  }
}
