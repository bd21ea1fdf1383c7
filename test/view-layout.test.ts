// The inspector's layout (lib/view/layout.ts) as a unit: bands per phase, large phases cut into parts in
// dependency order, boxes that never overlap across bands, a key that ignores everything but structure, and
// routes for every dependency that go around the boxes (lib/view/route.ts).
import { expect, test } from "bun:test"
import { indexTasks, type Task } from "../lib/model/task-index"
import { bands, computeLayout, layoutKey, MAX_BAND_TASKS } from "../lib/view/layout"
import { crossings, randomGraph } from "./fixtures/graph-geometry"

/** n tasks without a phase, listed last-first (so file order is no help), each depending on two earlier ones. */
function unphased(n: number): Task[] {
  const id = (i: number) => `t-${i}`
  const tasks: Task[] = []
  for (let i = n - 1; i >= 0; i--) {
    const deps = [i - 1, i - 7].filter((d) => d >= 0).map(id)
    tasks.push({ id: id(i), title: `Task ${i}`, status: "todo", instructions: "x", ...(deps.length ? { depends_on: deps } : {}) })
  }
  return tasks
}

test("a phase larger than MAX_BAND_TASKS is cut into parts, each depending only on itself and the parts before", async () => {
  const index = indexTasks({ tasks: unphased(600) })
  const parts = bands(index)
  expect(parts.map((b) => ({ phase: b.phase, part: b.part, parts: b.parts, size: b.tops.length }))).toEqual([
    { phase: null, part: 1, parts: 3, size: MAX_BAND_TASKS },
    { phase: null, part: 2, parts: 3, size: MAX_BAND_TASKS },
    { phase: null, part: 3, parts: 3, size: 600 - 2 * MAX_BAND_TASKS },
  ])
  const partOf = new Map(parts.flatMap((b) => b.tops.map((e) => [e.task.id, b.part] as const)))
  for (const { task } of index.values())
    for (const dep of task.depends_on ?? []) expect(partOf.get(dep) as number).toBeLessThanOrEqual(partOf.get(task.id) as number)

  const layout = await computeLayout(index)
  expect(layout.phases.map((b) => b.part)).toEqual([1, 2, 3])
  for (const { task } of index.values()) {
    const box = layout.nodes[task.id]
    const band = layout.phases[(partOf.get(task.id) as number) - 1]
    expect(box.x >= band.x && box.x + box.width <= band.x + band.width).toBe(true)
  }
})

test("the layout key changes with structure only: statuses, titles and notes keep it", () => {
  const base: Task[] = [
    { id: "a", title: "A", status: "todo", instructions: "x", phase: 1 },
    {
      id: "b",
      title: "B",
      status: "todo",
      instructions: "x",
      phase: 1,
      depends_on: ["a"],
      subtasks: [{ id: "b-1", title: "B1", status: "todo", instructions: "y" }],
    },
  ]
  const key = (tasks: Task[]) => layoutKey(indexTasks({ tasks }))
  const same = structuredClone(base)
  same[0].status = "done"
  same[1].title = "Renamed"
  same[1].ai_notes = ["a note"]
  expect(key(same)).toBe(key(base))
  const moved = structuredClone(base)
  moved[1].phase = 2
  const rewired = structuredClone(base)
  rewired[1].depends_on = []
  const nested = structuredClone(base)
  nested[1].subtasks = []
  expect(new Set([key(base), key(moved), key(rewired), key(nested)]).size).toBe(4)
})

test("every dependency gets a route, and none runs through a box it does not end at: larger random graphs", async () => {
  const found: string[] = []
  // Larger than the browser test's (test/view-graph.test.ts): more boxes per column, more columns to cross.
  for (let seed = 1001; seed <= 1020; seed++) {
    const tasks = randomGraph(seed, 80)
    const index = indexTasks({ tasks })
    const layout = await computeLayout(index)
    const parents = new Map<string, string>()
    const deps: string[] = []
    for (const { task, parent } of index.values()) {
      if (parent) parents.set(task.id, parent.id)
      for (const d of new Set(task.depends_on ?? [])) deps.push(`${d}>${task.id}`)
    }
    const routed = layout.edges.map((e) => `${e.from}>${e.to}`)
    if (routed.sort().join() !== deps.sort().join()) found.push(`seed ${seed}: routes ${routed.length}, dependencies ${deps.length}`)
    for (const f of crossings(layout.nodes, parents, layout.edges)) found.push(`seed ${seed}: ${f}`)
  }
  expect(found).toEqual([])
})
