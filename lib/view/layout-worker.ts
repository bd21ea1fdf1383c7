// The ELK engine on its own thread (a Bun Worker started by lib/view/layout-engine.ts). In a fresh process
// elkjs costs about a second before its first layout is as fast as the later ones (loading its 1.5 MB of
// code compiled from Java, its static set-up, then the JIT); on its own thread that happens while the main
// thread reads tasks.yaml and answers the page, and the server never stops answering during a layout.
// Messages in: {id, graph}; out: {id, graph} (laid out) or {id, error}. A warm-up graph is laid out first.
import ELK, { type ElkNode } from "elkjs/lib/elk.bundled.js"

declare const self: Worker

// Importing elk.bundled.js installs ELK's own worker dispatcher as this thread's onmessage; ours replaces it
// below. (In the main thread the same handler made Bun take the process for a worker that never exits.)
const elk = new ELK()

export type EngineRequest = { id: number; graph: ElkNode }
export type EngineReply = { id: number; graph: ElkNode } | { id: number; error: string }

// A small graph with what the real ones use (a compound node, edges in and out of it, INCLUDE_CHILDREN):
// ELK sets up its classes on the first layout, so the first real band does not pay for it.
const WARM_UP: ElkNode = {
  id: "warm-up",
  layoutOptions: {
    "elk.algorithm": "layered",
    "elk.direction": "RIGHT",
    "elk.hierarchyHandling": "INCLUDE_CHILDREN",
    "elk.json.shapeCoords": "ROOT",
    "elk.json.edgeCoords": "ROOT",
  },
  children: [
    { id: "a", width: 200, height: 48 },
    {
      id: "p",
      layoutOptions: { "elk.padding": "[top=30,left=12,bottom=12,right=12]" },
      children: [
        { id: "p1", width: 200, height: 48 },
        { id: "p2", width: 200, height: 48 },
      ],
    },
    { id: "b", width: 200, height: 48 },
  ],
  edges: [
    { id: "a>p1", sources: ["a"], targets: ["p1"] },
    { id: "p1>p2", sources: ["p1"], targets: ["p2"] },
    { id: "p>b", sources: ["p"], targets: ["b"] },
    { id: "a>b", sources: ["a"], targets: ["b"] },
  ],
}
const warmedUp: Promise<unknown> = elk.layout(WARM_UP).catch(() => undefined)

// One layout at a time, in the order asked, after the warm-up.
let chain: Promise<unknown> = warmedUp
self.onmessage = (e: MessageEvent<EngineRequest>) => {
  const { id, graph } = e.data
  chain = chain.then(async () => {
    try {
      self.postMessage({ id, graph: await elk.layout(graph) } satisfies EngineReply)
    } catch (err) {
      self.postMessage({ id, error: err instanceof Error ? err.message : String(err) } satisfies EngineReply)
    }
  })
}
