// The inspector's texts fit where they are drawn, measured in real headless Chromium (as test/view-browser.test.ts
// drives it): task ids of 40 characters in leaf and parent boxes, narrow and wide, shortened with the full id
// on hover; phase titles far longer than their bands, wrapped and never cut. Screenshot in test-artifacts/.
import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { flowArgv, ROOT, tasksYaml, tempRepo, type TempDir } from "./helpers"
import { launchChromium } from "./fixtures/chromium"

/** A kebab-case id of exactly 40 characters ending in `end`, as tasks.yaml's id pattern takes it. */
const id40 = (start: string, end: string) => `${start}-${"x".repeat(40 - start.length - end.length - 2)}-${end}`

const IDS = {
  first: id40("integrate-the-payment-provider", "a1"),
  second: id40("integrate-the-payment-provider", "a2"),
  parent: id40("reconcile-the-accounting-exports", "p"),
  childA: id40("reconcile-the-accounting-exports", "c1"),
  childB: id40("reconcile-the-accounting-exports", "c2"),
  alone: id40("publish-the-release-notes-for-every", "z"),
}

const PHASES = {
  1: "Integrate the payment provider, its webhooks and the refunds, end to end",
  2: "Reconcile the accounting exports with the ledger of every subsidiary",
  3: "Supercalifragilisticexpialidocious-release-communication-without-any-space",
}

const TASKS = tasksYaml([
  { id: IDS.first, title: "First", status: "done", phase: 1, instructions: "x" },
  { id: IDS.second, title: "Second", status: "todo", phase: 1, depends_on: [IDS.first], checkpoint: true, instructions: "x" },
  {
    id: IDS.parent,
    title: "Reconcile",
    status: "todo",
    phase: 2,
    instructions: "x",
    subtasks: [
      { id: IDS.childA, title: "Child A", status: "todo", instructions: "x" },
      { id: IDS.childB, title: "Child B", status: "todo", depends_on: [IDS.childA], instructions: "x" },
    ],
  },
  { id: IDS.alone, title: "Alone in its phase", status: "todo", phase: 3, depends_on: [IDS.second], instructions: "x" },
])

const PLAN = `# Implementation Plan\n\n${Object.entries(PHASES)
  .map(([n, title]) => `## Phase ${n}: ${title}\n`)
  .join("\n")}`

let dir: TempDir
let server: ReturnType<typeof Bun.spawn>
let browser: Awaited<ReturnType<typeof launchChromium>>
let page: Page

beforeAll(async () => {
  dir = await tempRepo({ "tasks.yaml": TASKS, "plan.md": PLAN })
  server = Bun.spawn([...flowArgv(), "view", "--no-open"], { cwd: dir.path, env: { ...process.env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" })
  const reader = (server.stdout as ReadableStream<Uint8Array>).getReader()
  let printed = ""
  while (!printed.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`flow view ended before printing its address: ${printed}`)
    printed += new TextDecoder().decode(value)
  }
  browser = await launchChromium()
  page = browser.page
  page.setDefaultTimeout(60_000)
  await page.goto(printed.split("\n")[0]!)
  await page.waitForSelector(`#nodes .node[data-id="${IDS.alone}"]`, { timeout: 100_000 })
  // The whole graph on screen, at a zoom where texts are drawn.
  await page.keyboard.press("f")
  mkdirSync(join(ROOT, "test-artifacts"), { recursive: true })
  await page.screenshot({ path: join(ROOT, "test-artifacts", "view-long-ids.png") })
})

afterAll(async () => {
  await browser?.close()
  server?.kill("SIGTERM")
  await server?.exited
  await dir?.[Symbol.asyncDispose]()
})

type Rect = { left: number; right: number; top: number; bottom: number }
// The page's DOM, typed just enough for the callbacks that run in the browser (this project has no DOM lib).
type Node = {
  textContent: string | null
  getBoundingClientRect: () => Rect
  querySelector: (s: string) => Node | null
  querySelectorAll: (s: string) => ArrayLike<Node>
  getAttribute: (name: string) => string | null
}

