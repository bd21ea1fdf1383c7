// The inspector as it is drawn, measured in Chromium: where each task's id sits against its box, and where
// each band's title lines sit against their band. Shared by test/view-fit.test.ts (made-up long ids and
// titles) and test/view-prd.test.ts (a graph generated from a real PRD).
import type { Page } from "playwright-core"
import { flowArgv, type TempDir } from "./helpers"
import { launchChromium } from "./fixtures/chromium"

type Rect = { left: number; right: number; top: number; bottom: number }
// The page's DOM, typed just enough for the callbacks that run in the browser (this project has no DOM lib).
export type DomNode = {
  textContent: string | null
  getBoundingClientRect: () => Rect
  querySelector: (s: string) => DomNode | null
  querySelectorAll: (s: string) => ArrayLike<DomNode>
  getAttribute: (name: string) => string | null
}

/** `flow view` started in `dir` and its page open in Chromium, the graph drawn (`ready` on screen); stopped on dispose. */
export async function viewPage(dir: TempDir, ready: string, viewport?: { width: number; height: number }) {
  const server = Bun.spawn([...flowArgv(), "view", "--no-open"], { cwd: dir.path, env: { ...process.env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" })
  const reader = (server.stdout as ReadableStream<Uint8Array>).getReader()
  let printed = ""
  while (!printed.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`flow view ended before printing its address: ${printed}`)
    printed += new TextDecoder().decode(value)
  }
  const browser = await launchChromium(viewport)
  const page = browser.page
  page.setDefaultTimeout(60_000)
  await page.goto(printed.split("\n")[0]!)
  await page.waitForSelector(ready, { timeout: 100_000 })
  return {
    page,
    [Symbol.asyncDispose]: async () => {
      await browser.close()
      server.kill("SIGTERM")
      await server.exited
    },
  }
}

export type IdMeasure = { id: string | null; shown: string | null; tooltip: string; drawn: boolean; inside: boolean }

/** Each task box: its id, the id as drawn, its tooltip, whether the id is drawn and whether it stays inside the box. */
export function measureIds(page: Page): Promise<IdMeasure[]> {
  return page.$$eval("#nodes .node", (gs) =>
    gs.map((g) => {
      const el = g as unknown as DomNode
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
}

/** Whether a drawn id is fair: whole, or shortened in the middle with its start and end kept, and named whole in the tooltip. */
export function fairId(m: IdMeasure): boolean {
  const shortened = m.shown !== m.id
  const [head, tail] = (m.shown ?? "").split("…")
  return (!shortened || (m.shown!.includes("…") && m.id!.startsWith(head!) && m.id!.endsWith(tail!))) && m.tooltip.startsWith(`${m.id}: `)
}

export type BandMeasure = { band: Rect; text: string; lines: { text: string; rect: Rect }[] }

/** Each phase band: its rectangle and its title's lines as drawn. */
export function measureBands(page: Page): Promise<BandMeasure[]> {
  return page.$$eval("#bands .band", (gs) =>
    gs.map((g) => {
      const el = g as unknown as DomNode
      const band = el.querySelector("rect")!.getBoundingClientRect()
      const text = el.querySelector("text")!
      const lines = Array.from(text.querySelectorAll("tspan")).map((t) => ({ text: t.textContent ?? "", rect: t.getBoundingClientRect() }))
      return { band, text: text.textContent ?? "", lines: lines.length > 0 ? lines : [{ text: text.textContent ?? "", rect: text.getBoundingClientRect() }] }
    }),
  )
}

/** The title lines of a band that leave it, and the task boxes its title lines run into. */
export async function bandProblems(page: Page, bands: BandMeasure[]): Promise<{ cut: string[][]; covered: number[] }> {
  const boxes = await page.$$eval("#nodes .node > rect", (rs) => rs.map((r) => (r as unknown as DomNode).getBoundingClientRect()))
  return {
    cut: bands.map((b) => b.lines.filter((l) => l.rect.left < b.band.left || l.rect.right > b.band.right || l.rect.top < b.band.top).map((l) => l.text)),
    covered: bands.map(
      (b) => boxes.filter((r) => r.left < b.band.right && r.right > b.band.left && r.top < Math.max(...b.lines.map((l) => l.rect.bottom))).length,
    ),
  }
}
