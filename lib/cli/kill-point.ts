import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/**
 * A test hook, for the fault-injection tests only (test/run-crash.test.ts): FLOW_TEST_KILL_AT=<point> makes
 * the run SIGKILL itself at that point, as a crash would. Points: `after-merge` (the target moved, nothing
 * recorded yet), `after-read-tree` (the person's checkout follows the move, its branch not yet moved),
 * `before-done` (outcome journaled, tasks.yaml not yet written), `after-push` (a shared project's merge pushed to
 * the remote's target, its outcome not yet recorded: lib/landing/queue-lead.ts).
 */
export function killPoint(name: string): void {
  if (process.env.FLOW_TEST_KILL_AT === name) process.kill(process.pid, "SIGKILL")
}

/**
 * A test hook, for the fleet's fault tests only (test/fleet-queue.test.ts): FLOW_TEST_STOP_AT=<point> makes the
 * first process to reach that point (FLOW_TEST_STOP_ONCE: a folder it makes, so one process of all the machines
 * does) SIGSTOP itself there, as a machine paused would; the test continues it. Point: `before-push` (a queue's
 * lead about to move the target, lib/landing/queue-lead.ts). The folder gets the process's pid in `pid`.
 */
export function stopPoint(name: string): void {
  const once = process.env.FLOW_TEST_STOP_ONCE
  if (process.env.FLOW_TEST_STOP_AT !== name || !once) return
  try {
    mkdirSync(once)
  } catch {
    return // another process stopped there already
  }
  writeFileSync(join(once, "pid"), String(process.pid))
  process.kill(process.pid, "SIGSTOP")
}
