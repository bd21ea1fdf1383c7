// Routes of the dependencies ELK does not draw: those between phase bands (each band is its own ELK graph,
// docs/VIEW.md "Layout"). Drawn straight from box to box they ran through the boxes between (issue 26:
// `c → chk` read as `c → st`). ELK's layered layout leaves a clean structure to route in: inside a band,
// or inside a parent box, the boxes stand in columns (ELK's layers), with free channels between the
// columns from top to bottom, and free rows between the boxes of a column. A route leaves its box sideways,
// runs through the channels and crosses each column in a free row, so it never enters a box other than its
// two ends (and their parents). Orthogonal, like ELK's routes inside a band; a route costs a binary search
// of the free rows for each column it crosses.
import { partitionPoint } from "../cli/partition-point"

export type Box = { x: number; y: number; width: number; height: number }
export type LaidEdge = { from: string; to: string; points: [number, number][] }

type Column = { x0: number; x1: number; members: string[]; free: [number, number][] }
type Container = { box: Box; columns: Column[]; columnOf: Map<string, number> }

/** Keep-out around boxes: a route passes no closer than this to a box it does not end at. */
const CLEARANCE = 5
const ROOT = ""

export type RouteInput = {
  nodes: Record<string, Box>
  /** each box's parent box, for subtasks */
  parents: Map<string, string>
  /** the drawing's extent in y that routes may use (above and below the boxes) */
  top: number
  bottom: number
}

/** Orthogonal routes of `edges`, each between boxes of different columns of the top level (different bands). */
export function routeEdges(input: RouteInput, edges: { from: string; to: string }[]): LaidEdge[] {
  const router = new Router(input, buildContainers(input))
  const paths = edges.map((e) => ({ ...e, path: router.route(e.from, e.to) }))
  placeLanes(router.turns)
  const out: LaidEdge[] = []
  for (const { from, to, path } of paths) {
    if (!path) continue
    const points = path.flatMap((p): [number, number][] => {
      if (!("channel" in p)) return [p]
      const [y1, y2] = p.reversed ? [p.yAhead, p.yBehind] : [p.yBehind, p.yAhead]
      return [
        [p.x, y1],
        [p.x, y2],
      ]
    })
    out.push({ from, to, points: simplify(points) })
  }
  return out
}

/**
 * A route's vertical stretch in a channel, from the height of its horizontal on one side to the other's;
 * its x is chosen once every route is known (placeLanes). "Box" sides are where the horizontal leaves or
 * enters a box rather than a free row.
 */
type Turn = {
  channel: string
  a: number
  b: number
  source: string
  dir: number
  yBehind: number
  yAhead: number
  boxBehind: boolean
  boxAhead: boolean
  x: number
  /** on the way into a target, walked from the target out: drawn the other way round */
  reversed?: boolean
}
type PathItem = [number, number] | Turn

function buildContainers({ nodes, parents, top, bottom }: RouteInput): Map<string, Container> {
  const children = new Map<string, string[]>()
  for (const id of Object.keys(nodes)) {
    const parent = parents.get(id) ?? ROOT
    const list = children.get(parent)
    if (list) list.push(id)
    else children.set(parent, [id])
  }
  const containers = new Map<string, Container>()
  for (const [parent, ids] of children) {
    const box =
      parent === ROOT
        ? { x: Number.NEGATIVE_INFINITY, y: top, width: Number.POSITIVE_INFINITY, height: bottom - top }
        : // Below the parent's header line, above its bottom border.
          { ...nodes[parent], y: nodes[parent].y + 24, height: nodes[parent].height - 27 }
    containers.set(parent, columnsOf(box, ids, nodes, parent === ROOT ? CLEARANCE : 3))
  }
  return containers
}

/** The columns of a container's boxes (their x-ranges merged) and each column's free rows. */
function columnsOf(box: Box, ids: string[], nodes: Record<string, Box>, clearance: number): Container {
  const sorted = [...ids].sort((a, b) => nodes[a].x - nodes[b].x)
  const columns: Column[] = []
  for (const id of sorted) {
    const n = nodes[id]
    const last = columns[columns.length - 1]
    if (last && n.x < last.x1 + 1) {
      last.x1 = Math.max(last.x1, n.x + n.width)
      last.members.push(id)
    } else columns.push({ x0: n.x, x1: n.x + n.width, members: [id], free: [] })
  }
  const columnOf = new Map<string, number>()
  columns.forEach((c, i) => {
    for (const id of c.members) columnOf.set(id, i)
    const taken = c.members.map((id) => [nodes[id].y - clearance, nodes[id].y + nodes[id].height + clearance]).sort((a, b) => a[0] - b[0])
    let y = box.y
    for (const [lo, hi] of taken) {
      if (lo > y) c.free.push([y, lo])
      y = Math.max(y, hi)
    }
    if (box.y + box.height > y) c.free.push([y, box.y + box.height])
  })
  return { box, columns, columnOf }
}

