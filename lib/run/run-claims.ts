// A run's claims on a shared graph (docs/FLEET.md, "Claims, leases, fencing"): the tasks this run holds, their
// lease renewed every third of it, and what happens when a renewal finds one gone: another run took the task
// over after this run's lease lapsed (this machine was paused, or cut off from the database, for longer than
// the lease), so its worker is stopped and nothing of that attempt lands (its writes are fenced anyway).
import { type Claim, type Claims, type Fence, StoreUnreachable } from "../store/store"
import { RUN_ID } from "../cli/run-id"
import type { RunSettings } from "./settings"
import { liveRuns } from "../state/state"
import { storeSetting } from "../store/setting"

export class RunClaims {
  private held = new Map<string, Claim>()
  private timer: ReturnType<typeof setInterval>
  private renewing: Promise<void> = Promise.resolve()
  private unreachableSaid = false

  /** `onLost`: a task this run held was taken over by another run. */
  constructor(
    private readonly claims: Claims,
    private readonly s: RunSettings,
    private readonly onLost: (taskId: string) => void,
  ) {
    // A run of this machine killed meanwhile (another clone's) is seen at the same pace.
    this.timer = setInterval(
      () => {
        this.renewing = this.renewing.then(() => this.renew()).then(() => this.freeDead())
      },
      Math.max(200, Math.floor(s.leaseMs / 3)),
    )
    this.timer.unref()
  }

  /** Claims the first of `candidates` another run does not hold, for `agent`: its claim, or undefined. */
  async take(candidates: readonly string[], agent: string): Promise<Claim | undefined> {
    const fence = await this.claims.claim(candidates, { run: RUN_ID, agent }, this.s.leaseMs)
    if (!fence) return undefined
    const claim = this.claimOf(fence)
    this.held.set(fence.taskId, claim)
    return claim
  }

  /**
   * Whether this run is the oldest live run of the graph, whatever the machine: the one that tells people of
   * what no run owns, a checkpoint waiting (docs/NOTIFY.md, "Fleet mode"). When the database cannot say, it
   * tells: said twice rather than never.
   */
  async eldest(): Promise<boolean> {
    try {
      const [first] = await liveRuns(this.s.project)
      if (first === undefined) return true
      const setting = await storeSetting(this.s.project)
      return first.pid === process.pid && setting.kind === "postgres" && first.machine === setting.machine
    } catch {
      return true
    }
  }

  /** The claim this run holds on a task (a parked task's, handed to its next agent). */
  get(taskId: string): Claim | undefined {
    return this.held.get(taskId)
  }

  /** Gives a task back (its work stopped here or ended): any run may take it at once. */
  async release(taskId: string): Promise<void> {
    const claim = this.held.get(taskId)
    if (!claim) return
    this.held.delete(taskId)
    await this.claims.release(claim).catch(() => {}) // unreachable: the lease lapses instead
  }

  /**
   * Gives back the claims of this machine's runs proved dead (killed outright: their process is gone), so that
   * their tasks are taken up now rather than after their lease: a run restarted where one was killed resumes
   * its tasks at once, as in files. Said once per dead run.
   */
  async freeDead(): Promise<void> {
    const dead = await this.claims.freeDead(RUN_ID).catch(() => []) // unreachable: their leases lapse instead
    // Its merge queues' lead and checks too (docs/RUN.md, "Merge queue"): taken up now, not after their leases.
    for (const d of dead) await this.s.db.queue.freeRun(d.run).catch(() => {})
    for (const d of dead)
      this.s.bus.emit({
        type: "notice",
        text: `a run of this machine died (pid ${d.pid}) holding ${d.tasks.join(", ")}: taken up now, without waiting out its lease`,
      })
  }

  /** How many tasks other runs hold now. */
  othersLive(): Promise<number> {
    return this.claims.othersLive(RUN_ID)
  }

  /** The run ends: renewals stop and every claim goes back. */
  async close(): Promise<void> {
    clearInterval(this.timer)
    await this.renewing
    await Promise.all([...this.held.keys()].map((id) => this.release(id)))
  }

  private claimOf(fence: Fence): Claim {
    return { ...fence, holds: () => this.claims.holds(fence) }
  }

  private async renew(): Promise<void> {
    // The claims held as the renewal starts, and only those: each was committed before (take adds a claim once
    // its statement returned), so one the renewal leaves out is one whose row moved on. A claim taken while the
    // statement runs may commit too late for it to see: the next renewal judges it (judged by a set read after
    // the statement, it was taken for lost: issue 31). A claim this run no longer holds is never renewed.
    const mine = [...this.held.values()]
    let renewed: Set<string>
    try {
      renewed = await this.claims.renew(mine, this.s.leaseMs)
    } catch (e) {
      // Cut off from the database: the agents go on; their outcomes are written when it is back, unless the
      // lease lapsed meanwhile and another run took a task over (found at the next renewal that works). The
      // run names the database once (orchestrator.ts): not again here.
      const why = e instanceof StoreUnreachable ? "the database does not answer" : (e as Error).message.split("\n")[0]
      if (!this.unreachableSaid)
        this.s.bus.emit({ type: "notice", text: `cannot renew this run's claims: ${why}; trying again every ${Math.round(this.s.leaseMs / 3000)} s` })
      this.unreachableSaid = true
      return
    }
    if (this.unreachableSaid) this.s.bus.emit({ type: "notice", text: "the database answers again: claims renewed" })
    this.unreachableSaid = false
    for (const claim of mine) {
      const id = claim.taskId
      // Given back meanwhile (its worker ended), or given back and taken again: not this renewal's to judge.
      if (renewed.has(id) || this.held.get(id) !== claim) continue
      this.held.delete(id)
      this.s.bus.emit({
        type: "notice",
        taskId: id,
        text: `another run took this task over (attempt ${claim.attempt}'s lease lapsed): its agent here is stopped, nothing of this attempt lands`,
      })
      this.onLost(id)
    }
  }
}
