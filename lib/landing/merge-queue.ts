// The verified merge queue: one per repository and target branch. Candidates line up in the order their
// tasks finish (dependency order: a dependent starts only after its dependencies merged). Each candidate's
// merge is built on the candidate ahead of it (the head's on the target itself) and checked at once, so
// several checks run together; the target moves, by compare-and-swap, only to a merge whose check passed,
// and only from the head. A failed or conflicting candidate leaves the queue and the candidates behind it
// are rebuilt on what is left (their earlier checks, built on it, are dropped). docs/RUN.md, "The merge queue".
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { moveTarget } from "./checkout-move"
import { addScratchWorktree, branchHeads, isAncestor, listWorktrees, makeMergeCommit, pruneWorktrees, removeWorktree, treeOf, unlockWorktree } from "../git/git"
import { killPoint } from "../cli/kill-point"
import type { MoveJournal } from "./merge-journal"
import { timed } from "../cli/trace"
import { runCheck, type Check, type CheckResult } from "../worktree/command"
import type { WorktreeSettings } from "../worktree/hooks"
import { prepareWorktree } from "../worktree/prepare"
import { teardownWorktree } from "../worktree/teardown"
import * as clock from "../cli/clock"

export type Verdict =
  | { ok: true; commit: string; alreadyMerged: boolean }
  | { ok: false; kind: "conflict"; conflicts: string[]; reason: string }
  | { ok: false; kind: "check"; reason: string; output: string; timedOut: boolean }
  | { ok: false; kind: "stopped"; reason: string }
  /** not the agent's to fix: no checkout to merge into, local changes in the way, a git failure */
  | { ok: false; kind: "refused"; reason: string }

export type QueueOptions = {
  repo: string
  target: string
  /** undefined: no check configured (a merge passes once it is built) */
  check: Check | undefined
  /** where scratch worktrees go; what a killed run left there is cleared at the next run's start (clearScratch) */
  scratchDir: string
  /** how many candidates are built and checked at once: 1 is a strictly serial queue */
  depth: number
  /** one git operation on the repository's worktree registrations at a time */
  serial: <T>(fn: () => Promise<T>, later?: boolean) => Promise<T>
  bus: LandingEvents
  signal: AbortSignal
  author: { name: string; email: string }
  /** repository-relative paths of flow's own files: a branch's changes to them are left out of its merge */
  keepOut: string[]
  /** where moves of a checked-out target are journaled (lib/landing/checkout-move.ts) */
  moves: MoveJournal
  /** the check's environment beyond the task's: FLOW_RUN_ID and FLOW_PROJECT, so the reaper knows its processes */
  checkEnv: Record<string, string>
  /** records each check's process group for the reaper, as agents' are (lib/run/reaper.ts) */
  track: (pid: number, taskId: string) => void
  /** where a landing that waits for the person is recorded while it waits (lib/landing/landing-waits.ts) */
  waits: { set: (taskId: string, reason: string) => void; clear: (taskId: string) => void }
  /** how each check's scratch worktree is made ready as a task's is (flow.yaml copy, ports, setup), and torn down */
  worktree: WorktreeSettings
}

/** A merge candidate's place in its target's queue (docs/RUN.md, "The merge queue"). */
export type QueueState = "waiting" | "checking" | "passed" | "failed"

/** What the landing machinery tells the run as it goes: lib/run/events.ts's stream carries these among the run's. */
export type LandingEvent =
  /** onTopOf: the candidates ahead whose merges the candidate's merge is built on (checking only; [] on the target) */
  | { type: "queue"; taskId: string; target: string; state: QueueState; position: number; reason?: string; seconds?: number; onTopOf?: string[] }
  /** taskId: the task that waits (a landing that waits for the person), when it is one task's */
  | { type: "waiting"; taskId?: string; reason: string }
  /** something the run or its landing did or found on its own: recovery at start, an unusable tasks.yaml, a skipped task */
  | { type: "notice"; taskId?: string; text: string }

export type LandingEvents = { emit(event: LandingEvent): void }

/** The file of a queue's scratch folder that names its repository: the next run's start clears what a killed run left there. */
export const SCRATCH_REPO = ".repo"

/** Makes the scratch folder of a queue (or of a remote landing), naming its repository. */
export function scratchFolder(o: Pick<QueueOptions, "scratchDir" | "repo">): void {
  mkdirSync(o.scratchDir, { recursive: true })
  writeFileSync(join(o.scratchDir, SCRATCH_REPO), o.repo)
}

type Entry = {
  taskId: string
  branch: string
  /** the branch's commit that lands: the one journaled when it was handed over */
  head: string
  message: string
  resolve: (v: Verdict) => void
  /** what its merge is built on, and the merge; undefined until (re)built */
  base?: string
  merge?: string
  state: QueueState
  verdict?: Verdict
  /** bumped on every rebuild: a check of an older build reports into nothing */
  gen: number
  abort?: AbortController
}

/** How often a move that waits for the person (a change, an operation or a lock in the way) is tried again. */
const WAIT_RETRY_MS = 1_000

