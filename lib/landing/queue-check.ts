// A merge candidate's check (docs/RUN.md, "Merge queue"): claimed from the queue's rows by any run with a free
// slot, run on the candidate's merge in a scratch worktree made ready as a task's (copies, ports, setup), its
// claim's lease renewed every third of it while it runs, and its result recorded only while the claim still
// holds: a check whose candidate was rebuilt meanwhile, or whose lease lapsed and was taken over by another
// machine, is stopped and reports into nothing.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { addScratchWorktree, listWorktrees, pruneWorktrees, removeWorktree, unlockWorktree } from "../git/git"
import type { CheckClaim, CheckOutcome } from "../state/queue-rows"
import { timed } from "../cli/trace"
import type { QueueOptions, Verdict } from "./queue-types"
import { runCheck, type Check, type CheckResult } from "../worktree/command"
import { prepareWorktree } from "../worktree/prepare"
import { teardownWorktree } from "../worktree/teardown"
import * as clock from "../cli/clock"

/** The file of a queue's scratch folder that names its repository: the next run's start clears what a killed run left there. */
export const SCRATCH_REPO = ".repo"

/** Makes the scratch folder of a queue, naming its repository. */
export function scratchFolder(o: Pick<QueueOptions, "scratchDir" | "repo">): void {
  mkdirSync(o.scratchDir, { recursive: true })
  writeFileSync(join(o.scratchDir, SCRATCH_REPO), o.repo)
}

/**
 * Runs a check this run claimed: the merge brought here (a fleet's, from the remote), checked in a scratch
 * worktree while its lease is renewed, and the result recorded. `stop` ends it (the run stops, or the candidate
 * was rebuilt); a renewal that finds the claim gone ends it too. The outcome, and whether it was recorded; none
 * when it was stopped; `result`, what the check itself said (its exit code and output).
 */
export async function runClaimedCheck(
  o: QueueOptions,
  check: Check,
  claim: CheckClaim,
  stop: AbortController,
  cleanups: Set<Promise<unknown>>,
): Promise<{ outcome: CheckOutcome; result: CheckResult; recorded: boolean } | undefined> {
  const heartbeat = setInterval(
    () =>
      void o.state.queue.renewCheck(claim, o.leaseMs).then(
        (held) => held || stop.abort(),
        () => {}, // the database away: the lease may lapse, and the result is then refused
      ),
    Math.max(200, Math.floor(o.leaseMs / 3)),
  )
  try {
    const signal = AbortSignal.any([stop.signal, o.signal])
    await timed(claim.task_id, "fetch-merge", () => o.into.fetch(claim.merge, claim.ref))
    const path = join(o.scratchDir, `${claim.task_id}-${claim.gen}-${claim.attempt}-${clock.systemNow().toString(36)}`)
    const { result, setup } = await checkInScratch(o, claim.task_id, claim.merge, path, check, signal, cleanups)
    if (signal.aborted) return undefined
    const outcome: CheckOutcome = result.ok
      ? { ok: true, seconds: result.seconds }
      : (() => {
          const verdict = checkFailure(check, result, setup)
          return { ok: false, seconds: result.seconds, reason: verdict.reason, verdict }
        })()
    return { outcome, result, recorded: await o.state.queue.checkDone(claim, outcome) }
  } finally {
    clearInterval(heartbeat)
  }
}

/**
 * What a killed run left in a queue's scratch folder: its checks' worktrees, removed, and their registrations.
 * A `git worktree add` killed half way leaves its registration locked ("initializing"), which `git worktree
 * prune` never removes: unlocked first. Called at a run's start, before any check (lib/run/recovery.ts).
 */
export async function clearScratch(repo: string, scratchDir: string): Promise<void> {
  const left = readdirSync(scratchDir).filter((name) => name !== SCRATCH_REPO)
  for (const name of left) rmSync(join(scratchDir, name), { recursive: true, force: true })
  const ours = (await listWorktrees(repo)).filter((w) => w.path.startsWith(`${scratchDir}/`))
  for (const w of ours) if (w.locked !== undefined) await unlockWorktree(repo, w.path)
  if (left.length || ours.length) await pruneWorktrees(repo)
}

/** What a check in a scratch worktree needs of a queue's options. */
export type ScratchCheck = Pick<QueueOptions, "repo" | "target" | "serial" | "checkEnv" | "track" | "worktree">

/**
 * Runs `check` on `commit` in a scratch worktree at `path`, made ready as a task's is (copies, ports, setup);
 * `setup`: it was the setup that failed. The worktree is torn down and removed afterwards, in `cleanups` (a
 * run's end waits for them); `stop` stops the setup and the check.
 */
export async function checkInScratch(
  o: ScratchCheck,
  taskId: string,
  commit: string,
  path: string,
  check: Check,
  stop: AbortSignal,
  cleanups: Set<Promise<unknown>>,
): Promise<{ result: CheckResult; setup?: boolean }> {
  const onGroup = (pid: number) => o.track(pid, taskId)
  let added = false
  try {
    await timed(taskId, "scratch", () => o.serial(() => addScratchWorktree(o.repo, path, commit)))
    added = true
    const env = { ...o.checkEnv, FLOW_TASK_ID: taskId, FLOW_TARGET: o.target }
    // The check's worktree gets the task's copies, setup and ports: it must see what the agent saw.
    const prep = await timed(taskId, "prepare", () => prepareWorktree(o.worktree, { taskId, ws: { repo: o.repo, path }, env, signal: stop, onGroup }))
    // Stopped (the run, or a rebuild) during the setup: the caller reports it into nothing.
    if (!prep.ok) return { setup: true, result: prep.failed ?? { ok: false, timedOut: false, code: 130, output: "", seconds: 0 } }
    try {
      return {
        result: await timed(taskId, "check", () => runCheck(check, path, { ...env, ...prep.env }, stop, { onGroup, confine: o.worktree.prepare.confine })),
      }
    } finally {
      prep.release()
    }
  } finally {
    // Torn down first (outside the repository's git queue: it may take a while). A removal git refuses
    // leaves the folder to go by hand, and its registration to a prune (else it stays listed, prunable,
    // until the next run's start).
    const cleanup = (added ? teardownWorktree(o.worktree, taskId, { repo: o.repo, path }, onGroup).catch(() => {}) : Promise.resolve())
      .then(() =>
        o.serial(
          () =>
            removeWorktree(o.repo, path, true).catch(async () => {
              rmSync(path, { recursive: true, force: true })
              await pruneWorktrees(o.repo)
            }),
          true,
        ),
      )
      .catch(() => {})
      .finally(() => cleanups.delete(cleanup))
    cleanups.add(cleanup)
  }
}

/** The verdict of a failed check (or of its worktree's setup, `setup`). */
export function checkFailure(check: Check, result: Extract<CheckResult, { ok: false }>, setup?: boolean): Extract<Verdict, { kind: "check" }> {
  const what = setup ? "the setup of the check's worktree" : "the check"
  const limit = setup ? "" : ` after ${Math.round(check.timeoutMs / 1000)} s`
  const reason = result.timedOut ? `${what} timed out${limit}` : `${what} failed (exit ${result.code})`
  return { ok: false, kind: "check", reason, output: result.output, timedOut: result.timedOut }
}
