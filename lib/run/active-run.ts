// What one `flow run` holds while it goes: the workers it started, the agents at work, what it said already, and
// the services its workers share. The orchestrator's steps (orchestrator.ts, scheduler.ts) read and change it.
import { Landing } from "./landing"
import { AgentGroups, killAgentProcesses } from "./reaper"
import type { WorkerShared } from "./worker/worker-task"
import type { RunSettings } from "./settings"
import { Workspaces } from "../git/workspace"
import { SpaceWait } from "./space-wait"
import { SpendMeter } from "../budget/budget-meter"
import { reached, reachedText } from "../budget/budget"
import { Parking } from "../budget/parking"
import { RunClaims } from "./run-claims"
import { AgentSlots } from "./worker/agent-slots"
import type { Loaded } from "../store/store"

/** A wake-up call that is never lost: a notify before the wait makes the next wait return at once. */
export class Wake {
  private pending = false
  private resolve?: () => void

  notify(): void {
    this.pending = true
    this.resolve?.()
  }

  async wait(): Promise<void> {
    if (!this.pending) await new Promise<void>((r) => (this.resolve = r))
    this.pending = false
    this.resolve = undefined
  }
}

export class ActiveRun {
  readonly started = performance.now()
  readonly wake = new Wake()
  /** task id → its worker */
  readonly running = new Map<string, Promise<void>>()
  /** the agents at work, and the fix rounds waiting for theirs */
  readonly slots: AgentSlots
  /** checkpoints said to wait for review */
  readonly announced = new Set<string>()
  /** checkpoints shown as waiting while another run of the fleet tells people of them */
  readonly shownQuietly = new Set<string>()
  /** failed, and their failure could not be written: never taken again in this run */
  readonly leftAlone = new Set<string>()
  readonly workspaces: Workspaces
  readonly groups: AgentGroups
  readonly space: SpaceWait
  readonly meter: SpendMeter
  readonly parking: Parking
  readonly shared: WorkerShared
  readonly onStop: () => void
  /** a fleet worker's stop, for when its claim is lost */
  readonly stopOnLoss = new Map<string, AbortController>()
  /** the run's claims, on a shared graph (docs/FLEET.md) */
  readonly fleet?: RunClaims
  /** tasks an earlier run left in progress, resumed first (rule 7) */
  resumable = new Set<string>()
  /** the last valid tasks.yaml: a person's half-saved edit is waited out, not fatal */
  last!: Loaded
  waitingSaid = ""
  /** a shared graph's run found nothing to do and no other run at work: one more pass, on a fresh read, before it ends */
  settling = false
  invalidSaid = false
  awaySaid = false
  private readonly budgetSaid = new Set<string>()

  constructor(readonly s: RunSettings) {
    this.workspaces = new Workspaces(s.project, s.defaults)
    this.groups = new AgentGroups(s.db)
    this.space = new SpaceWait(s.bus, s.signal, [s.project.dir, s.project.stateDir], () => this.wake.notify())
    this.meter = new SpendMeter(s.bus, s.db)
    this.parking = new Parking(s.agents, () => this.wake.notify(), s.limitBackoffMs)
    this.slots = new AgentSlots(s.parallelism, () => this.wake.notify())
    this.shared = {
      meter: this.meter,
      parking: this.parking,
      settings: s,
      workspaces: this.workspaces,
      landing: new Landing(s),
      groups: this.groups,
      space: this.space,
      background: new Set(),
      publishQueues: new Map(),
      sessions: new Map(),
      slots: this.slots,
    }
    this.onStop = () => {
      this.wake.notify()
      // Agents' groups get SIGTERM, then SIGKILL after 3 s (cli/proc.ts); what they started in sessions of
      // their own would live on, and keep their pipes open so the run could not finish: it goes then too.
      setTimeout(() => killAgentProcesses(s.project.dir), 3_500).unref()
    }
    s.signal.addEventListener("abort", this.onStop)
    // A shared graph: this run is one of many peers, on this machine or others. It takes a task only by claiming
    // it in the database, holds it by a lease, and stops a worker whose task another run took over.
    this.fleet = s.store.claims ? new RunClaims(s.store.claims, s, (id) => this.stopOnLoss.get(id)?.abort()) : undefined
  }

  /** the run's cap, or an agent's, when spent: said once each */
  spent(scope: "run" | string): string | undefined {
    const s = this.s
    const r = scope === "run" ? reached(this.meter.total(), s.budget?.run ?? {}) : reached(this.meter.agent(scope), s.budget?.agent ?? {})
    if (!r) return undefined
    const why = scope === "run" ? `the run's budget is reached (${reachedText(r)})` : `agent ${scope}'s budget for this run is reached (${reachedText(r)})`
    if (!this.budgetSaid.has(scope)) {
      this.budgetSaid.add(scope)
      s.bus.emit({ type: "notice", text: `${why}: ${scope === "run" ? "nothing new starts; agents at work finish their turn" : "it takes no new task"}` })
    }
    return why
  }

  /** Says why the run waits, once for each new reason. */
  waiting(reason: string): void {
    if (reason !== this.waitingSaid) this.s.bus.emit({ type: "waiting", reason })
    this.waitingSaid = reason
  }
}
