// How much of a task graph can run at once (docs/PLANNING.md, "The parallelism report"): its critical path
// (the longest chain of tasks that must run one after another, with its time where the tasks' times are
// known), its widest level (how many tasks could run together at most) and how many dependency edges it has
// per task. One analysis for `flow validate`, `flow generate`, `flow refine plan` and the inspector. Pure and
// linear in the tasks and edges.
import type { Parallelism } from "../model/json-shapes"
import type { Task } from "../model/task-index"
export type { Parallelism }

type Node = { task: Task; deps: string[]; parent?: Node; children: Node[] }

/** The graph of the tasks that do the work, each with its level (the length of the longest chain up to it). */
type Levels = { nodes: Map<string, Node>; level: Map<string, number>; via: Map<string, string | undefined>; edges: number }

function levels(tasks: readonly Task[]): Levels {
  const nodes = new Map<string, Node>()
  const walk = (list: readonly Task[], parent?: Node) => {
    for (const task of list) {
      const node: Node = { task, deps: [], parent, children: [] }
      if (!nodes.has(task.id)) nodes.set(task.id, node)
      parent?.children.push(node)
      walk(task.subtasks ?? [], node)
    }
  }
  walk(tasks)
  let edges = 0
  for (const node of nodes.values()) {
    // A dependency written twice is one edge of the graph (validate warns about the repeat).
    edges += new Set(node.task.depends_on ?? []).size
    if (node.children.length > 0) {
      // A parent is done when its subtasks are: it waits for them, and they wait for what it depends on.
      node.deps = node.children.map((c) => c.task.id)
      continue
    }
    const deps = new Set<string>()
    for (let n: Node | undefined = node; n; n = n.parent) for (const d of n.task.depends_on ?? []) if (nodes.has(d)) deps.add(d)
    node.deps = [...deps]
  }
  // Kahn's order: a node's level is known once its dependencies' are.
  const waiting = new Map<string, number>()
  const dependents = new Map<string, string[]>()
  for (const [id, node] of nodes) {
    waiting.set(id, node.deps.length)
    for (const d of node.deps) {
      const list = dependents.get(d)
      if (list) list.push(id)
      else dependents.set(d, [id])
    }
  }
  const level = new Map<string, number>()
  const via = new Map<string, string | undefined>()
  const ready = [...nodes.keys()].filter((id) => waiting.get(id) === 0)
  while (ready.length > 0) {
    const id = ready.pop()!
    const node = nodes.get(id)!
    let best: string | undefined
    for (const d of node.deps) if (best === undefined || level.get(d)! > level.get(best)!) best = d
    level.set(id, (best === undefined ? 0 : level.get(best)!) + (node.children.length > 0 ? 0 : 1))
    via.set(id, best)
    for (const next of dependents.get(id) ?? []) {
      const left = waiting.get(next)! - 1
      waiting.set(next, left)
      if (left === 0) ready.push(next)
    }
  }
  return { nodes, level, via, edges }
}

/** The tasks that take work (not parents of subtasks) with a level, in file order, grouped by level. */
function byLevel({ nodes, level }: Levels): Map<number, Node[]> {
  const out = new Map<number, Node[]>()
  for (const n of nodes.values()) {
    const l = level.get(n.task.id)
    if (n.children.length > 0 || l === undefined) continue
    const list = out.get(l)
    if (list) list.push(n)
    else out.set(l, [n])
  }
  return out
}

/** The parallelism report of a task graph. Tasks in a cycle (which `flow validate` refuses) are left out of the chains. */
export function parallelism(tasks: readonly Task[]): Parallelism {
  const graph = levels(tasks)
  const { nodes, level, via } = graph
  let end: string | undefined
  let widest = { level: 0, tasks: [] as string[] }
  for (const [l, list] of [...byLevel(graph)].sort((a, b) => a[0] - b[0])) {
    if (end === undefined || l > level.get(end)!) end = list[0].task.id
    if (list.length > widest.tasks.length) widest = { level: l, tasks: list.map((n) => n.task.id) }
  }
  const path: string[] = []
  for (let id = end; id !== undefined; id = via.get(id)) if (nodes.get(id)!.children.length === 0) path.push(id)
  path.reverse()
  const times = path.map((id) => minutesOf(nodes.get(id)!.task)).filter((m) => m !== undefined)
  return {
    tasks: nodes.size,
    edges: graph.edges,
    edges_per_task: nodes.size === 0 ? 0 : Math.round((graph.edges / nodes.size) * 100) / 100,
    critical_path: { tasks: path, minutes: times.length > 0 ? Math.round(times.reduce((a, b) => a + b, 0)) : null, timed: times.length },
    widest_level: widest,
  }
}

/**
 * A phase whose tasks cannot run side by side: `chained` when its tasks (three or more) form one chain,
 * `all-to-all` when each of its tasks depends on the same tasks of other phases, more edges than one gate
 * between them would take (every task of one phase times every task of another).
 */
