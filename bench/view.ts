// flow view's benchmark: `npm run bench:view` (builds dist/flow, then runs this; about a minute).
// In headless Chromium (Debian's /usr/bin/chromium, as in test/view-browser.test.ts), against dist/flow view:
// - cold: a fresh server on a project without a saved layout, from the page's request to its first full
//   paint (ELK runs meanwhile; the page shows its progress), 500 and 2,000 tasks; also ELK alone, in process;
// - cached: the same page loaded again (layout in memory), 2,000 tasks;
// - update: from the end of an atomic write of tasks.yaml (one status changed) to the page showing it.
// The page reports its paint time itself (body[data-painted-ms], from navigation start). Medians of --runs.
// Every case prints its figure next to a floor measured in the same run (bench/view-floor.ts), as a ratio:
// paint cases against a static page drawing the same boxes and arrows in the same Chromium, the cold layout
// against that plus ELK alone in a fresh process, the layout against ELK called directly in this process,
// the update against fs.watch and an event to the static page. The absolute goals are kept too.
import { existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { chromium, type Page } from "playwright-core"
import { indexTasks, type TaskFile } from "../lib/model/task-index"
import { bandGraph, bands, computeLayout, type Layout } from "../lib/view/layout"
import { floorServer } from "./view-floor"
import { generatedTasks, makeProject, median, removeDir, ROOT, taskId } from "./lib"
import { CHROMIUM, CHROMIUM_FLAGS } from "../test/fixtures/chromium"

const { values: opts } = parseArgs({ args: Bun.argv.slice(2), options: { runs: { type: "string", default: "5" }, keep: { type: "boolean", default: false } } })
const RUNS = Number(opts.runs)
const FLOW = join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first (npm run bench:view does)`)
if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`)

const profile = mkdtempSync(join(tmpdir(), "flow-bench-view-profile-"))
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: CHROMIUM_FLAGS,
  viewport: { width: 1400, height: 900 },
})
const page = context.pages()[0] ?? (await context.newPage())
const temp: string[] = [profile]
const rows: { name: string; ms: number; floor: number; goal: number; note?: string }[] = []
const floor = floorServer()

type Server = { url: string; stop: () => Promise<void> }
async function serve(dir: string): Promise<Server> {
  const proc = Bun.spawn([FLOW, "view", "--no-open"], { cwd: dir, stdout: "pipe", stderr: "pipe" })
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  let out = ""
  while (!out.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`flow view failed: ${await new Response(proc.stderr).text()}`)
    out += new TextDecoder().decode(value)
  }
  return { url: out.split("\n")[0], stop: async () => (proc.kill("SIGINT"), void (await proc.exited)) }
}

async function paintedMs(p: Page, url: string): Promise<{ ms: number; progress: boolean }> {
  await p.goto("about:blank")
  await p.goto(url)
  // Whether the layout's progress was on screen at some point while the page waited.
  const progress = p.waitForSelector("#progress:not([hidden]) progress", { timeout: 60_000 }).then(
    () => true,
    () => false,
  )
  await p.waitForSelector("body[data-painted-ms]", { timeout: 120_000 })
  return { ms: Number(await p.getAttribute("body", "data-painted-ms")), progress: await Promise.race([progress, Bun.sleep(0).then(() => false)]) }
}

function report(name: string, all: number[], floorMs: number, goal: number, note?: string) {
  const ms = median(all)
  rows.push({ name, ms, floor: floorMs, goal, note })
  console.log(
    `${name.padEnd(34)} flow ${String(Math.round(ms)).padStart(5)} ms, floor ${String(Math.round(floorMs)).padStart(5)} ms, ratio ${(ms / floorMs).toFixed(2)}` +
      `  (goal ≤ ${goal} ms${note ? `; ${note}` : ""})  runs: ${all.map(Math.round).join(", ")}`,
  )
}

const fixtures = new Map<number, string>()
for (const n of [500, 2000]) fixtures.set(n, await generatedTasks(n))

// The layout in this process (through flow's ELK worker), against ELK called directly on the same graphs.
const layouts = new Map<number, Layout>()
const ELK = (await import("elkjs/lib/elk.bundled.js")).default
const elk = new ELK()
;(globalThis as { onmessage?: unknown }).onmessage = null // or Bun waits for worker messages forever
for (const n of [500, 2000]) {
  const index = indexTasks(Bun.YAML.parse(fixtures.get(n) as string) as TaskFile)
  const graphs = bands(index).map((b) => bandGraph(index, b))
  const all: number[] = []
  const direct: number[] = []
  for (let i = 0; i < RUNS; i++) {
    let start = performance.now()
    layouts.set(n, await computeLayout(index))
    all.push(performance.now() - start)
    start = performance.now()
    for (const g of graphs) await elk.layout(g)
    direct.push(performance.now() - start)
  }
  report(`layout only (elkjs) ${n}`, all, median(direct), n === 500 ? 1500 : 5000, "floor: ELK called directly, same graphs")
}

