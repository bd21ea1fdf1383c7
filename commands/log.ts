import { readFileSync } from "node:fs"
import { parse } from "../lib/cli/args"
import { STOP_SIGNALS, type Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject, type Project } from "../lib/cli/project"
import { requireTask } from "../lib/graph/task-lookup"
import { indexTasks } from "../lib/model/task-index"
import { isTaskLine, KEEP_RUNS, readLines, runIsLive, runLogs, type RunLogFile } from "../lib/run/run-log"
import { openStore } from "../lib/store/open"

export const meta = {
  usage: "flow log [--follow] [<task_id>]",
  description: `Prints the log of the latest 'flow run': the lines the run prints without its full screen
(--headless), kept in .flow/runs/<run-id>.log whether or not the screen was shown (the last ${KEEP_RUNS} runs
are kept). With <task_id>, that task's lines from every kept run, oldest first, each run under a
'==> <run-id> <==' header. With --follow, it goes on printing the latest run's new lines while that run
is alive (every line, or the task's), and ends when the run ends; Ctrl-C leaves earlier.`,
  options: {
    follow: { type: "boolean", short: "f", help: "keep printing the latest run's lines until that run ends" },
  },
} as const

/** How often --follow looks for new lines and whether the run is still alive. */
const FOLLOW_MS = 200

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  const taskId = positionals[0]
  // A typo gets the closest id, as every command taking a task does.
  if (taskId !== undefined) requireTask(indexTasks((await (await openStore(project)).read()).data), taskId)
  const logs = runLogs(project)
  const latest = logs.at(-1)
  if (!latest) {
    ctx.stdout("No run has been logged yet: each 'flow run' keeps its log in .flow/runs/.\n")
    return
  }
  const keep = (line: string) => taskId === undefined || isTaskLine(line, taskId)
  let offset = 0
  if (taskId === undefined) {
    const text = readFileSync(latest.file, "utf8")
    offset = Buffer.byteLength(text)
    ctx.stdout(text)
  } else {
    for (const log of logs) {
      const { lines, next } = readLines(log.file, 0)
      if (log === latest) offset = next
      const mine = lines.filter(keep)
      if (mine.length > 0) ctx.stdout(`==> ${log.id} <==\n${mine.join("\n")}\n`)
      else if (log === latest && values.follow && runIsLive(project, log)) ctx.stdout(`==> ${log.id} <==\n`)
    }
  }
  if (values.follow) await follow(ctx, project, latest, offset, keep)
}

/** Prints the lines added to `log` from `offset` on until its run is no longer alive (or a stop signal). */
async function follow(ctx: Ctx, project: Project, log: RunLogFile, offset: number, keep: (line: string) => boolean): Promise<void> {
  const stop = Promise.withResolvers<void>()
  const leave = () => stop.resolve()
  // A viewer closed is not a failure: exit 0, as the dashboard does.
  for (const s of STOP_SIGNALS) process.on(s, leave)
  let stopped = false
  void stop.promise.then(() => (stopped = true))
  try {
    let at = offset
    for (;;) {
      // Alive is asked before reading: lines written before the run ended are all read after it.
      const live = runIsLive(project, log)
      const { lines, next } = readLines(log.file, at)
      at = next
      const shown = lines.filter(keep)
      if (shown.length > 0) ctx.stdout(`${shown.join("\n")}\n`)
      if (!live || stopped) break
      await Promise.race([Bun.sleep(FOLLOW_MS), stop.promise])
    }
    // A run killed mid-line leaves a last line without its newline.
    const rest = readFileSync(log.file).subarray(at).toString("utf8")
    if (!stopped && rest !== "" && keep(rest)) ctx.stdout(`${rest}\n`)
  } finally {
    for (const s of STOP_SIGNALS) process.off(s, leave)
  }
}
