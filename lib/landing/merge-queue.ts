// The merge queue: one per target, one engine for files and fleets (docs/RUN.md, "Merge queue"). Its line lives
// in the run state (lib/state/queue-rows.ts: .flow/state.db, or the shared database every machine's runs use),
// so that nothing of it is in one process's memory: any run may lead it (build the window and move the target,
// lib/landing/queue-lead.ts), and any run with a free slot takes its checks (lib/landing/queue-check.ts). This
// class is one run's part in one queue: it hands its tasks' branches over and waits for their verdicts, leads
// when the lead is free, runs the checks it claims, and tells the run what its candidates go through.
//
// Candidates line up in the order their tasks finish. Each one's merge is built on the one ahead of it (the
// head's on the target), and checked at once, several at a time; the target moves, by compare-and-swap, only
// from the head and only to a merge whose check passed. A failure counts for a candidate only once everything
// ahead of it has landed; until then it is rebuilt without the one that failed and checked again.
import { StoreUnreachable } from "../store/store"
import type { Fence } from "../store/store"
import type { CheckClaim, QueueRow } from "../state/queue-rows"
import { checkFailure, runClaimedCheck, scratchFolder } from "./queue-check"
import { type LeadStep, leadStep, type Sweep } from "./queue-lead"
import { timed } from "../cli/trace"
import type { LandingEvent, QueueExit, QueueOptions, QueueState, Verdict } from "./queue-types"
import { serviceLevels } from "./queue-report"
import { BISECTED } from "../queue-batch/batches"
import type { Check, CheckResult } from "../worktree/command"

export type { LandingEvent, LandingEvents, QueueOptions, QueueState, Verdict } from "./queue-types"

/** A branch handed to the queue: its commit that lands; `fence`, its run's claim of the task (a fleet's); `since`, when its work was finished (performance.now()). */
export type Submission = { taskId: string; branch: string; head: string; message: string; fence?: Fence; since?: number }

/** How often a landing that waits for the person (a change, an operation or a lock in the way) is tried again. */
const WAIT_RETRY_MS = 1_000
/** How soon a run tries for the lead again when another run held it. */
const LEAD_RETRY_MS = 250
/**
 * The longest a queue's lead holds without a renewal (shorter when flow.yaml's `lease` is): a lead's step takes
 * seconds and renews it meanwhile, so a machine paused or gone mid-step holds the line up no longer than this.
 */
const LEAD_LEASE_MS = 10_000
/**
 * How often a fleet's run looks at its queues unasked: a notification covers every change but a lease that
 * lapses (a machine paused or gone), which only time shows.
 */
const POLL_MS = 1_000
/** How often a fleet's lead sweeps the published refs nothing holds when its line empties (beyond its first step's sweep). */
const SWEEP_MS = 30_000

type Waiting = { taskId: string; resolve: (v: Verdict) => void; since: number; seen: string; checkingSaid: string; bisected?: number }

export class MergeQueue {
  /** this run's candidates waiting for their verdicts, by row id */
  private mine = new Map<number, Waiting>()
  /** the checks running here, by row id */
  private checks = new Map<number, { claim: CheckClaim; stop: AbortController }>()
  private pumping = false
  private again = false
  /** the line, as a lead step reads it, when this run's last lead step changed nothing (leadView) */
  private stepped?: string
  /** when this run's lead last swept the published refs (performance.now()); undefined: not yet */
  private swept?: number
  /** the landed merges this clone's target follows, in turn, after their verdicts (a fleet's) */
  private follows: { commit: string; taskId: string }[] = []
  /** what the head waits for, as last said (said once, not every retry) and as last seen */
  private waitSaid = ""
  private waitSeen = ""
  /** the task whose wait is recorded (waits) */
  private waiting?: string
  /** the trees of commits the queue built on, by commit */
  private trees = new Map<string, string>()
  /** the scratch worktrees being torn down and removed, and this run's rows being withdrawn */
  private cleanups = new Set<Promise<unknown>>()
  private poll?: ReturnType<typeof setInterval>
  private followSaid = false
  /** how this run's candidates left the queue, for its report at the run's end */
  private exits: (QueueExit & { taskId: string })[] = []