class Router {
  /** every route's vertical stretches, for placeLanes */
  readonly turns: Turn[] = []

  constructor(
    private readonly input: RouteInput,
    private readonly containers: Map<string, Container>,
  ) {}

  route(from: string, to: string): PathItem[] | undefined {
    const { nodes } = this.input
    const top = (id: string) => {
      let t = id
      for (let p = this.input.parents.get(t); p !== undefined; p = this.input.parents.get(t)) t = p
      return t
    }
    const root = this.containers.get(ROOT) as Container
    const [cs, ct] = [root.columnOf.get(top(from)), root.columnOf.get(top(to))]
    if (cs === undefined || ct === undefined || cs === ct || !nodes[from] || !nodes[to]) return undefined
    const dir = cs < ct ? 1 : -1
    const lane = hash(from)
    const out = this.leave(from, from, dir, port(nodes[to], this.isParent(to), "in"), lane, "out")
    // The way into the target is the way out of it towards the source, reversed.
    const into = this.leave(to, from, -dir, out.y, lane, "in")
    const path = out.path
    let y = out.y
    let fromBox = true
    for (let j = cs + dir; j !== ct; j += dir) {
      y = this.cross(root, j, y, into.y, dir, from, lane, fromBox, path)
      fromBox = false
    }
    this.turn(root, ct, y, into.y, dir, from, fromBox, true, path)
    for (const p of into.path.reverse()) {
      if ("channel" in p) p.reversed = true
      path.push(p)
    }
    return path
  }

  /**
   * From the side of `id` facing `dir` out to the side of its top-level box, through its parents' columns:
   * the path, and the height at which it leaves the top-level box.
   */
  private leave(id: string, source: string, dir: number, goal: number, lane: number, end: "in" | "out"): { path: PathItem[]; y: number } {
    const { nodes, parents } = this.input
    const n = nodes[id]
    let y = port(n, this.isParent(id), end)
    const path: PathItem[] = [[side(n, dir), y]]
    let cur = id
    for (let parent = parents.get(cur); parent !== undefined; parent = parents.get(cur)) {
      const c = this.containers.get(parent) as Container
      const aim = Math.min(Math.max(goal, c.box.y), c.box.y + c.box.height)
      const k = c.columnOf.get(cur) as number
      // The first horizontal comes out of a box (the task, or the parent just left), the next from free rows.
      let fromBox = true
      for (let j = k + dir; j >= 0 && j < c.columns.length; j += dir) {
        y = this.cross(c, j, y, aim, dir, source, lane, fromBox, path)
        fromBox = false
      }
      cur = parent
    }
    path.push([side(nodes[cur], dir), y])
    return { path, y }
  }

  private isParent(id: string): boolean {
    return this.containers.has(id)
  }

  /** Crosses column `j` of `c` (coming from direction `dir`) in its free row best for `goal`; the new height. */
  private cross(c: Container, j: number, y: number, goal: number, dir: number, source: string, lane: number, fromBox: boolean, path: PathItem[]): number {
    const next = pickRow(c.columns[j].free, y, goal, lane)
    this.turn(c, j, y, next, dir, source, fromBox, false, path)
    return next
  }

  /** Moves from height `y` to `to` in the channel just before column `j` (seen from `dir`). */
  private turn(c: Container, j: number, y: number, to: number, dir: number, source: string, boxBehind: boolean, boxAhead: boolean, path: PathItem[]): void {
    if (to === y) return
    const col = c.columns[j]
    const prev = c.columns[j - dir]
    const [a, b] = dir > 0 ? [prev ? prev.x1 : col.x0 - 24, col.x0] : [col.x1, prev ? prev.x0 : col.x1 + 24]
    const turn: Turn = { channel: `${c.box.x},${c.box.y},${Math.min(a, b)}`, a, b, source, dir, yBehind: y, yAhead: to, boxBehind, boxAhead, x: (a + b) / 2 }
    this.turns.push(turn)
    path.push(turn)
  }
}

/**
 * The x of every vertical stretch. In each channel one lane per source (routes from one box run together
 * and read as one bundle), lanes apart from each other. Lanes are ordered so that a horizontal that leaves
 * a box on the channel's left never runs past the lane of one entering a box on its right at the same
 * height (drawn over each other, they read as one arrow: the issue's `c → st`); then routes turning down
 * and up are ordered to cross each other as little as they can.
 */
