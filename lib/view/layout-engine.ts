// The main thread's side of the ELK worker (lib/view/layout-worker.ts): one worker per process, started on
// the first use or early by `startLayoutEngine` (flow view calls it before reading tasks.yaml, so ELK loads
// and warms up meanwhile). The worker keeps the process alive only while a layout is pending.
import type { ElkNode } from "elkjs/lib/elk.bundled.js"
import type { EngineReply, EngineRequest } from "./layout-worker"

type Pending = { resolve: (graph: ElkNode) => void; reject: (e: Error) => void }

let worker: Worker | undefined
let nextId = 0
const pending = new Map<number, Pending>()

function engine(): Worker {
  if (worker) return worker
  const w = new Worker(workerUrl())
  w.onmessage = (e: MessageEvent<EngineReply>) => {
    const reply = e.data
    const waiting = pending.get(reply.id)
    if (!waiting) return
    pending.delete(reply.id)
    if (pending.size === 0) w.unref()
    if ("error" in reply) waiting.reject(new Error(`elkjs could not lay out the graph: ${reply.error}`))
    else waiting.resolve(reply.graph)
  }
  w.onerror = (e: ErrorEvent) => {
    // The worker is gone: fail what waits (the page shows it and asks again), start a new one next time.
    const failure = new Error(`the layout worker failed: ${e.message}`)
    for (const waiting of pending.values()) waiting.reject(failure)
    pending.clear()
    if (worker === w) worker = undefined
    w.terminate()
  }
  w.unref()
  worker = w
  return w
}

/**
 * Where the worker's code is. From source, beside this file. In dist/flow (`bun build --compile` with the
 * worker as a second entry point, package.json) this module is part of the bundle, whose URL is the
 * binary's root, and the worker is embedded under its path from the repository root.
 */
function workerUrl(): string {
  const bundled = !import.meta.file.startsWith("layout-engine.")
  return new URL(bundled ? "./lib/view/layout-worker.ts" : "./layout-worker.ts", import.meta.url).href
}

/** Starts the worker now (loading ELK and laying out a small graph to warm it up), without waiting. */
export function startLayoutEngine(): void {
  engine()
}

/** ELK's layout of `graph`, computed in the worker; requests are laid out one at a time, in order. */
export function layoutGraph(graph: ElkNode): Promise<ElkNode> {
  const w = engine()
  const id = nextId++
  const { promise, resolve, reject } = Promise.withResolvers<ElkNode>()
  pending.set(id, { resolve, reject })
  w.ref()
  w.postMessage({ id, graph } satisfies EngineRequest)
  return promise
}

/** Ends the worker (flow view's Ctrl-C must not wait for a layout): what waits fails; a later layout starts a new one. */
export function stopLayoutEngine(): void {
  const w = worker
  if (!w) return
  worker = undefined
  const stopped = new Error("the layout was stopped: flow view is ending")
  for (const waiting of pending.values()) waiting.reject(stopped)
  pending.clear()
  w.terminate()
}