  constructor(private o: QueueOptions) {
    scratchFolder(o)
    if (o.into.shared) {
      this.poll = setInterval(() => void this.pump(), POLL_MS)
      this.poll.unref?.()
    }
    o.signal.addEventListener("abort", () => this.stop(), { once: true })
  }

  /** Queues a finished branch; resolves when it is merged, or why it was not. */
  async submit(c: Submission): Promise<Verdict> {
    if (this.o.signal.aborted) return { ok: false, kind: "stopped", reason: "the run was stopped" }
    const { promise, resolve } = Promise.withResolvers<Verdict>()
    const row = await this.o.state.queue.submit({
      queue: this.o.into.key,
      target: this.o.target,
      task_id: c.taskId,
      branch: c.branch,
      head: c.head,
      message: c.message,
      run_id: this.o.run,
      attempt: c.fence?.attempt ?? null,
    })
    this.mine.set(row.id, { taskId: c.taskId, resolve, since: c.since ?? performance.now(), seen: "", checkingSaid: "" })
    if (this.o.signal.aborted) this.stop()
    void this.pump()
    return promise
  }

  /** The command of the check every merge of this queue must pass; null when none is configured. */
  get check(): string | null {
    return this.o.check?.label ?? null
  }

  /** Repository-relative paths of flow's own files, which no merge of this queue takes from a branch. */
  get keepOut(): readonly string[] {
    return this.o.keepOut
  }

  /** Looks at the queue again (another process changed it: a fleet's notification). */
  wake(): void {
    void this.pump()
  }

  /** Resolves once every check's scratch worktree is torn down and removed, and withdrawn rows are gone. */
  async idle(): Promise<void> {
    while (this.cleanups.size) await Promise.allSettled([...this.cleanups])
  }

  /** The run is over: the queue is looked at no more (what is left in line is other runs'); its report is said. */
  close(): void {
    clearInterval(this.poll)
    const levels = serviceLevels(this.exits)
    this.exits = []
    if (levels) this.o.bus.emit({ type: "queue-report", target: this.o.target, ...levels })
  }

  private async pump(): Promise<void> {
    if (this.pumping) return void (this.again = true)
    this.pumping = true
    try {
      do {
        this.again = false
        await this.step()
      } while (this.again && !this.o.signal.aborted)
    } catch (e) {
      // The database away, or a failure of this machine's git: its candidates wait, and it tries again soon.
      if (!(e instanceof StoreUnreachable) && !this.o.signal.aborted)
        this.o.bus.emit({
          type: "notice",
          text: `the merge queue into ${this.o.target} failed for a moment (${(e as Error).message.split("\n")[0]}): trying again`,
        })
      this.later(WAIT_RETRY_MS)
    } finally {
      this.pumping = false
    }
    if (this.again && !this.o.signal.aborted) void this.pump()
  }

  private later(ms: number): void {
    if (!this.o.signal.aborted) setTimeout(() => void this.pump(), ms).unref?.()
  }

  /** One look at the queue: what this run's candidates went through, their verdicts, the lead's step, checks to take. */
  private async step(): Promise<void> {
    if (this.o.signal.aborted) return
    const rows = this.o.state.queue
    const line = await rows.line(this.o.into.key)
    this.observe(line)
    await this.resolve(line)
    const sweep = this.sweepNow()
    // A step that changed nothing needs no other until the line changes in what a lead step reads (a fleet's
    // machines each look every second, and each of those steps holds the one lead for a fetch and a read).
    const seen = leadView(line)
    if ((line.length > 0 || this.swept === undefined) && (sweep !== "no" || seen !== this.stepped)) {
      const leaseMs = Math.min(this.o.leaseMs, LEAD_LEASE_MS)
      const lead = await rows.lead(this.o.into.key, this.o.run, leaseMs)
      if (!lead) this.later(LEAD_RETRY_MS)
      else {
        const renew = setInterval(() => void rows.renewLead(lead, leaseMs).catch(() => {}), Math.max(100, Math.floor(leaseMs / 3)))
        try {
          const s = await timed("queue", "lead-step", () => leadStep(this.o, lead, this.trees, sweep))
          this.stepped = s.changed || s.wait ? undefined : seen
          // Only a sweep made counts: an "if-empty" step whose line did not empty leaves the next one to try.
          if (s.swept) this.swept = performance.now()
          this.background(this.o.into.drop(s.drop))
          if (s.changed) this.again = true
          this.waitFor(s.wait)
        } catch (e) {
          if (e instanceof StoreUnreachable || this.o.signal.aborted) throw e
          // A git failure here is not one candidate's fault: the head leaves with why, and the line goes on.
          await this.refuseHead(lead, e as Error)
        } finally {
          clearInterval(renew)
          await rows.release(lead).catch(() => {})
        }
      }
    }
    await this.claimChecks()
  }

