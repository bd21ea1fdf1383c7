// Landing on a shared project (docs/FLEET.md, "Git across machines"): the target that counts is the remote's,
// and every machine's merges into it take turns under one lock per project, remote and target (a PostgreSQL
// advisory lock: lib/store/postgres/landing-lock.ts). Under it:
//
//   fetch the remote's target (R) → the branch's head in R already: merged, never again → the merge made
//   off-tree on R → the check (flow.yaml `verify`) on it → the claim still held → the intent journaled →
//   `git push <remote> <merge>:refs/heads/<target>` (a fast-forward of R, or refused)
//
// A push refused because someone pushed meanwhile (a person, a CI job: outside flow, which the lock does not
// hold back) is built again on what the remote holds now, a bounded number of times. After the push, this
// clone's target (and the person's checkout of it) follows by the journaled two-tree move when it can do so
// as a fast-forward; otherwise it is left alone, and said once. The check runs on one candidate at a time
// (no speculative depth as in lib/landing/merge-queue.ts): the lock is held while it runs.
import { join } from "node:path"
import { moveTarget } from "./checkout-move"
import { branchHeads, GIT_ENV, isAncestor, makeMergeCommit } from "../git/git"
import { killPoint } from "../cli/kill-point"
import { checkFailure, checkInScratch, type QueueOptions, scratchFolder, type Verdict } from "./merge-queue"
import { fetchBranch, pushTarget, remoteUrl } from "../git/remote-git"
import type { Claim } from "../store/store"
import type { LandingLock } from "../store/open"
import { timed } from "../cli/trace"
import { run } from "../cli/proc"
import * as clock from "../cli/clock"

/** How many times a merge is built again after a push refused because the remote's target moved. */
export const PUSH_ROUNDS = 5

export type RemoteCandidate = {
  taskId: string
  branch: string
  /** the branch's commit that lands */
  head: string
  message: string
  /** undefined: no claim to hold (a run in files, a recovery) */
  claim?: Claim
  /** journals the intent right before the push (R: the remote target it is built on); its journal entry's id */
  intent: (before: string) => Promise<number>
}

/** A verdict, with `empty` on a branch that was in the remote's target before anything of it was merged. */
export type RemoteVerdict = Verdict & { empty?: boolean }

export class RemoteLanding {
  /** the scratch worktrees of checks being torn down and removed */
  private cleanups = new Set<Promise<unknown>>()
  /** the landings of this run into this target, one after another */
  private line: Promise<unknown> = Promise.resolve()
  /** what was said of this clone's target not following the remote's (said once) */
  private said = false

  constructor(
    private o: QueueOptions,
    private remote: string,
    private lock: LandingLock,
  ) {
    scratchFolder(o)
  }

  /** Resolves once every check's scratch worktree is torn down and removed. */
  async idle(): Promise<void> {
    while (this.cleanups.size) await Promise.allSettled([...this.cleanups])
  }

  /**
   * Lands `c` into the remote's target: the verdict the merge queue would give, said of the remote. This run's
   * landings into one target wait for each other here, so a run holds (and polls for) one lock at a time.
   */
  land(c: RemoteCandidate): Promise<RemoteVerdict> {
    const turn = this.line.then(() => this.landNow(c))
    this.line = turn.catch(() => {})
    return turn
  }

  private async landNow(c: RemoteCandidate): Promise<RemoteVerdict> {
    const { repo, target, signal } = this.o
    const url = await remoteUrl(repo, this.remote)
    const release = await timed(c.taskId, "lock", () => this.lock(`${url}\n${target}`, signal))
    if (!release) return { ok: false, kind: "stopped", reason: "the run was stopped" }
    try {
      for (let round = 1; ; round++) {
        const v = await this.round(c)
        if (!("retry" in v)) return v
        if (round >= PUSH_ROUNDS)
          return {
            ok: false,
            kind: "refused",
            reason: `${target} of ${this.remote} moved under each of ${PUSH_ROUNDS} pushes (someone pushes to it outside flow): ${v.retry}`,
          }
        this.o.bus.emit({ type: "notice", taskId: c.taskId, text: `${target} of ${this.remote} moved meanwhile: the merge is built again on it` })
      }
    } finally {
      await release()
    }
  }

