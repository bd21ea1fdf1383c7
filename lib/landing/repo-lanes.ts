// One git operation on a repository's shared state (worktrees added and removed) at a time: git fails on its
// own locks otherwise. Clean-ups (a landed task's worktree removed, a check's scratch worktree) go `later`:
// they wait while anything else waits, so a task's next worktree is never made behind another's removal
// (on the path of every chain of dependent tasks; docs/PERFORMANCE.md, "Landing").

type Job = { fn: () => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void }
type Lane = { busy: boolean; now: Job[]; later: Job[] }

export class RepoLanes {
  private lanes = new Map<string, Lane>()
  private drained: (() => void)[] = []

  /** Runs `fn` once every earlier operation on `repo` has finished (and, `later`, none other waits). */
  run<T>(repo: string, fn: () => Promise<T>, later = false): Promise<T> {
    let lane = this.lanes.get(repo)
    if (!lane) this.lanes.set(repo, (lane = { busy: false, now: [], later: [] }))
    const queued = lane
    return new Promise<T>((resolve, reject) => {
      ;(later ? queued.later : queued.now).push({ fn, resolve: resolve as (v: unknown) => void, reject })
      this.next(queued)
    })
  }

  /** Resolves once no operation is running or waiting on any repository. */
  idle(): Promise<void> {
    if ([...this.lanes.values()].every((l) => !l.busy)) return Promise.resolve()
    return new Promise((resolve) => this.drained.push(resolve))
  }

  private next(lane: Lane): void {
    if (lane.busy) return
    const job = lane.now.shift() ?? lane.later.shift()
    if (!job) {
      if ([...this.lanes.values()].every((l) => !l.busy)) for (const resolve of this.drained.splice(0)) resolve()
      return
    }
    lane.busy = true
    job
      .fn()
      .then(job.resolve, job.reject)
      .finally(() => {
        lane.busy = false
        this.next(lane)
      })
  }
}