  /** Whether this step of the lead's sweeps the published refs nothing holds: at its first, then now and again. */
  private sweepNow(): Sweep {
    if (!this.o.into.shared) return "no"
    if (this.swept === undefined) return "now"
    return performance.now() - this.swept >= SWEEP_MS ? "if-empty" : "no"
  }

  /** Work that needs no lead and no answer (a removal of refs, a follow): the run's end waits for it (idle). */
  private background(work: Promise<unknown>): void {
    const p: Promise<unknown> = work.catch(() => {}).finally(() => this.cleanups.delete(p))
    this.cleanups.add(p)
  }

  /**
   * This clone's target, and the person's checkout of it, follow the remote's where they can, one landing after
   * another, outside the queue's steps (a fetch and a checkout's move: the next check waits for neither). What
   * stops it is said once.
   */
  private follow(commit: string, taskId: string): void {
    this.follows.push({ commit, taskId })
    if (this.follows.length > 1) return
    this.background(
      (async () => {
        while (this.follows.length > 0) {
          const next = this.follows[0]
          const why = await this.o.into.follow(next.commit).catch((e) => (e as Error).message)
          this.follows.shift()
          if (why && !this.followSaid) {
            this.followSaid = true
            this.o.bus.emit({
              type: "notice",
              taskId: next.taskId,
              text: `${this.o.target} does not follow the shared remote's (${why}); flow leaves it alone: 'git pull' brings it up to date`,
            })
          }
        }
      })(),
    )
  }

  /** Tells the run what its candidates went through since the last look, and stops checks here that no longer count. */
  private observe(line: QueueRow[]): void {
    for (const [position, r] of line.entries()) {
      const w = this.mine.get(r.id)
      if (!w) continue
      const seen = `${r.gen}/${r.state}/${r.check_attempt}`
      if (seen === w.seen) continue
      const first = w.seen === ""
      const rebuilt = !first && !w.seen.startsWith(`${r.gen}/`)
      w.seen = seen
      const event = (state: QueueState, extra: { reason?: string; seconds?: number; onTopOf?: string[]; machine?: string } = {}) =>
        this.o.bus.emit({ type: "queue", taskId: r.task_id, target: this.o.target, state, position: position + 1, ...extra })
      // Joined the line, or built again (why, and on what, said once per build however far it got since).
      if (first || (rebuilt && r.reason)) event("waiting", r.reason ? { reason: r.reason } : {})
      if (rebuilt && r.reason?.includes(BISECTED)) w.bisected = (w.bisected ?? 0) + 1
      if (r.state === "waiting" || r.state === "ready" || r.state === "covered") continue
      // A check seen only once it ended (another machine's, quick) is said to have started too.
      const check = `${r.gen}/${r.check_attempt}`
      if (w.checkingSaid !== check && r.check_attempt > 0) {
        w.checkingSaid = check
        const machine = r.check_run !== this.o.run && r.check_machine ? r.check_machine : undefined
        event("checking", { onTopOf: r.ahead, ...(r.ahead.length ? { reason: `on top of ${r.ahead.join(", ")}` } : {}), ...(machine ? { machine } : {}) })
      }
      if (r.state === "passed") event("passed", r.seconds === null ? {} : { seconds: r.seconds })
      else if (r.state === "failed") event("failed", { ...(r.seconds === null ? {} : { seconds: r.seconds }), reason: r.reason ?? "the check failed" })
    }
    // A check here whose build was replaced, or whose lease another machine took over, is stopped at once.
    for (const [id, c] of this.checks) {
      const r = line.find((x) => x.id === id)
      if (!r || r.gen !== c.claim.gen || r.check_attempt !== c.claim.attempt || r.state !== "checking") c.stop.abort()
    }
  }

