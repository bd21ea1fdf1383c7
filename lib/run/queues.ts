// The run's merge queues, one per repository and target branch, made on first use; none where the
// repository has no check configured (its merges go as before: `git merge` in the target's checkout).
import { join } from "node:path"
import { MergeQueue } from "./merge-queue"
import type { RunSettings } from "./settings"
import { checkResolver } from "./verify"
import type { Workspace } from "./workspace"

/** How many candidates of a queue are built and checked at once unless flow.yaml says (queue_depth). */
export const DEFAULT_DEPTH = 8

export class MergeQueues {
  private queues = new Map<string, Promise<MergeQueue | undefined>>()
  private checkOf: ReturnType<typeof checkResolver>

  constructor(
    private s: RunSettings,
    /** one git operation on a repository's worktrees at a time (lib/run/landing.ts) */
    private serial: <T>(repo: string, fn: () => Promise<T>) => Promise<T>,
    private author: { name: string; email: string },
  ) {
    this.checkOf = checkResolver(s.project.dir, s.verify)
  }

  /** The queue of the workspace's repository and target, or undefined when no check applies to it. */
  for(ws: Workspace): Promise<MergeQueue | undefined> {
    if (this.s.verify.length === 0) return Promise.resolve(undefined)
    const key = `${ws.repo}\0${ws.target}`
    let queue = this.queues.get(key)
    if (!queue) {
      const s = this.s
      queue = this.checkOf(ws.repo).then(
        (check) =>
          check &&
          new MergeQueue({
            repo: ws.repo,
            target: ws.target,
            check,
            serial: (fn) => this.serial(ws.repo, fn),
            bus: s.bus,
            signal: s.signal,
            author: this.author,
            depth: s.queueDepth ?? DEFAULT_DEPTH,
            scratchDir: join(s.project.stateDir, "verify", Bun.hash(key).toString(36)),
          }),
      )
      this.queues.set(key, queue)
    }
    return queue
  }
}
