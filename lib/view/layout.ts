// Positions of the inspector's graph, computed by elkjs (layered) in the server, on a worker thread (layout-engine.ts), and sent to the page.
// One ELK graph per phase (a large phase in parts of at most MAX_BAND_TASKS boxes), placed side by side as bands: a whole 2,000-task graph takes about 12 s in one
// ELK run (and 200 s with ELK's own partitioning by phase), ten phases of 200 take about 2 s together, and
// the bands come out without overlap. Dependencies inside a phase are routed by ELK; those between phases
// are drawn by the page from box to box. Subtasks are compound children of their parent.
// The result depends only on the graph's structure (ids, nesting, phases, dependencies): node boxes have
// a fixed size, so a title or status change never lays out again (see `layoutKey`).
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk.bundled.js"
import { type Indexed, type Task, topLevelOf } from "../model/task-index"
import { layoutGraph } from "./layout-engine"
import { type Box, type LaidEdge, routeEdges } from "./route"

export type { Box, LaidEdge }

export const NODE_WIDTH = 200
export const NODE_HEIGHT = 48
/** room above a parent's children for its own label */
const PARENT_HEADER = 30
const BAND_GAP = 80
const BAND_HEADER = 50
/** Room below the lowest box of the tallest band, for the routes that pass under a column. */
const BOTTOM_LANE = 16

/** A phase's band; a large phase is cut into several parts (`part` of `parts`, from 1). */
export type PhaseBand = Box & { phase: number | null; part: number; parts: number }

/** Absolute positions of every task box and phase band, and the routes of the dependencies ELK drew. */
export type Layout = {
  key: string
  width: number
  height: number
  phases: PhaseBand[]
  nodes: Record<string, Box>
  /** every dependency, routed around the boxes: by ELK inside a band, by route.ts between bands */
  edges: LaidEdge[]
}

export type Progress = (done: number, total: number) => void

/** The phase group of each task: its top-level task's phase (the group `flow list` shows it in). */
export function phaseGroups(index: Map<string, Indexed>): Map<number | null, Indexed[]> {
  const groups = new Map<number | null, Indexed[]>()
  for (const entry of index.values()) {
    if (entry.parent) continue
    const phase = entry.task.phase ?? null
    groups.set(phase, [...(groups.get(phase) ?? []), entry])
  }
  return new Map([...groups].sort(([a], [b]) => (a ?? Number.POSITIVE_INFINITY) - (b ?? Number.POSITIVE_INFINITY)))
}

/** Part of every key: changing how layouts are computed or stored makes saved ones stale. */
const LAYOUT_FORMAT = 3
/**
 * The most boxes one ELK run gets. ELK's time grows much faster than the graph (2,000 tasks in one run: 12 s;
 * in ten runs of 200: 1.4 s), so a larger phase, or a file without phases, is cut into parts by dependency
 * depth, laid side by side like phases.
 */
export const MAX_BAND_TASKS = 250

/** A hash of what the layout depends on: ids, nesting, phases of top-level tasks, dependencies. */
export function layoutKey(index: Map<string, Indexed>): string {
  const parts: string[] = [`format ${LAYOUT_FORMAT} ${NODE_WIDTH}x${NODE_HEIGHT}`]
  for (const { task, parent } of index.values()) {
    parts.push(`${task.id}|${parent?.id ?? ""}|${parent ? "" : (task.phase ?? "")}|${(task.depends_on ?? []).join(",")}`)
  }
  return Bun.hash(parts.join("\n")).toString(36)
}

const LAYOUT_OPTIONS = {
  "elk.algorithm": "layered",
  "elk.direction": "RIGHT",
  "elk.hierarchyHandling": "INCLUDE_CHILDREN",
  "elk.layered.spacing.nodeNodeBetweenLayers": "50",
  "elk.spacing.nodeNode": "18",
  "elk.json.shapeCoords": "ROOT",
  "elk.json.edgeCoords": "ROOT",
}

export type Band = { phase: number | null; tops: Indexed[]; part: number; parts: number }

/** The bands to lay out: one per phase, or several for a phase with more than MAX_BAND_TASKS boxes. */
export function bands(index: Map<string, Indexed>): Band[] {
  const out: Band[] = []
  for (const [phase, tops] of phaseGroups(index)) {
    const sizes = new Map(tops.map((e) => [e.task.id, boxCount(e.task)]))
    const total = [...sizes.values()].reduce((a, b) => a + b, 0)
    if (total <= MAX_BAND_TASKS) {
      out.push({ phase, tops, part: 1, parts: 1 })
      continue
    }
    // Deepest-first order of dependencies inside the phase, so each part mostly depends on the parts before it.
    const depth = depthsWithin(tops)
    const ordered = [...tops].sort((a, b) => (depth.get(a.task.id) as number) - (depth.get(b.task.id) as number) || a.order - b.order)
    const parts: Indexed[][] = [[]]
    let size = 0
    for (const entry of ordered) {
      const n = sizes.get(entry.task.id) as number
      if (size > 0 && size + n > MAX_BAND_TASKS) {
        parts.push([])
        size = 0
      }
      parts[parts.length - 1].push(entry)
      size += n
    }
    parts.forEach((part, i) => {
      out.push({ phase, tops: part, part: i + 1, parts: parts.length })
    })
  }
  return out
}

/** Boxes a top-level task takes: itself and every subtask. */
function boxCount(task: Task): number {
  let n = 1
  for (const sub of task.subtasks ?? []) n += boxCount(sub)
  return n
}

