// The inspector on a graph generated from a real PRD (issue 34): the largest fixture, test/fixtures/prds/
// library-loans.PRD.md (48 requirements under 8 numbered groups), through `flow plan --offline` and `flow
// generate`, then `flow view` in headless Chromium. No id leaves its box, no band title is cut, and the header
// reports the parallelism and shows the critical path. Screenshots in test-artifacts/.
import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { flow, ROOT, tempRepo, type TempDir } from "./helpers"
import { bandProblems, fairId, measureBands, measureIds, viewPage } from "./view-measure"

const ARTIFACTS = join(ROOT, "test-artifacts")
const PRD = readFileSync(join(ROOT, "test", "fixtures", "prds", "library-loans.PRD.md"), "utf8")

let dir: TempDir
let view: Awaited<ReturnType<typeof viewPage>>
let page: Page
let tasks: { id: string; phase?: number }[]
let phases: string[]

beforeAll(async () => {
  dir = await tempRepo({ "PRD.md": PRD, "plan.md": "" })
  for (const args of [["plan", "--offline"], ["generate"]]) {
    const r = await flow(dir.path, args)
    if (r.code !== 0) throw new Error(`flow ${args.join(" ")} failed: ${r.stderr}`)
  }
  tasks = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { id: string; phase?: number }[] }).tasks
  phases = [...dir.read("plan.md").matchAll(/^## (Phase \d+: .+)$/gm)].map((m) => m[1]!)
  // A screen of a wide monitor: the whole graph at a zoom where texts are drawn.
  view = await viewPage(dir, `#nodes .node[data-id="${tasks.at(-1)!.id}"]`, { width: 2560, height: 1440 })
  page = view.page
  await page.keyboard.press("f")
  mkdirSync(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: join(ARTIFACTS, "view-prd-library-loans.png") })
})

afterAll(async () => {
  await view?.[Symbol.asyncDispose]()
  await dir?.[Symbol.asyncDispose]()
})

test("every task of the generated graph has its id drawn inside its box, whole or fairly shortened", async () => {
  const measured = await measureIds(page)
  expect(measured.map((m) => m.id).sort()).toEqual(tasks.map((t) => t.id).sort())
  const wrong = measured.filter((m) => !(m.drawn && m.inside && fairId(m)))
  expect(wrong).toEqual([])
})

test("every phase band's title is drawn whole, inside its band, above its boxes", async () => {
  const bands = await measureBands(page)
  const bare = (t: string) => t.replace(/\s+/g, "")
  expect(bands.map((b) => bare(b.lines.map((l) => l.text).join(" ")))).toEqual(phases.map(bare))
  expect(await bandProblems(page, bands)).toEqual({ cut: bands.map(() => []), covered: bands.map(() => 0) })
})

test("the header reports the parallelism, and its button shows the critical path on the graph", async () => {
  const report = JSON.parse((await flow(dir.path, ["validate", "--json"])).stdout).parallelism
  const path: string[] = report.critical_path.tasks
  expect(await page.textContent("#critical")).toBe(`Critical path: ${path.length} tasks`)
  expect(await page.getAttribute("#critical", "title")).toContain(path.join(" → "))
  expect(await page.textContent("#parallelism")).toBe(`widest level ${report.widest_level.tasks.length} · ${report.edges_per_task} edges per task`)
  await page.click("#critical")
  const on = await page.$$eval("#nodes .node.on", (gs) => gs.map((g) => (g as unknown as { getAttribute: (n: string) => string }).getAttribute("data-id")))
  const hot = await page.$$eval("#edges .edge.hot", (es) =>
    es.map((e) => {
      const el = e as unknown as { getAttribute: (n: string) => string }
      return `${el.getAttribute("data-from")}>${el.getAttribute("data-to")}`
    }),
  )
  expect({ on: on.sort(), hot: hot.sort(), pressed: await page.getAttribute("#critical", "aria-pressed") }).toEqual({
    on: [...path].sort(),
    hot: path
      .slice(1)
      .map((id, i) => `${path[i]}>${id}`)
      .sort(),
    pressed: "true",
  })
  await page.screenshot({ path: join(ARTIFACTS, "view-prd-critical-path.png") })
  await page.click("#critical")
  expect(await page.$$eval("#nodes .node.on", (gs) => gs.length)).toBe(0)
})