  /** One fetch, merge, check and push; `retry` when the push was refused because the remote's target moved. */
  private async round(c: RemoteCandidate): Promise<RemoteVerdict | { retry: string }> {
    const { repo, target, signal, author, keepOut } = this.o
    // In turn with the worktrees' changes, as a task's worktree fetches (remote-git.ts, remoteWorktree).
    const before = await timed(c.taskId, "fetch", () => this.o.serial(() => fetchBranch(repo, this.remote, target)))
    if (!before) return { ok: false, kind: "refused", reason: `the remote '${this.remote}' of ${repo} has no branch '${target}'` }
    if (await isAncestor(repo, c.head, before)) {
      // Merged already (by this run killed after its push, or by the attempt this one took over): never twice.
      await this.follow(c.taskId, before)
      return { ok: true, commit: before, alreadyMerged: true, empty: await onFirstParents(repo, c.head, before) }
    }
    const m = await timed(c.taskId, "build", () => makeMergeCommit(repo, before, c.head, c.message, author, keepOut))
    // A task another run took over is not this run's to fail: its merge there is why this one conflicts.
    if (!m.ok) return (await this.lost(c, before)) ?? { ok: false, kind: "conflict", conflicts: m.conflicts, reason: m.reason }
    if (m.dropped.length)
      this.o.bus.emit({
        type: "notice",
        taskId: c.taskId,
        text: `${c.branch} changes ${m.dropped.slice(0, 5).join(", ")}, flow's own file${m.dropped.length === 1 ? "" : "s"}: left out of the merge (flow's state never comes from a task's branch)`,
      })
    if (this.o.check) {
      const check = this.o.check
      this.o.bus.emit({ type: "queue", taskId: c.taskId, target, state: "checking", position: 1 })
      const path = join(this.o.scratchDir, `${c.taskId}-${clock.systemNow().toString(36)}`)
      const { result, setup } = await checkInScratch(this.o, c.taskId, m.commit, path, check, signal, this.cleanups)
      if (signal.aborted) return { ok: false, kind: "stopped", reason: "the run was stopped" }
      if (!result.ok) {
        const gone = await this.lost(c, before)
        if (gone) return gone
        const failed = checkFailure(check, result, setup)
        this.o.bus.emit({ type: "queue", taskId: c.taskId, target, state: "failed", position: 1, reason: failed.reason, seconds: result.seconds })
        return failed
      }
      this.o.bus.emit({ type: "queue", taskId: c.taskId, target, state: "passed", position: 1, seconds: result.seconds })
    }
    // Nothing of a task another run took over leaves this machine.
    const gone = await this.lost(c, before)
    if (gone) return gone
    await c.intent(before)
    const pushed = await timed(c.taskId, "push", () => pushTarget(repo, this.remote, m.commit, target))
    if (!pushed.ok) return pushed.rejected ? { retry: pushed.detail } : { ok: false, kind: "refused", reason: pushed.detail }
    killPoint("after-push")
    await this.follow(c.taskId, m.commit)
    return { ok: true, commit: m.commit, alreadyMerged: false }
  }

  /**
   * Whether `c`'s claim is lost (its lease lapsed, and another run may have taken the task over): then a
   * "stopped" verdict, said as what happened, with the other attempt's merge when the remote's target `tip`
   * holds it. Not a failure: the task is the other run's, and nothing of this attempt lands.
   */
  private async lost(c: RemoteCandidate, tip: string): Promise<RemoteVerdict | undefined> {
    if (!c.claim || (await c.claim.holds())) return undefined
    const { repo, target } = this.o
    const merged = await mergeOnFirstParents(repo, tip, c.message)
    const reason = `this run no longer holds ${c.taskId} (its claim of attempt ${c.claim.attempt} lapsed)${
      merged ? `, and another run landed it: ${target} of ${this.remote} has its merge (${merged.slice(0, 12)})` : ""
    }; nothing of this attempt lands`
    this.o.bus.emit({ type: "notice", taskId: c.taskId, text: reason })
    return { ok: false, kind: "stopped", reason }
  }

  /**
   * This clone's target follows the remote's to `commit` when that is a fast-forward of it, by the journaled
   * two-tree move (the person's checkout with it, when nothing of theirs is in the way). Otherwise it is left
   * as it is: said once.
   */
  private async follow(taskId: string, commit: string): Promise<void> {
    const { repo, target } = this.o
    const [local] = await branchHeads(repo, target)
    if (local === commit) return
    const why =
      local && (await isAncestor(repo, local, commit))
        ? await moveTarget(repo, target, local, commit, `flow: ${target} follows ${this.remote}`, this.o.moves).then((r) => (r.ok ? undefined : r.detail))
        : `${target} in ${repo} holds commits that ${this.remote}'s lacks`
    if (why === undefined || this.said) return
    this.said = true
    this.o.bus.emit({
      type: "notice",
      taskId,
      text: `${target} in ${repo} does not follow ${this.remote}/${target} (${why}); flow leaves it alone: 'git pull' brings it up to date`,
    })
  }
}

/** The merge on `tip`'s first-parent line whose subject is `subject` (flow's merge of a task's branch), if any. */
async function mergeOnFirstParents(repo: string, tip: string, subject: string): Promise<string | undefined> {
  const r = await run(["git", "log", "--first-parent", "--merges", "--max-count=10000", "--format=%H %s", tip], { cwd: repo, env: GIT_ENV })
  return r.stdout
    .split("\n")
    .find((l) => l.slice(l.indexOf(" ") + 1) === subject)
    ?.split(" ")[0]
}

/** Whether `commit` is on `tip`'s first-parent line (the target's own history: a branch that never left it). */
async function onFirstParents(repo: string, commit: string, tip: string): Promise<boolean> {
  const r = await run(["git", "rev-list", "--first-parent", "--max-count=10000", tip], { cwd: repo, env: GIT_ENV })
  return r.stdout.split("\n").includes(commit)
}