/** Longest chain of dependencies among these top-level tasks, walked without recursion (chains can be long). */
function depthsWithin(tops: Indexed[]): Map<string, number> {
  const byId = new Map(tops.map((e) => [e.task.id, e.task]))
  const depth = new Map<string, number>()
  const inside = (id: string) => (byId.get(id)?.depends_on ?? []).filter((dep) => byId.has(dep))
  for (const start of byId.keys()) {
    if (depth.has(start)) continue
    const stack = [start]
    const open = new Set<string>()
    while (stack.length > 0) {
      const id = stack[stack.length - 1]
      if (depth.has(id)) {
        stack.pop()
        continue
      }
      const waiting = inside(id).filter((dep) => !depth.has(dep) && !open.has(dep))
      if (waiting.length > 0 && !open.has(id)) {
        open.add(id)
        stack.push(...waiting)
        continue
      }
      // A cycle cannot occur in a valid file; a dependency still open is counted as depth 0.
      depth.set(id, Math.max(0, ...inside(id).map((dep) => (depth.get(dep) ?? -1) + 1)))
      open.delete(id)
      stack.pop()
    }
  }
  return depth
}

/** The ELK graph of one band: its tasks (subtasks as compound children) and the dependencies inside it. */
export function bandGraph(index: Map<string, Indexed>, { phase, tops, part }: Band): ElkNode {
  const inBand = new Set<string>()
  const children = tops.map((e) => elkNode(e.task, inBand))
  const edges: ElkExtendedEdge[] = []
  for (const id of inBand) {
    for (const dep of new Set(index.get(id)?.task.depends_on ?? [])) {
      if (inBand.has(dep)) edges.push({ id: `${dep}>${id}`, sources: [dep], targets: [id] })
    }
  }
  return { id: `band-${phase}-${part}`, layoutOptions: LAYOUT_OPTIONS, children, edges }
}

/**
 * Lays out every band: all are sent to the ELK worker at once (it lays them out one after another) and
 * placed side by side as they come back, with a progress call for each.
 */
export async function computeLayout(index: Map<string, Indexed>, onProgress?: Progress): Promise<Layout> {
  const todo = bands(index)
  const layout: Layout = { key: layoutKey(index), width: 0, height: 0, phases: [], nodes: {}, edges: [] }
  const results = todo.map((band) => layoutGraph(bandGraph(index, band)))
  // Every band's promise is awaited below, in order; until then a failure must not count as unhandled.
  for (const r of results) r.catch(() => undefined)
  let x = 0
  let done = 0
  for (const [i, { phase, part, parts }] of todo.entries()) {
    onProgress?.(done, todo.length)
    const out = await results[i]
    const dx = x
    const dy = BAND_HEADER
    const walk = (nodes: ElkNode[] | undefined) => {
      for (const n of nodes ?? []) {
        layout.nodes[n.id] = { x: (n.x ?? 0) + dx, y: (n.y ?? 0) + dy, width: n.width ?? NODE_WIDTH, height: n.height ?? NODE_HEIGHT }
        walk(n.children)
      }
    }
    walk(out.children)
    for (const e of out.edges ?? []) {
      const s = e.sections?.[0]
      if (!s) continue
      const pts = [s.startPoint, ...(s.bendPoints ?? []), s.endPoint].map((p): [number, number] => [round(p.x + dx), round(p.y + dy)])
      layout.edges.push({ from: e.sources[0], to: e.targets[0], points: pts })
    }
    const width = Math.max(out.width ?? 0, NODE_WIDTH)
    const height = (out.height ?? 0) + BAND_HEADER
    layout.phases.push({ phase, part, parts, x, y: 0, width, height })
    layout.height = Math.max(layout.height, height)
    x += width + BAND_GAP
    done++
  }
  layout.height += BOTTOM_LANE
  for (const band of layout.phases) band.height = layout.height
  layout.width = Math.max(0, x - BAND_GAP)
  layout.edges.push(...routeBetweenBands(index, todo, layout))
  onProgress?.(done, todo.length)
  return layout
}

/** The routes of the dependencies whose ends are in different bands (ELK saw only one band at a time). */
function routeBetweenBands(index: Map<string, Indexed>, todo: Band[], layout: Layout): LaidEdge[] {
  const bandOf = new Map<string, number>()
  todo.forEach((band, i) => {
    for (const top of band.tops) bandOf.set(top.task.id, i)
  })
  const parents = new Map<string, string>()
  const across: { from: string; to: string }[] = []
  for (const entry of index.values()) {
    if (entry.parent) parents.set(entry.task.id, entry.parent.id)
    const band = bandOf.get(topLevelOf(index, entry).task.id)
    for (const dep of new Set(entry.task.depends_on ?? [])) {
      const from = index.get(dep)
      if (from && bandOf.get(topLevelOf(index, from).task.id) !== band) across.push({ from: dep, to: entry.task.id })
    }
  }
  return routeEdges({ nodes: layout.nodes, parents, top: BAND_HEADER - 8, bottom: layout.height }, across)
}

function elkNode(task: Task, seen: Set<string>): ElkNode {
  seen.add(task.id)
  const subtasks = task.subtasks ?? []
  if (subtasks.length === 0) return { id: task.id, width: NODE_WIDTH, height: NODE_HEIGHT }
  return {
    id: task.id,
    layoutOptions: { "elk.padding": `[top=${PARENT_HEADER},left=12,bottom=12,right=12]` },
    children: subtasks.map((s) => elkNode(s, seen)),
  }
}

function round(n: number): number {
  return Math.round(n * 10) / 10
}
