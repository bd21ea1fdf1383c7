// The inspector's texts fit where they are drawn, measured in real headless Chromium (as test/view-browser.test.ts
// drives it): task ids of 40 characters in leaf and parent boxes, narrow and wide, shortened with the full id
// on hover; phase titles far longer than their bands, wrapped and never cut. Screenshot in test-artifacts/.
import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { ROOT, tasksYaml, tempRepo, type TempDir } from "./helpers"
import { bandProblems, fairId, measureBands, measureIds, viewPage, type DomNode } from "./view-measure"

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
let view: Awaited<ReturnType<typeof viewPage>>
let page: Page

beforeAll(async () => {
  dir = await tempRepo({ "tasks.yaml": TASKS, "plan.md": PLAN })
  view = await viewPage(dir, `#nodes .node[data-id="${IDS.alone}"]`)
  page = view.page
  // The whole graph on screen, at a zoom where texts are drawn.
  await page.keyboard.press("f")
  mkdirSync(join(ROOT, "test-artifacts"), { recursive: true })
  await page.screenshot({ path: join(ROOT, "test-artifacts", "view-long-ids.png") })
})

afterAll(async () => {
  await view?.[Symbol.asyncDispose]()
  await dir?.[Symbol.asyncDispose]()
})

test("every id is drawn inside its box, shortened when it must be, and the box's tooltip names it whole", async () => {
  const measured = await measureIds(page)
  expect(measured.map((m) => m.id).sort()).toEqual(Object.values(IDS).sort())
  for (const m of measured) {
    // Shortened in the middle: its start and its end (where ids of a series differ) stay.
    expect({ id: m.id, drawn: m.drawn, inside: m.inside, fair: fairId(m) }).toEqual({ id: m.id, drawn: true, inside: true, fair: true })
  }
  // Two ids that differ only at their end still look different.
  const shown = new Map(measured.map((m) => [m.id, m.shown]))
  expect(shown.get(IDS.first)).not.toBe(shown.get(IDS.second))
})

test("every phase title is drawn whole, wrapped inside its band, above the band's boxes", async () => {
  const bands = await measureBands(page)
  // Whole: every character of `Phase <n>: <title>` is drawn, in order, however the lines break.
  const bare = (t: string) => t.replace(/\s+/g, "")
  expect(bands.map((b) => bare(b.lines.map((l) => l.text).join(" ")))).toEqual(Object.entries(PHASES).map(([n, t]) => bare(`Phase ${n}: ${t}`)))
  expect(await bandProblems(page, bands)).toEqual({ cut: bands.map(() => []), covered: bands.map(() => 0) })
})

test("a phase renamed in plan.md gets its band's title drawn anew, whole, without a new layout", async () => {
  const layout = await page.evaluate(() => (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset.layout)
  const longer = `${PHASES[1]} and the chargebacks of every card network, with their disputes`
  await Bun.write(join(dir.path, "plan.md"), PLAN.replace(PHASES[1], longer))
  await page.waitForFunction(
    (want) =>
      (globalThis as unknown as { document: { querySelector: (s: string) => DomNode | null } }).document
        .querySelector("#bands .band text")
        ?.textContent?.includes(want),
    "disputes",
  )
  const first = await page.$eval("#bands .band", (g) => {
    const el = g as unknown as DomNode
    const band = el.querySelector("rect")!.getBoundingClientRect()
    const lines = Array.from(el.querySelectorAll("tspan")).map((t) => t.getBoundingClientRect())
    return { text: el.querySelector("text")!.textContent ?? "", inside: lines.every((r) => r.left >= band.left && r.right <= band.right && r.top >= band.top) }
  })
  expect({ text: first.text.replace(/\s+/g, ""), inside: first.inside }).toEqual({ text: `Phase 1: ${longer}`.replace(/\s+/g, ""), inside: true })
  expect(await page.evaluate(() => (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset.layout)).toBe(
    layout,
  )
})
