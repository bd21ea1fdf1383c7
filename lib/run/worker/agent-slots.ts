// Which agents are at work now (docs/RUN.md, "Scheduling"). A finished task waiting in the merge queue frees its
// agent: the agent takes the next task while the check runs, so the queue's latency no longer throttles how
// many tasks the agents get through. A failed check or a conflict sends the task back to the same agent (its
// session): the fix round takes a slot again, first in line, when that agent is free and `agents: N` allows.

type Waiter = { agent: string; taskId: string; resolve: (ok: boolean) => void }

export class AgentSlots {
  /** agent name → the task it works on now */
  readonly busy = new Map<string, string>()
  private readonly waiters: Waiter[] = []

  /** `wake`: the scheduler looks again (a slot came free). */
  constructor(
    private readonly parallelism: number,
    private readonly wake: () => void,
  ) {}

  /** True when `agent` may take a new task: not at work, and no fix round of its own waits for it. */
  free(agent: string): boolean {
    return !this.busy.has(agent) && !this.waiters.some((w) => w.agent === agent)
  }

  /** How many agents work now: the run's cap counts these, not the tasks waiting in the merge queue. */
  get working(): number {
    return this.busy.size
  }

  take(agent: string, taskId: string): void {
    this.busy.set(agent, taskId)
  }

  /** `agent` stops working on `taskId` (it waits in the merge queue, or its worker ended). */
  release(agent: string, taskId: string): void {
    if (this.busy.get(agent) !== taskId) return
    this.busy.delete(agent)
    this.serve()
    this.wake()
  }

  /**
   * A fix round of `taskId`: waits until `agent` is free and the cap allows, and takes it, before any new task.
   * False: the run stopped meanwhile.
   */
  retake(agent: string, taskId: string, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false)
    if (this.busy.get(agent) === taskId) return Promise.resolve(true)
    return new Promise((resolve) => {
      const waiter: Waiter = { agent, taskId, resolve }
      const stop = () => {
        const i = this.waiters.indexOf(waiter)
        if (i >= 0) this.waiters.splice(i, 1)
        resolve(false)
      }
      waiter.resolve = (ok) => {
        signal.removeEventListener("abort", stop)
        resolve(ok)
      }
      signal.addEventListener("abort", stop, { once: true })
      this.waiters.push(waiter)
      this.serve()
    })
  }

  private serve(): void {
    for (const w of [...this.waiters]) {
      if (this.busy.has(w.agent) || this.busy.size >= this.parallelism) continue
      this.waiters.splice(this.waiters.indexOf(w), 1)
      this.busy.set(w.agent, w.taskId)
      w.resolve(true)
    }
  }
}