function placeLanes(turns: Turn[]): void {
  const channels = new Map<string, Turn[]>()
  for (const t of turns) {
    const list = channels.get(t.channel)
    if (list) list.push(t)
    else channels.set(t.channel, [t])
  }
  for (const list of channels.values()) {
    const bySource = new Map<string, Turn[]>()
    for (const t of list) {
      const group = bySource.get(t.source)
      if (group) group.push(t)
      else bySource.set(t.source, [t])
    }
    const lanes = [...bySource.values()].map((group) => {
      // Seen from the channel: which horizontal is on the left and which on the right.
      const left = (t: Turn) => (t.dir > 0 ? { y: t.yBehind, box: t.boxBehind } : { y: t.yAhead, box: t.boxAhead })
      const right = (t: Turn) => (t.dir > 0 ? { y: t.yAhead, box: t.boxAhead } : { y: t.yBehind, box: t.boxBehind })
      const boxLeft = group.some((t) => left(t).box)
      const boxRight = group.some((t) => right(t).box)
      const [yl, yr] = [left(group[0]).y, right(group[0]).y]
      return { group, rank: boxLeft === boxRight ? 1 : boxLeft ? 0 : 2, down: yr > yl, key: yr > yl ? -yl : yl }
    })
    lanes.sort((p, q) => p.rank - q.rank || Number(p.down) - Number(q.down) || p.key - q.key)
    const { a, b } = list[0]
    const [lo, hi] = a < b ? [a, b] : [b, a]
    const step = Math.min(8, (hi - lo) / (lanes.length + 1))
    const first = (lo + hi) / 2 - (step * (lanes.length - 1)) / 2
    lanes.forEach((lane, i) => {
      for (const t of lane.group) t.x = round(first + i * step)
    })
  }
}

/**
 * The height to cross a column at: `y` itself when its row is free; else in the free row that makes the
 * shortest way on to `goal`, at the point nearest the straight way.
 */
function pickRow(free: [number, number][], y: number, goal: number, lane: number): number {
  // The rows are in order and apart: the best is the one holding y, else one of the two beside it (any
  // other is farther from y, and no nearer the goal than the one beside it on the goal's side).
  const lo = partitionPoint(free.length, (i) => free[i][1] < y)
  if (lo < free.length && free[lo][0] <= y) return y
  let best = y
  let cost = Number.POSITIVE_INFINITY
  const [near, far] = y < goal ? [y, goal] : [goal, y]
  for (const row of [free[lo - 1], free[lo]]) {
    if (row === undefined) continue
    const [a, b] = row
    // The point of the row nearest to the stretch between y and the goal.
    let at = b < near ? b : a > far ? a : Math.max(a, Math.min(b, y))
    // Not on the row's very edge, and each source at its own height: across a narrow gap between two
    // boxes, a few pixels from the near edge in a wide row.
    const inset = Math.min((b - a) * (0.15 + 0.7 * lane), 3 + 10 * lane)
    if (at === a) at = a + inset
    else if (at === b) at = b - inset
    const c = Math.abs(y - at) + Math.abs(at - goal)
    if (c < cost - 0.5 || (Math.abs(c - cost) <= 0.5 && Math.abs(at - y) < Math.abs(best - y))) {
      cost = c
      best = at
    }
  }
  return round(best)
}

/**
 * Where a route meets a box: arrows leave a little above the middle of the side and come in a little below,
 * so that where boxes of neighbouring columns stand level (ELK starts every band at the same height) a
 * route leaving one is never drawn in line with another entering the other. A parent's is on its header.
 */
function port(b: Box, parent: boolean, end: "in" | "out"): number {
  if (parent) return b.y + (end === "out" ? 10 : 18)
  return b.y + b.height * (end === "out" ? 0.4 : 0.6)
}

function side(b: Box, dir: number): number {
  return dir > 0 ? b.x + b.width : b.x
}

/** Drops points that add no bend. */
function simplify(pts: [number, number][]): [number, number][] {
  const out: [number, number][] = []
  for (const p of pts) {
    const last = out[out.length - 1]
    if (last && last[0] === p[0] && last[1] === p[1]) continue
    const before = out[out.length - 2]
    if (before && last && ((before[0] === last[0] && last[0] === p[0]) || (before[1] === last[1] && last[1] === p[1]))) out[out.length - 1] = p
    else out.push(p)
  }
  return out
}

/** A number in [0, 1) from a string: FNV-1a, then mixed (murmur3's finaliser) so that "a" and "b" land apart. */
function hash(s: string): number {
  let h = 2166136261
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32
}

function round(n: number): number {
  return Math.round(n * 10) / 10
}
