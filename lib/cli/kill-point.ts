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