export type PhaseShape = { phase: number; shape: "chained" | "all-to-all"; tasks: string[]; on: string[] }

/** The phases of the top-level tasks that are all chained or all-to-all. */
export function phaseShapes(tasks: readonly Task[]): PhaseShape[] {
  const phases = new Map<number, Task[]>()
  for (const t of tasks) {
    if (t.phase === undefined) continue
    const list = phases.get(t.phase)
    if (list) list.push(t)
    else phases.set(t.phase, [t])
  }
  const out: PhaseShape[] = []
  for (const [phase, list] of [...phases].sort((a, b) => a[0] - b[0])) {
    const ids = new Set(list.map((t) => t.id))
    const inside = levels(list.map((t) => ({ ...t, subtasks: undefined, depends_on: t.depends_on?.filter((d) => ids.has(d)) })))
    if (list.length >= 3 && Math.max(...inside.level.values()) === list.length) {
      out.push({ phase, shape: "chained", tasks: list.map((t) => t.id), on: [] })
      continue
    }
    const outside = list.map((t) =>
      (t.depends_on ?? [])
        .filter((d) => !ids.has(d))
        .sort()
        .join("\0"),
    )
    const on = outside[0] ? outside[0].split("\0") : []
    // Flagged when one gate would take fewer edges: 2 tasks on 2 others are 4 edges either way.
    if (list.length * on.length > list.length + on.length && outside.every((o) => o === outside[0]))
      out.push({ phase, shape: "all-to-all", tasks: list.map((t) => t.id), on })
  }
  return out
}

/** Two tasks that could run at once (they share a level) and name the same files: a likely merge conflict. */
export type FilesOverlap = { a: string; b: string; files: string[] }

/** Every pair of tasks of one level whose `files` overlap (the same path, a folder and a path inside it, or a glob and a path it matches). */
export function filesOverlaps(tasks: readonly Task[]): FilesOverlap[] {
  const out: FilesOverlap[] = []
  for (const list of byLevel(levels(tasks)).values()) {
    const withFiles = list.filter((n) => (n.task.files?.length ?? 0) > 0)
    for (let i = 0; i < withFiles.length; i++) {
      for (let j = i + 1; j < withFiles.length; j++) {
        const a = withFiles[i].task
        const b = withFiles[j].task
        const shared = a.files!.filter((f) => b.files!.some((g) => overlap(f, g)))
        if (shared.length > 0) out.push({ a: a.id, b: b.id, files: shared })
      }
    }
  }
  return out
}

function overlap(a: string, b: string): boolean {
  const [x, y] = [plainPath(a), plainPath(b)]
  if (x === y || x.startsWith(`${y}/`) || y.startsWith(`${x}/`)) return true
  const glob = (p: string) => /[*?[]/.test(p)
  if (glob(x) && glob(y)) {
    const [px, py] = [x.split(/[*?[]/)[0], y.split(/[*?[]/)[0]]
    return px.startsWith(py) || py.startsWith(px)
  }
  if (glob(x)) return globRegex(x).test(y)
  if (glob(y)) return globRegex(y).test(x)
  return false
}

function plainPath(p: string): string {
  return p.replace(/^\.\//, "").replace(/\/+$/, "")
}

function globRegex(glob: string): RegExp {
  const source = glob.replace(/[.+^${}()|\\]/g, "\\$&").replace(/\*\*\/?|\*|\?/g, (m) => (m.startsWith("**") ? ".*" : m === "*" ? "[^/]*" : "[^/]"))
  return new RegExp(`^${source}(?:/.*)?$`)
}

/** A task's time where flow knows it: how long it took when done, else the minutes its budget allows. */
function minutesOf(task: Task): number | undefined {
  if (task.started_at && task.completed_at) {
    const ms = Date.parse(task.completed_at) - Date.parse(task.started_at)
    if (Number.isFinite(ms) && ms >= 0) return ms / 60_000
  }
  return task.budget?.minutes
}

/** The report as lines of text: `flow validate` and `flow generate` print them. */
export function parallelismLines(p: Parallelism): string[] {
  const path = p.critical_path
  const chain = path.tasks.length > 8 ? [...path.tasks.slice(0, 4), "…", ...path.tasks.slice(-3)] : path.tasks
  const time =
    path.minutes === null
      ? ""
      : `, ${duration(path.minutes)}${path.timed < path.tasks.length ? ` for the ${path.timed} of ${path.tasks.length} with a known time` : ""}`
  return [
    `critical path: ${count(path.tasks.length, "task")}${chain.length > 0 ? ` (${chain.join(" → ")})` : ""}${time}`,
    `widest level: ${count(p.widest_level.tasks.length, "task")} can run at once`,
    `edges: ${p.edges} for ${count(p.tasks, "task")} (${p.edges_per_task} per task)`,
  ]
}

function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`
}

function duration(minutes: number): string {
  if (minutes < 60) return `${minutes}m`
  const h = Math.floor(minutes / 60)
  return minutes % 60 === 0 ? `${h}h` : `${h}h${minutes % 60}m`
}