  /** Hands this run's candidates that left the line their verdicts, and forgets their rows. */
  private async resolve(line: QueueRow[]): Promise<void> {
    if (this.mine.size === 0) return
    const rows = this.o.state.queue
    const ended = await rows.ended(this.o.into.key, this.o.run)
    for (const r of ended) {
      const w = this.mine.get(r.id)
      if (!w) continue
      this.mine.delete(r.id)
      await this.finish(r, w)
    }
    if (ended.length) await rows.forget(ended.map((r) => r.id))
    // A row of this run's gone from the line without a verdict (deleted by hand): its landing stops.
    const unseen = [...this.mine.keys()].filter((id) => !line.some((r) => r.id === id))
    if (unseen.length === 0) return
    const now = await rows.line(this.o.into.key)
    const endedSince = await rows.ended(this.o.into.key, this.o.run)
    for (const id of unseen) {
      if (now.some((r) => r.id === id) || endedSince.some((r) => r.id === id)) continue
      const w = this.mine.get(id)!
      this.mine.delete(id)
      w.resolve({ ok: false, kind: "stopped", reason: "its candidate left the merge queue without a verdict" })
    }
  }

  private async finish(r: QueueRow, w: Waiting): Promise<void> {
    const verdict = (r.verdict ?? { ok: false, kind: "refused", reason: r.reason ?? "it left the merge queue" }) as Verdict
    const outcome = verdict.ok ? "landed" : verdict.kind === "stopped" ? "stopped" : "failed"
    if (verdict.ok && this.o.into.shared) this.follow(verdict.commit, w.taskId)
    // Its task lost to another run (the lead found its claim gone): said as such, not as a failure.
    if (!verdict.ok && verdict.kind === "stopped") this.o.bus.emit({ type: "notice", taskId: w.taskId, text: verdict.reason })
    // Its own failure, said unless its check's was (a conflict, a refusal are said here).
    if (!verdict.ok && verdict.kind !== "stopped" && !w.seen.startsWith(`${r.gen}/failed/`))
      this.o.bus.emit({ type: "queue", taskId: w.taskId, target: this.o.target, state: "failed", position: 1, reason: verdict.reason })
    const seconds = Math.round(performance.now() - w.since) / 1000
    const exit: QueueExit = { outcome, seconds, checks: r.checks, thrown: r.thrown, ...(w.bisected ? { bisections: w.bisected } : {}) }
    this.exits.push({ taskId: w.taskId, ...exit })
    this.o.bus.emit({ type: "queue-end", taskId: w.taskId, target: this.o.target, ...exit })
    w.resolve(verdict)
  }

  /** Takes checks while this run has a free slot. */
  private async claimChecks(): Promise<void> {
    const check = this.o.check
    if (!check) return
    while (this.checks.size < this.o.slots && !this.o.signal.aborted) {
      const claim = await this.o.state.queue.claimCheck(this.o.into.key, this.o.run, this.o.leaseMs)
      if (!claim) return
      const stop = new AbortController()
      this.checks.set(claim.id, { claim, stop })
      const other = claim.of.run !== this.o.run
      const of = claim.of.machine ?? "another run"
      const onTop = claim.ahead.length ? { reason: `on top of ${claim.ahead.join(", ")}` } : {}
      if (other) this.o.bus.emit({ type: "check", taskId: claim.task_id, target: this.o.target, of, state: "checking", ...onTop })
      const failed = (e: Error) => {
        const verdict = checkFailure(check, { ok: false, timedOut: false, code: 127, output: e.message, seconds: 0 })
        const reason = `the check could not start: ${e.message.split("\n")[0]}`
        return this.o.state.queue.checkDone(claim, { ok: false, seconds: 0, reason, verdict: { ...verdict, reason } }).then(() => undefined)
      }
      void runClaimedCheck(this.o, check, claim, stop, this.cleanups)
        .then(
          (done) => {
            if (done) this.o.bus.emit(checkResult(claim.task_id, this.o.target, check.label, done.result))
            if (done && other)
              this.o.bus.emit({
                type: "check",
                taskId: claim.task_id,
                target: this.o.target,
                of,
                state: done.outcome.ok ? "passed" : "failed",
                seconds: done.outcome.seconds,
                ...(done.outcome.reason ? { reason: done.outcome.reason } : {}),
              })
          },
          (e) => (stop.signal.aborted || this.o.signal.aborted ? undefined : failed(e as Error)),
        )
        .catch(() => {})
        .finally(() => {
          this.checks.delete(claim.id)
          void this.pump()
        })
    }
  }