export class MergeQueue {
  private entries: Entry[] = []
  private pumping = false
  private again = false
  /** what the head waits for, as last said (said once, not every retry) and as last seen */
  private waitSaid = ""
  private waitSeen = ""
  /** the task whose wait is recorded (waits) */
  private waiting?: string
  /** the trees of the merges this queue made, by commit: the next candidate's base is usually one */
  private trees = new Map<string, string>()
  /** the scratch worktrees being torn down and removed */
  private cleanups = new Set<Promise<unknown>>()

  constructor(private o: QueueOptions) {
    scratchFolder(o)
    o.signal.addEventListener(
      "abort",
      () => {
        for (const e of this.entries.splice(0)) {
          e.abort?.abort()
          e.resolve({ ok: false, kind: "stopped", reason: "the run was stopped" })
        }
        this.waitEnds()
      },
      { once: true },
    )
  }

  /** Queues a finished branch at `head` (the commit journaled); resolves when it is merged, or why it was not. */
  submit(taskId: string, branch: string, head: string, message: string): Promise<Verdict> {
    if (this.o.signal.aborted) return Promise.resolve({ ok: false, kind: "stopped", reason: "the run was stopped" })
    return new Promise((resolve) => {
      this.entries.push({ taskId, branch, head, message, resolve, state: "waiting", gen: 0 })
      this.emit(this.entries.at(-1)!, "waiting")
      void this.pump()
    })
  }

  /** Resolves once every check's scratch worktree is torn down and removed (a run's end waits for it). */
  async idle(): Promise<void> {
    while (this.cleanups.size) await Promise.allSettled([...this.cleanups])
  }

  /** The candidates in order, for tests and the screen. */
  snapshot(): { taskId: string; state: QueueState }[] {
    return this.entries.map((e) => ({ taskId: e.taskId, state: e.state }))
  }

  private async pump(): Promise<void> {
    if (this.pumping) return void (this.again = true)
    this.pumping = true
    try {
      do {
        this.again = false
        await this.settleHead()
        if (!this.o.signal.aborted) await this.build()
      } while (this.again && !this.o.signal.aborted)
    } catch (e) {
      // A git failure here is not one candidate's fault: fail the head so the run goes on and says why.
      const head = this.entries.shift()
      head?.resolve({ ok: false, kind: "refused", reason: `the merge queue failed: ${(e as Error).message}` })
      if (this.entries.length) this.again = true
    } finally {
      this.pumping = false
    }
    if (this.again) void this.pump()
  }

  /**
   * Lands the head while it has passed; hands a failed head its verdict. The passed candidates at the front
   * of the line, each built on the one ahead, move the target together: one move to the last one's merge (one
   * two-tree read of the person's checkout, one compare-and-swap) instead of one move per candidate.
   */
  private async settleHead(): Promise<void> {
    for (let head = this.entries[0]; head; head = this.entries[0]) {
      if (head.verdict && !head.verdict.ok) {
        this.entries.shift()
        head.resolve(head.verdict)
        continue
      }
      if (head.state !== "passed" || !head.base || !head.merge) return
      const batch = [head]
      for (const e of this.entries.slice(1)) {
        if (e.state !== "passed" || (e.verdict && !e.verdict.ok) || e.base !== batch.at(-1)!.merge) break
        batch.push(e)
      }
      const base = head.base
      const merge = batch.at(-1)!.merge!
      const what = batch.map((e) => e.message).join("; ")
      const moved =
        merge === base
          ? { ok: true as const }
          : await timed(head.taskId, "move", () => moveTarget(this.o.repo, this.o.target, base, merge, `flow: ${what}`, this.o.moves))
      if (!moved.ok && moved.why === "wait") {
        // A lock may be a person's git at work for a moment: said only when it is still there a try later.
        if (moved.detail !== this.waitSaid && (!moved.lock || moved.detail === this.waitSeen)) {
          this.o.bus.emit({ type: "waiting", taskId: head.taskId, reason: `landing ${head.taskId}: ${moved.detail}` })
          this.o.waits.set(head.taskId, moved.detail)
          this.waiting = head.taskId
        }
        if (!moved.lock || moved.detail === this.waitSeen) this.waitSaid = moved.detail
        this.waitSeen = moved.detail
        setTimeout(() => void this.pump(), WAIT_RETRY_MS).unref?.()
        return
      }
      this.waitEnds()
      if (!moved.ok) return this.invalidate() // someone else moved the target: rebuild everything on it
      if (merge !== base) killPoint("after-merge")
      this.entries.splice(0, batch.length)
      for (const e of batch) e.resolve({ ok: true, commit: e.merge!, alreadyMerged: e.merge === e.base })
    }
  }

  /** A commit's tree: known for the merges this queue made, asked of git once for any other. */
  private async treeOf(commit: string): Promise<string> {
    let tree = this.trees.get(commit)
    if (tree === undefined) this.trees.set(commit, (tree = await treeOf(this.o.repo, commit)))
    return tree
  }