/** The floor page's paint, in the same Chromium. */
async function floorPaint(n: number): Promise<number> {
  floor.show(layouts.get(n) as Layout)
  return (await paintedMs(page, floor.url)).ms
}

/** ELK alone in a fresh process, on the graph of `text`: importing elkjs and laying out every band. */
function elkAlone(text: string): number {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-elk-"))
  temp.push(dir)
  writeFileSync(join(dir, "tasks.yaml"), text)
  const proc = Bun.spawnSync([process.execPath, join(ROOT, "bench", "view-floor.ts"), "elk", join(dir, "tasks.yaml")], { stderr: "pipe" })
  if (proc.exitCode !== 0) throw new Error(`ELK alone failed: ${proc.stderr.toString()}`)
  return Number(proc.stdout.toString().trim())
}

// Cold: every run a new project folder (no .flow/view-layout.json) and a new server; interleaved with the
// floor page and ELK alone.
for (const n of [500, 2000]) {
  const all: number[] = []
  const paints: number[] = []
  const elks: number[] = []
  let progressSeen = 0
  for (let i = 0; i < RUNS; i++) {
    const dir = await makeProject(fixtures.get(n) as string, "view")
    temp.push(dir)
    const server = await serve(dir)
    const { ms, progress } = await paintedMs(page, server.url)
    if (progress) progressSeen++
    all.push(ms)
    await server.stop()
    paints.push(await floorPaint(n))
    elks.push(elkAlone(fixtures.get(n) as string))
  }
  report(
    `cold layout, page painted ${n}`,
    all,
    median(paints) + median(elks),
    n === 500 ? 1500 : 5000,
    `floor: static page ${Math.round(median(paints))} + ELK alone ${Math.round(median(elks))}; progress shown in ${progressSeen}/${RUNS}`,
  )
}

// Cached layout, and the update latency, on one server.
const dir = await makeProject(fixtures.get(2000) as string, "view")
temp.push(dir)
const server = await serve(dir)
await paintedMs(page, server.url)
const cached: number[] = []
const cachedFloor: number[] = []
for (let i = 0; i < RUNS; i++) {
  cached.push((await paintedMs(page, server.url)).ms)
  cachedFloor.push(await floorPaint(2000))
}
report("cached layout, page painted 2000", cached, median(cachedFloor), 1000, "floor: static page")

/** From the end of an atomic write of `file` (task `id` made blocked) to the page at `url` showing it. */
async function updateLag(url: string, file: string, id: string): Promise<number> {
  if (page.url() !== url) await paintedMs(page, url)
  const text = readFileSync(file, "utf8")
  const at = text.indexOf(`id: ${id}\n`)
  const next = `${text.slice(0, at)}${text.slice(at).replace(/status: \w+/, "status: blocked")}`
  // The page notes (in wall-clock time) when the node turns blocked.
  await page.evaluate((wanted) => {
    const g = globalThis as unknown as {
      seenAt?: number
      requestAnimationFrame: (f: () => void) => void
      document: { querySelector: (s: string) => { classList: { contains: (c: string) => boolean } } | null }
    }
    g.seenAt = undefined
    const check = () => {
      const node = g.document.querySelector(`[data-id="${wanted}"]`)
      if (node?.classList.contains("st-blocked") || node?.classList.contains("blocked")) g.seenAt = Date.now()
      else g.requestAnimationFrame(check)
    }
    g.requestAnimationFrame(check)
  }, id)
  writeFileSync(`${file}.tmp`, next)
  renameSync(`${file}.tmp`, file)
  const written = Date.now()
  await page.waitForFunction(() => (globalThis as { seenAt?: number }).seenAt !== undefined, undefined, { timeout: 30_000 })
  return (await page.evaluate(() => (globalThis as { seenAt?: number }).seenAt as number)) - written
}

const lags: number[] = []
const floorLags: number[] = []
const file = join(dir, "tasks.yaml")
const floorDir = mkdtempSync(join(tmpdir(), "flow-bench-floor-watch-"))
temp.push(floorDir)
const floorFile = join(floorDir, "tasks.yaml")
writeFileSync(floorFile, fixtures.get(2000) as string)
let floorId = ""
floor.watchFile(floorFile, () => floorId)
for (let i = 0; i < RUNS; i++) {
  const id = taskId(10 + i * 8) // statuses cycle with period 8 in gen-tasks: these are all todo
  lags.push(await updateLag(server.url, file, id))
  floor.show(layouts.get(2000) as Layout)
  floorId = id
  floorLags.push(await updateLag(floor.url, floorFile, id))
}
report(
  "tasks.yaml write → page shows it",
  lags,
  median(floorLags),
  300,
  "hand edit: includes the schema check of 2,000 tasks; floor: fs.watch + an event to the static page",
)
await server.stop()

floor.stop()
await context.close()
if (!opts.keep) for (const d of temp) removeDir(d)
const missed = rows.filter((r) => r.ms > r.goal)
console.log(missed.length === 0 ? "\nall goals met" : `\ngoals missed: ${missed.map((r) => r.name).join("; ")}`)
