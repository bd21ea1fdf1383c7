// flow view's graph in headless Chromium (issue 26), on the paths and boxes Chromium drew: dependencies
// routed around the boxes they do not end at (the reported case, then a few hundred seeded random graphs
// written into one project that the open page follows), the selected task's own arrows told apart, and a
// 2,000-task chain opened at a readable zoom around its first ready task, with a minimap for the rest.
import { afterAll, beforeAll, expect, test } from "bun:test"
import { renameSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import type { Task } from "../lib/model/task-index"
import { launchChromium } from "./fixtures/chromium"
import { crossings, type DrawnEdge, polyline, randomGraph, type Rect } from "./fixtures/graph-geometry"
import { ROOT, tasksYaml, tempRepo, type TempDir } from "./helpers"
import { startView } from "./view-helpers"

const ARTIFACTS = join(ROOT, "test-artifacts")

const t = (id: string, phase: number, deps: string[] = [], status = "todo") => ({
  id,
  title: `Task ${id}`,
  status,
  phase,
  instructions: "x",
  ...(deps.length ? { depends_on: deps } : {}),
})
// The case of the issue: drawn straight, c → chk ran through st's box and read as c → st.
const REPORTED = [t("a", 1), t("b", 1), t("c", 1), t("st", 2, ["a"]), t("p", 2, ["b"]), t("chk", 3, ["st", "p", "c"])]

// The page's globals, typed just enough for the callbacks that run in the browser (this project has no DOM lib).
type El = {
  dataset: Record<string, string>
  getAttribute: (n: string) => string | null
  querySelector: (s: string) => El | null
  classList: { contains: (c: string) => boolean }
  getBoundingClientRect: () => { left: number; top: number; right: number; bottom: number; width: number; height: number }
}
type Doc = { querySelectorAll: (s: string) => Iterable<El>; querySelector: (s: string) => El | null; body: El }
type Win = { document: Doc }

let dir: TempDir
let view: Awaited<ReturnType<typeof startView>>
let browser: Awaited<ReturnType<typeof launchChromium>>
let page: Page

beforeAll(async () => {
  dir = await tempRepo({ "tasks.yaml": tasksYaml(REPORTED) })
  view = await startView(dir)
  browser = await launchChromium()
  page = browser.page
  page.setDefaultTimeout(60_000)
  await page.goto(view.url)
  await page.waitForSelector('#nodes .node[data-id="chk"]', { timeout: 100_000 })
})

afterAll(async () => {
  await browser?.close()
  await view?.[Symbol.asyncDispose]()
  await dir?.[Symbol.asyncDispose]()
})

/** The boxes and dependency arrows as drawn: boxes in graph coordinates, arrows from their `d`. */
async function drawn(p: Page): Promise<{ boxes: Record<string, Rect>; edges: (DrawnEdge & { d: string })[] }> {
  const raw = await p.evaluate(() => ({
    boxes: Array.from((globalThis as unknown as Win).document.querySelectorAll("#nodes .node"), (g) => {
      const [x, y] = (/translate\(([-\d.]+),([-\d.]+)\)/.exec(g.getAttribute("transform") ?? "") ?? []).slice(1).map(Number)
      const r = g.querySelector(":scope > rect") as El
      return { id: g.dataset.id, x, y, width: Number(r.getAttribute("width")), height: Number(r.getAttribute("height")) }
    }),
    edges: Array.from((globalThis as unknown as Win).document.querySelectorAll("#edges .edge:not(.validates)"), (e) => ({
      from: e.dataset.from,
      to: e.dataset.to,
      d: e.getAttribute("d") ?? "",
    })),
  }))
  return {
    boxes: Object.fromEntries(raw.boxes.map(({ id, ...box }) => [id, box])),
    edges: raw.edges.map((e) => ({ ...e, points: polyline(e.d) ?? [] })),
  }
}

/** Parent of every subtask, and every dependency as from>to. */
function structure(tasks: Task[]): { parents: Map<string, string>; deps: string[] } {
  const parents = new Map<string, string>()
  const deps: string[] = []
  const walk = (list: Task[], parent?: string) => {
    for (const task of list) {
      if (parent) parents.set(task.id, parent)
      for (const d of new Set(task.depends_on ?? [])) deps.push(`${d}>${task.id}`)
      walk(task.subtasks ?? [], task.id)
    }
  }
  walk(tasks)
  return { parents, deps: deps.sort() }
}

/** What is wrong with the drawing of `tasks`: an arrow missing or not routed (a curve), or one through a box. */
async function faults(tasks: Task[]): Promise<string[]> {
  const { boxes, edges } = await drawn(page)
  const { parents, deps } = structure(tasks)
  const found = crossings(boxes, parents, edges)
  const drawnDeps = edges.map((e) => `${e.from}>${e.to}`).sort()
  if (drawnDeps.join() !== deps.join()) found.push(`arrows drawn ${drawnDeps.join(" ")}; dependencies ${deps.join(" ")}`)
  for (const e of edges) if (e.points.length < 2) found.push(`${e.from}>${e.to} is not a routed polyline: ${e.d}`)
  return found
}

/** Writes `tasks` as the project's tasks.yaml and waits for the page to draw their layout (or show an error). */
async function show(tasks: Task[] | Record<string, unknown>[]): Promise<void> {
  const before = await page.getAttribute("body", "data-layout")
  // Atomically, as flow writes it: a reader never sees half a file.
  dir.write("tasks.yaml.new", tasksYaml(tasks as Record<string, unknown>[]))
  renameSync(join(dir.path, "tasks.yaml.new"), join(dir.path, "tasks.yaml"))
  const drawnOrError = page.waitForFunction((old) => {
    const d = (globalThis as unknown as Win).document
    const now = d.body.dataset.layout
    return (now !== undefined && now !== old) || (d.querySelector("#banner.error:not([hidden])") as unknown as { hidden: boolean } | null) !== null
  }, before)
  await drawnOrError.catch(async (e) => {
    // What the page and the server were at, for a failure on a loaded machine.
    const at = await page.evaluate(() => {
      const d = (globalThis as unknown as Win).document
      const text = (s: string) => (d.querySelector(s) as unknown as { textContent: string } | null)?.textContent
      return { layout: d.body.dataset.layout, version: d.body.dataset.version, live: text("#live"), progress: text("#progress") }
    })
    const server = (await (await view.get("/api/tasks")).json()) as { version: number; layout_key: string }
    throw new Error(`${e.message}\npage: ${JSON.stringify(at)}; server: version ${server.version}, layout ${server.layout_key}`)
  })
  const banner = await page.$eval("#banner", (b) =>
    (b as unknown as { hidden: boolean }).hidden ? "" : (b as unknown as El & { textContent: string }).textContent,
  )
  if (banner) throw new Error(`the page shows an error: ${banner}`)
}

test("the reported case: c → chk goes around st's box, and no arrow crosses a box it does not end at", async () => {
  expect(await faults(REPORTED as Task[])).toEqual([])
  const { boxes, edges } = await drawn(page)
  // It passes st's column level, beside st (between st and p, or above or below them), not through it.
  const route = edges.find((e) => e.from === "c" && e.to === "chk")?.points ?? []
  const middle = boxes.st.x + boxes.st.width / 2
  const passes = route.slice(1).flatMap((b, i) => {
    const a = route[i]
    return a[1] === b[1] && Math.min(a[0], b[0]) < middle && middle < Math.max(a[0], b[0]) ? [a[1]] : []
  })
  expect(passes.length).toBe(1)
  expect(passes[0] < boxes.st.y || passes[0] > boxes.st.y + boxes.st.height).toBe(true)
  await page.screenshot({ path: join(ARTIFACTS, "view-reported-route.png") })
})

test("selecting a task sets its own arrows apart, in and out, drawn over the others", async () => {
  await page.click('#nodes .node[data-id="st"]')
  const classes = await page.$$eval("#edges .edge", (els) =>
    els.map((e) => {
      const el = e as unknown as El
      return `${el.dataset.from}>${el.dataset.to}${el.classList.contains("in") ? " in" : ""}${el.classList.contains("out") ? " out" : ""}`
    }),
  )
  // Its own last, so nothing else is drawn over them.
  expect(classes.slice(-2).sort()).toEqual(["a>st in", "st>chk out"])
  expect(classes.slice(0, -2).sort()).toEqual(["b>p", "c>chk", "p>chk"])
  await page.screenshot({ path: join(ARTIFACTS, "view-selected-edges.png") })
  await page.keyboard.press("Escape")
  expect(await page.$$("#edges .edge.in, #edges .edge.out")).toEqual([])
})

// A few hundred graphs, one after another in the same page (each a new layout the page follows), in
// three batches to keep each test short.
for (const [first, last] of [
  [1, 100],
  [101, 200],
  [201, 300],
]) {
  test(`random graphs ${first}-${last}: every dependency drawn, none through a box it does not end at`, async () => {
    const found: string[] = []
    for (let seed = first; seed <= last; seed++) {
      const tasks = randomGraph(seed)
      await show(tasks)
      for (const f of await faults(tasks)) found.push(`seed ${seed}: ${f}`)
    }
    expect(found).toEqual([])
  })
}

test("a 2,000-task chain opens at a readable zoom on its first ready task, with the minimap for the rest", async () => {
  const chain = Array.from({ length: 2000 }, (_, i) => ({
    id: `c${i}`,
    title: `Step ${i} of the chain`,
    status: i < 120 ? "done" : i === 120 ? "ready_for_agent" : "todo",
    instructions: "x",
    ...(i > 0 ? { depends_on: [`c${i - 1}`] } : {}),
  }))
  await show(chain)
  await page.reload()
  await page.waitForSelector("body[data-layout] #nodes .node")
  const rect = (selector: string) =>
    page.$eval(selector, (el) => {
      const { left, top, right, bottom, height } = (el as unknown as El).getBoundingClientRect()
      return { left, top, right, bottom, height }
    })
  const canvas = await rect("#graph")
  const ready = await rect('#nodes .node[data-id="c120"] > rect')
  // Readable: a box 48 units tall is drawn at least 28 px tall (zoom 0.6), texts on; and c120 on screen.
  expect(ready.height).toBeGreaterThanOrEqual(28)
  expect(await page.$eval("#graph", (g) => (g as unknown as El).classList.contains("far"))).toBe(false)
  expect(ready.left >= canvas.left && ready.right <= canvas.right && ready.top >= canvas.top && ready.bottom <= canvas.bottom).toBe(true)
  // Boxes far off screen are drawn without their texts (so 2,000 of them paint quickly), near ones with.
  const away = (id: string) => page.$eval(`#nodes .node[data-id="${id}"]`, (g) => (g as unknown as El).classList.contains("away"))
  expect([await away("c120"), await away("c121"), await away("c1999")]).toEqual([false, false, true])
  // The rest is in the minimap, the part on screen outlined near its start.
  const map = await rect("#minimap-canvas")
  const lens = await rect("#minimap-lens")
  expect(map.height).toBeGreaterThan(0)
  expect(lens.left >= map.left - 1 && lens.right <= map.left + (map.right - map.left) * 0.2).toBe(true)
  await page.screenshot({ path: join(ARTIFACTS, "view-long-chain.png") })
  // A click in the middle of the minimap moves the view to the middle of the chain, at the same zoom.
  const zoom = (await page.getAttribute("#viewport", "transform"))?.split("scale")[1]
  await page.mouse.click((map.left + map.right) / 2, (map.top + map.bottom) / 2)
  const moved = await rect("#minimap-lens")
  expect(Math.abs((moved.left + moved.right) / 2 - (map.left + map.right) / 2)).toBeLessThan(3)
  const inView = await page.$$eval(
    "#nodes .node",
    (nodes, [left, right]) =>
      nodes.flatMap((n) => {
        const r = (n as unknown as El).getBoundingClientRect()
        return r.right > left && r.left < right ? [Number((n as unknown as El).dataset.id.slice(1))] : []
      }),
    [canvas.left, canvas.right],
  )
  expect(inView.length).toBeGreaterThan(0)
  expect(inView.every((i) => i > 900 && i < 1100)).toBe(true)
  expect([await away(`c${inView[0]}`), await away("c120")]).toEqual([false, true])
  expect((await page.getAttribute("#viewport", "transform"))?.split("scale")[1]).toBe(zoom)
})
