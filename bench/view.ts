// flow view's benchmark: `npm run bench:view` (builds dist/flow, then runs this; about a minute).
// In headless Chromium (Debian's /usr/bin/chromium, as in test/view-browser.test.ts), against dist/flow view:
// - cold: a fresh server on a project without a saved layout, from the page's request to its first full
//   paint (ELK runs meanwhile; the page shows its progress), 500 and 2,000 tasks; also ELK alone, in process;
// - cached: the same page loaded again (layout in memory), 2,000 tasks;
// - update: from the end of an atomic write of tasks.yaml (one status changed) to the page showing it.
// The page reports its paint time itself (body[data-painted-ms], from navigation start). Medians of --runs.
import { existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { chromium, type Page } from "playwright-core"
import { indexTasks, type TaskFile } from "../lib/task-index"
import { computeLayout } from "../lib/view/layout"
import { generatedTasks, makeProject, median, removeDir, ROOT, taskId } from "./lib"

const { values: opts } = parseArgs({ args: Bun.argv.slice(2), options: { runs: { type: "string", default: "5" }, keep: { type: "boolean", default: false } } })
const RUNS = Number(opts.runs)
const FLOW = join(ROOT, "dist", "flow")
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first (npm run bench:view does)`)
if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium, or set CHROMIUM_PATH`)

const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
const profile = mkdtempSync(join(tmpdir(), "flow-bench-view-profile-"))
const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1400, height: 900 } })
const page = context.pages()[0] ?? (await context.newPage())
const temp: string[] = [profile]
const rows: { name: string; ms: number; goal: number; note?: string }[] = []

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
  const progress = p.waitForSelector("#progress:not([hidden]) progress", { timeout: 60_000 }).then(() => true, () => false)
  await p.waitForSelector("body[data-painted-ms]", { timeout: 120_000 })
  return { ms: Number(await p.getAttribute("body", "data-painted-ms")), progress: await Promise.race([progress, Bun.sleep(0).then(() => false)]) }
}

function report(name: string, all: number[], goal: number, note?: string) {
  const ms = median(all)
  rows.push({ name, ms, goal, note })
  console.log(`${name.padEnd(34)} ${String(Math.round(ms)).padStart(6)} ms  (goal ≤ ${goal} ms${note ? `; ${note}` : ""})  runs: ${all.map(Math.round).join(", ")}`)
}

const fixtures = new Map<number, string>()
for (const n of [500, 2000]) fixtures.set(n, await generatedTasks(n))

// ELK alone, in this process: what the server spends of the cold numbers below.
for (const n of [500, 2000]) {
  const index = indexTasks(Bun.YAML.parse(fixtures.get(n) as string) as TaskFile)
  const all: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    await computeLayout(index)
    all.push(performance.now() - start)
  }
  report(`layout only (elkjs) ${n}`, all, n === 500 ? 1500 : 5000)
}

// Cold: every run a new project folder (no .flow/view-layout.json) and a new server.
for (const n of [500, 2000]) {
  const all: number[] = []
  let progressSeen = 0
  for (let i = 0; i < RUNS; i++) {
    const dir = await makeProject(fixtures.get(n) as string, "view")
    temp.push(dir)
    const server = await serve(dir)
    const { ms, progress } = await paintedMs(page, server.url)
    if (progress) progressSeen++
    all.push(ms)
    await server.stop()
  }
  report(`cold layout, page painted ${n}`, all, n === 500 ? 1500 : 5000, `progress shown in ${progressSeen}/${RUNS}`)
}

// Cached layout, and the update latency, on one server.
const dir = await makeProject(fixtures.get(2000) as string, "view")
temp.push(dir)
const server = await serve(dir)
await paintedMs(page, server.url)
const cached: number[] = []
for (let i = 0; i < RUNS; i++) cached.push((await paintedMs(page, server.url)).ms)
report("cached layout, page painted 2000", cached, 1000)

const lags: number[] = []
const file = join(dir, "tasks.yaml")
for (let i = 0; i < RUNS; i++) {
  const id = taskId(10 + i * 8) // statuses cycle with period 8 in gen-tasks: these are all todo
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
      if (g.document.querySelector(`#nodes .node[data-id="${wanted}"]`)?.classList.contains("st-blocked")) g.seenAt = Date.now()
      else g.requestAnimationFrame(check)
    }
    g.requestAnimationFrame(check)
  }, id)
  writeFileSync(`${file}.tmp`, next)
  renameSync(`${file}.tmp`, file)
  const written = Date.now()
  await page.waitForFunction(() => (globalThis as { seenAt?: number }).seenAt !== undefined, undefined, { timeout: 30_000 })
  lags.push((await page.evaluate(() => (globalThis as { seenAt?: number }).seenAt as number)) - written)
}
report("tasks.yaml write → page shows it", lags, 300, "hand edit: includes the schema check of 2,000 tasks")
await server.stop()

await context.close()
if (!opts.keep) for (const d of temp) removeDir(d)
const missed = rows.filter((r) => r.ms > r.goal)
console.log(missed.length === 0 ? "\nall goals met" : `\ngoals missed: ${missed.map((r) => r.name).join("; ")}`)
