// The floors of bench/view.ts, measured in the same run and the same Chromium as flow view:
// - a static page served by a tiny Bun.serve that draws the same boxes and arrows at precomputed
//   coordinates (no layout, no API call, no script but the paint timer): the least any inspector's first
//   paint costs;
// - ELK alone on the same graph in a fresh process (`bun bench/view-floor.ts elk <tasks.yaml>`): importing
//   elkjs and laying out the same bands, one after another, on the main thread;
// - for an update: the page's node turns blocked when the server, told by fs.watch of the folder, sends it
//   an event (no read, no check, no fetch).
import { watch } from "node:fs"
import { basename, dirname } from "node:path"
import type { Layout } from "../lib/view/layout"

/** The page: every box and arrow as SVG, fitted to the viewport; it reports its paint like flow view's page. */
export function staticPage(layout: Layout): string {
  const boxes = Object.entries(layout.nodes)
    .map(
      ([id, b]) =>
        `<g class="n" data-id="${id}" transform="translate(${b.x},${b.y})"><rect width="${b.width}" height="${b.height}"></rect><text x="12" y="14">${id}</text></g>`,
    )
    .join("")
  const arrows = layout.edges.map((e) => `<path d="M${e.points.map((p) => `${p[0]},${p[1]}`).join("L")}"></path>`).join("")
  const k = Math.min((1400 - 40) / layout.width, (900 - 40) / layout.height)
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0}svg{width:100vw;height:100vh}rect{fill:#fff;stroke:#888}path{fill:none;stroke:#999}.blocked rect{stroke:#c00}text{font:11px sans-serif}
</style></head><body><svg><g transform="translate(20,20) scale(${k})">${arrows}${boxes}</g></svg><script>
requestAnimationFrame(() => setTimeout(() => (document.body.dataset.paintedMs = String(Math.round(performance.now())))))
new EventSource("/events").addEventListener("blocked", (e) => document.querySelector('[data-id="' + e.data + '"]').classList.add("blocked"))
</script></body></html>`
}

export type FloorServer = { url: string; show: (layout: Layout) => void; watchFile: (file: string, id: () => string) => void; stop: () => void }

/** The floor's server: `show` sets the page it serves; `watchFile` makes it tell the page when `file` is renamed over. */
export function floorServer(): FloorServer {
  let page = ""
  const streams = new Set<ReadableStreamDefaultController<string>>()
  let watcher: ReturnType<typeof watch> | undefined
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(req) {
      if (new URL(req.url).pathname !== "/events")
        return new Response(page, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } })
      let mine: ReadableStreamDefaultController<string>
      const body = new ReadableStream<string>({
        start: (c) => void streams.add((mine = c)),
        cancel: () => void streams.delete(mine),
      })
      return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/`,
    show: (layout) => void (page = staticPage(layout)),
    watchFile: (file, id) => {
      watcher = watch(dirname(file), (_event, name) => {
        if (name !== basename(file)) return
        for (const s of streams) s.enqueue(`event: blocked\ndata: ${id()}\n\n`)
      })
    },
    stop: () => {
      watcher?.close()
      for (const s of streams) s.close()
      server.stop(true)
    },
  }
}

// ELK alone, in a fresh process: prints the milliseconds from before importing elkjs to the last band laid out.
if (import.meta.main && Bun.argv[2] === "elk") {
  const { indexTasks } = await import("../lib/model/task-index")
  const { bandGraph, bands } = await import("../lib/view/layout")
  const index = indexTasks(Bun.YAML.parse(await Bun.file(Bun.argv[3]).text()) as import("../lib/model/task-index").TaskFile)
  const graphs = bands(index).map((b) => bandGraph(index, b))
  const start = performance.now()
  const ELK = (await import("elkjs/lib/elk.bundled.js")).default
  const elk = new ELK()
  ;(globalThis as { onmessage?: unknown }).onmessage = null // or Bun waits for worker messages forever
  for (const g of graphs) await elk.layout(g)
  console.log(Math.round(performance.now() - start))
}