  /** Waits for the person, said once: the head's move found something of theirs in the way. */
  private waitFor(wait: LeadStep["wait"]): void {
    if (!wait) {
      this.waitEnds()
      return
    }
    const { taskId, detail, lock, review, reviewer } = wait
    // A lock may be a person's git at work for a moment: said only when it is still there a try later.
    if (detail !== this.waitSaid && (!lock || detail === this.waitSeen)) {
      this.o.bus.emit({ type: "waiting", taskId, reason: `landing ${taskId}: ${detail}`, ...(review ? { review } : {}), ...(reviewer ? { reviewer } : {}) })
      this.o.waits.set(taskId, detail)
      this.waiting = taskId
    }
    if (!lock || detail === this.waitSeen) this.waitSaid = detail
    this.waitSeen = detail
    this.later(WAIT_RETRY_MS)
  }

  /** The head waits for the person no more (it moves, it is rebuilt, the run stops): the record goes. */
  private waitEnds(): void {
    this.waitSaid = this.waitSeen = ""
    if (this.waiting) this.o.waits.clear(this.waiting)
    this.waiting = undefined
  }

  private async refuseHead(lead: Parameters<typeof leadStep>[1], e: Error): Promise<void> {
    const [head] = await this.o.state.queue.line(this.o.into.key)
    if (!head) return
    const reason = `the merge queue failed: ${e.message}`
    await this.o.state.queue.apply(lead, [{ id: head.id, gen: head.gen, state: "left", reason, verdict: { ok: false, kind: "refused", reason } }])
    this.again = true
  }

  /** The run stops: every candidate of this run's is told so and withdrawn (the next run hands it over again). */
  private stop(): void {
    clearInterval(this.poll)
    for (const c of this.checks.values()) c.stop.abort()
    const ids = [...this.mine.keys()]
    for (const w of this.mine.values()) w.resolve({ ok: false, kind: "stopped", reason: "the run was stopped" })
    this.mine.clear()
    this.waitEnds()
    if (ids.length === 0) return
    const withdrawn = this.o.state.queue
      .forget(ids)
      .catch(() => {})
      .finally(() => this.cleanups.delete(withdrawn))
    this.cleanups.add(withdrawn)
  }
}

/**
 * What of `line` a lead's step acts on: each row's build and whether its check passed or failed (a check taken is
 * not: the lead builds and settles the same either way). The same view twice means the same step, a no-op.
 */
function leadView(line: readonly QueueRow[]): string {
  return line.map((r) => `${r.id}.${r.gen}.${r.state === "checking" ? "ready" : r.state}.${r.base}.${r.merge}`).join(" ")
}

/** The event of a check that ran on `taskId`'s merge: its command, verdict, exit code and output's tail. */
function checkResult(taskId: string, target: string, command: Check["label"], r: CheckResult): LandingEvent {
  const failed = r.ok ? undefined : r
  return {
    type: "check-result",
    taskId,
    target,
    command,
    passed: r.ok,
    code: r.ok ? 0 : failed!.timedOut ? null : failed!.code,
    timedOut: failed?.timedOut ?? false,
    seconds: r.seconds,
    output: r.output ?? "",
  }
}