  /** The head waits for the person no more (it moves, it is rebuilt, the run stops): the record goes. */
  private waitEnds(): void {
    this.waitSaid = this.waitSeen = ""
    if (this.waiting) this.o.waits.clear(this.waiting)
    this.waiting = undefined
  }

  /** Builds (or rebuilds) each candidate's merge on the one ahead of it and starts its check. */
  private async build(): Promise<void> {
    let [base] = await branchHeads(this.o.repo, this.o.target)
    if (!base) throw new Error(`the target branch '${this.o.target}' does not exist in ${this.o.repo}`)
    for (const [i, e] of this.entries.entries()) {
      if (e.base === base && e.merge) {
        // A candidate that failed on this base is out once it reaches the head: build the rest without it.
        if (!e.verdict || e.verdict.ok) base = e.merge
        continue
      }
      if (i >= this.o.depth) return
      this.reset(e, i === 0 ? undefined : `rebuilt on ${this.entries[i - 1].taskId}`)
      const on: string = base
      const m = await timed(e.taskId, "build", () => makeMergeCommit(this.o.repo, on, e.head, e.message, this.o.author, this.o.keepOut))
      // A branch in the target already merges to the target's own tree; only then is git asked whether it is
      // (the tree of a merge this queue made is known: on a target only flow moves, no question at all).
      if (m.ok && m.tree === (await this.treeOf(on)) && (await isAncestor(this.o.repo, e.head, on))) {
        // Merged already (a run killed after the move, before the status write): never a second merge.
        Object.assign(e, { base, merge: base, state: "passed" })
        this.emit(e, "passed", "already in the target")
        if (i === 0) this.again = true
        continue
      }
      if (m.ok) this.trees.set(m.commit, m.tree)
      if (!m.ok) {
        if (i > 0) return // it conflicts with a candidate ahead: wait for that one to land or leave
        e.verdict = { ok: false, kind: "conflict", conflicts: m.conflicts, reason: m.reason }
        this.emit(e, "failed", m.reason)
        this.again = true
        return
      }
      e.base = base
      e.merge = m.commit
      if (m.dropped.length && e.gen === 1)
        this.o.bus.emit({
          type: "notice",
          taskId: e.taskId,
          text: `${e.branch} changes ${m.dropped.slice(0, 5).join(", ")}, flow's own file${m.dropped.length === 1 ? "" : "s"}: left out of the merge (flow's state never comes from a task's branch)`,
        })
      if (this.o.check) this.startCheck(e, this.o.check, i > 0)
      else {
        e.state = "passed"
        if (i === 0) this.again = true
      }
      base = m.commit
    }
  }

  private startCheck(e: Entry, check: Check, speculative: boolean): void {
    const gen = e.gen
    const abort = new AbortController()
    e.abort = abort
    e.state = "checking"
    const ahead = this.entries.slice(0, this.entries.indexOf(e)).map((x) => x.taskId)
    this.emit(e, "checking", speculative ? `on top of ${ahead.join(", ")}` : undefined, undefined, ahead)
    const path = join(this.o.scratchDir, `${e.taskId}-${gen}-${clock.systemNow().toString(36)}`)
    const stop = AbortSignal.any([abort.signal, this.o.signal])
    void checkInScratch(this.o, e.taskId, e.merge!, path, check, stop, this.cleanups).then(
      ({ result, setup }) => {
        if (e.gen !== gen || stop.aborted) return
        e.state = result.ok ? "passed" : "failed"
        if (!result.ok) {
          e.verdict = checkFailure(check, result, setup)
          this.emit(e, "failed", e.verdict.reason, result.seconds)
        } else this.emit(e, "passed", undefined, result.seconds)
        void this.pump()
      },
      (err) => {
        if (e.gen !== gen || stop.aborted) return
        e.state = "failed"
        e.verdict = { ok: false, kind: "check", reason: `the check could not start: ${(err as Error).message}`, output: "", timedOut: false }
        this.emit(e, "failed", e.verdict.reason)
        void this.pump()
      },
    )
  }

  private reset(e: Entry, why?: string): void {
    e.abort?.abort()
    const wasBuilt = e.merge !== undefined
    Object.assign(e, { gen: e.gen + 1, base: undefined, merge: undefined, verdict: undefined, abort: undefined, state: "waiting" })
    if (wasBuilt) this.emit(e, "waiting", why)
  }

  private invalidate(): void {
    for (const e of this.entries) this.reset(e, "the target moved")
    this.again = true
  }

  private emit(e: Entry, state: QueueState, reason?: string, seconds?: number, onTopOf?: string[]): void {
    this.o.bus.emit({ type: "queue", taskId: e.taskId, target: this.o.target, state, position: this.entries.indexOf(e) + 1, reason, seconds, onTopOf })
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

/** What a check in a scratch worktree needs of a queue's options (the remote landing's check too: lib/landing/remote-landing.ts). */
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
      return { result: await timed(taskId, "check", () => runCheck(check, path, { ...env, ...prep.env }, stop, (pid) => o.track(pid, taskId))) }
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
