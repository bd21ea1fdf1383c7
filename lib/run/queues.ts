// The run's merge queues, one per repository and target branch, made on first use; none where the
// repository has no check configured (its merges go as before: `git merge` in the target's checkout).
import { join } from "node:path"
import { MergeQueue } from "./merge-queue"
import type { WorkerShared } from "./task-worker"
import { checkResolver } from "./verify"
import type { Workspace } from "./workspace"

const AUTHOR = { name: "flow", email: "flow@localhost" }
/** How many candidates of a queue are built and checked at once unless flow.yaml says (queue_depth). */
export const DEFAULT_DEPTH = 8

const resolvers = new WeakMap<WorkerShared, ReturnType<typeof checkResolver>>()

export function queueFor(shared: WorkerShared, ws: Workspace, serial: <T>(fn: () => Promise<T>) => Promise<T>): Promise<MergeQueue | undefined> {
  const s = shared.settings
  if (s.verify.length === 0) return Promise.resolve(undefined)
  const key = `${ws.repo}\0${ws.target}`
  let queue = shared.queues.get(key)
  if (!queue) {
    let resolve = resolvers.get(shared)
    if (!resolve) resolvers.set(shared, (resolve = checkResolver(s.project.dir, s.verify)))
    queue = resolve(ws.repo).then((check) => check && new MergeQueue({
      repo: ws.repo, target: ws.target, check, serial, bus: s.bus, signal: s.signal, author: AUTHOR, depth: s.queueDepth ?? DEFAULT_DEPTH,
      scratchDir: join(s.project.stateDir, "verify", Bun.hash(key).toString(36)),
    }))
    shared.queues.set(key, queue)
  }
  return queue
}
