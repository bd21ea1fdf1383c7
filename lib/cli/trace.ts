/**
 * An opt-in timing trace of a run, for finding where a task's time goes (docs/PERFORMANCE.md, "Landing"):
 * FLOW_TRACE=<file> appends one line per timed phase, `<ms since the run's start> <task> <phase> <ms>`;
 * unset (always, but when measuring), it costs one comparison per phase. Phases: claim (the `assigned`
 * write), worktree, start (the `in_progress` write), agent, commit, land (handed to the queue until the
 * verdict), build, check, move (within land), done (the status write), cleanup (the worktree's removal);
 * at the run's end, `run cpu` with flow's own CPU time (its children's not included).
 */
import { appendFileSync } from "node:fs"

const file = process.env.FLOW_TRACE || undefined
const origin = performance.now()

/** Runs `fn`, and with FLOW_TRACE set, records how long it took as `phase` of `taskId`. */
export async function timed<T>(taskId: string, phase: string, fn: () => Promise<T>): Promise<T> {
  if (!file) return fn()
  const start = performance.now()
  try {
    return await fn()
  } finally {
    const now = performance.now()
    appendFileSync(file, `${(start - origin).toFixed(1)} ${taskId} ${phase} ${(now - start).toFixed(1)}\n`)
  }
}

/** With FLOW_TRACE set, records flow's own CPU time so far (user + system, ms) as the phase `cpu` of `run`. */
export function traceCpu(): void {
  if (!file) return
  const { user, system } = process.cpuUsage()
  appendFileSync(file, `${(performance.now() - origin).toFixed(1)} run cpu ${((user + system) / 1000).toFixed(1)}\n`)
}