test("every id is drawn inside its box, shortened when it must be, and the box's tooltip names it whole", async () => {
  const measured = await page.$$eval("#nodes .node", (gs) =>
    gs.map((g) => {
      const el = g as unknown as Node
      const box = el.querySelector(":scope > rect")!.getBoundingClientRect()
      const id = el.querySelector(".id")!
      const r = id.getBoundingClientRect()
      return {
        id: el.getAttribute("data-id"),
        shown: id.textContent,
        tooltip: el.querySelector(":scope > title")?.textContent ?? "",
        drawn: r.right > r.left,
        inside: r.left >= box.left && r.right <= box.right - 2,
      }
    }),
  )
  expect(measured.map((m) => m.id).sort()).toEqual(Object.values(IDS).sort())
  for (const m of measured) {
    const shortened = m.shown !== m.id
    // Shortened in the middle: its start and its end (where ids of a series differ) stay.
    const fair = !shortened || (m.shown!.includes("…") && m.id!.startsWith(m.shown!.split("…")[0]!) && m.id!.endsWith(m.shown!.split("…")[1]!))
    expect({ id: m.id, drawn: m.drawn, inside: m.inside, fair, tooltip: m.tooltip.startsWith(`${m.id}: `) }).toEqual({
      id: m.id,
      drawn: true,
      inside: true,
      fair: true,
      tooltip: true,
    })
  }
  // Two ids that differ only at their end still look different.
  const shown = new Map(measured.map((m) => [m.id, m.shown]))
  expect(shown.get(IDS.first)).not.toBe(shown.get(IDS.second))
})

test("every phase title is drawn whole, wrapped inside its band, above the band's boxes", async () => {
  const bands = await page.$$eval("#bands .band", (gs) =>
    gs.map((g) => {
      const el = g as unknown as Node
      const band = el.querySelector("rect")!.getBoundingClientRect()
      const text = el.querySelector("text")!
      const lines = Array.from(text.querySelectorAll("tspan")).map((t) => ({ text: t.textContent ?? "", rect: t.getBoundingClientRect() }))
      return { band, text: text.textContent ?? "", lines: lines.length > 0 ? lines : [{ text: text.textContent ?? "", rect: text.getBoundingClientRect() }] }
    }),
  )
  const boxes = await page.$$eval("#nodes .node > rect", (rs) => rs.map((r) => (r as unknown as Node).getBoundingClientRect()))
  // Whole: every character of `Phase <n>: <title>` is drawn, in order, however the lines break.
  const bare = (t: string) => t.replace(/\s+/g, "")
  expect(bands.map((b) => bare(b.lines.map((l) => l.text).join(" ")))).toEqual(Object.entries(PHASES).map(([n, t]) => bare(`Phase ${n}: ${t}`)))
  for (const [i, b] of bands.entries()) {
    const cut = b.lines.filter((l) => l.rect.left < b.band.left || l.rect.right > b.band.right || l.rect.top < b.band.top)
    const under = boxes.filter((r) => r.left < b.band.right && r.right > b.band.left && r.top < Math.max(...b.lines.map((l) => l.rect.bottom)))
    expect({ band: i + 1, cut: cut.map((l) => l.text), covers: under.length }).toEqual({ band: i + 1, cut: [], covers: 0 })
  }
})

test("a phase renamed in plan.md gets its band's title drawn anew, whole, without a new layout", async () => {
  const layout = await page.evaluate(() => (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset.layout)
  const longer = `${PHASES[1]} and the chargebacks of every card network, with their disputes`
  await Bun.write(join(dir.path, "plan.md"), PLAN.replace(PHASES[1], longer))
  await page.waitForFunction(
    (want) =>
      (globalThis as unknown as { document: { querySelector: (s: string) => Node | null } }).document
        .querySelector("#bands .band text")
        ?.textContent?.includes(want),
    "disputes",
  )
  const first = await page.$eval("#bands .band", (g) => {
    const el = g as unknown as Node
    const band = el.querySelector("rect")!.getBoundingClientRect()
    const lines = Array.from(el.querySelectorAll("tspan")).map((t) => t.getBoundingClientRect())
    return { text: el.querySelector("text")!.textContent ?? "", inside: lines.every((r) => r.left >= band.left && r.right <= band.right && r.top >= band.top) }
  })
  expect({ text: first.text.replace(/\s+/g, ""), inside: first.inside }).toEqual({ text: `Phase 1: ${longer}`.replace(/\s+/g, ""), inside: true })
  expect(await page.evaluate(() => (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset.layout)).toBe(
    layout,
  )
})
