// How much of a task graph can run at once (docs/PLANNING.md, "The parallelism report"): its critical path
// (the longest chain of tasks that must run one after another, with its time where the tasks' times are
// known), its widest level (how many tasks could run together at most) and how many dependency edges it has
// per task. One analysis for `flow validate`, `flow generate`, `flow refine plan` and the inspector. Pure and
// linear in the tasks and edges.
import type { Parallelism } from "../model/json-shapes"
import { type Task, walkTaskTree } from "../model/task-index"
import { sharedFiles } from "./files-overlap"
export type { Parallelism }

/**
 * The graph of the tasks that do the work, by index in file order (subtasks after their parent), each with its
 * level: the length of the longest chain up to it (0 for a task in a cycle, which has none). Typed arrays and one
 * map of ids: `flow validate` of 10,000 tasks pays little for the report.
 */
type Levels = {
  tasks: Task[]
  /** a parent of subtasks: done by them, no task of a chain */
  parent: Uint8Array
  level: Int32Array
  /** the dependency a task's longest chain comes through (the first written, on a tie), -1 for none */
  via: Int32Array
  edges: number
  /** each task's dependencies: `deps.at[deps.start[i] .. deps.start[i + 1])` */
  deps: { start: Int32Array; at: Int32Array }
}

/** The tasks in file order, each task's subtasks right after it, with each task's parent index (-1 at the top). */
function flatten(roots: readonly Task[]): { tasks: Task[]; up: number[] } {
  const tasks: Task[] = []
  const up: number[] = []
  const at = new Map<Task, number>()
  walkTaskTree(roots, (task, parent) => {
    at.set(task, tasks.length)
    tasks.push(task)
    up.push(parent ? at.get(parent)! : -1)
  })
  return { tasks, up }
}

/**
 * The edges from → to (`to` waits for `from`), each once, in the order written: a task that does work waits for
 * its own and its ancestors' depends_on; a parent waits for its subtasks (it is done when they are). `written`
 * counts the depends_on entries that name a task, a repeat once (validate warns about the repeat).
 */
function edgesOf(tasks: readonly Task[], up: readonly number[], parent: Uint8Array): { from: number[]; to: number[]; written: number } {
  const n = tasks.length
  const index = new Map<string, number>()
  for (let i = 0; i < n; i++) if (!index.has(tasks[i].id)) index.set(tasks[i].id, i)
  const seen = new Int32Array(n).fill(-1) // seen[j] === i: task i already has the edge from j
  const from: number[] = []
  const to: number[] = []
  let written = 0
  const add = (i: number, task: Task, own: boolean) => {
    for (const d of task.depends_on ?? []) {
      const j = index.get(d)
      if (j === undefined || seen[j] === i) continue
      seen[j] = i
      if (own) written++
      if (!parent[i]) from.push(j), to.push(i)
    }
  }
  for (let i = 0; i < n; i++) {
    add(i, tasks[i], true)
    if (!parent[i]) for (let a = up[i]; a >= 0; a = up[a]) add(i, tasks[a], false)
  }
  for (let i = 0; i < n; i++) if (up[i] >= 0) from.push(i), to.push(up[i])
  return { from, to, written }
}

/** The edges grouped by one end, each group in the order given: node i's other ends are `at[start[i] .. start[i + 1])`. */
function group(by: readonly number[], other: readonly number[], n: number): { start: Int32Array; at: Int32Array } {
  const start = new Int32Array(n + 1)
  for (const i of by) start[i + 1]++
  for (let i = 0; i < n; i++) start[i + 1] += start[i]
  const at = new Int32Array(by.length)
  const fill = start.slice(0, n)
  for (let e = 0; e < by.length; e++) at[fill[by[e]]++] = other[e]
  return { start, at }
}

function levels(roots: readonly Task[]): Levels {
  const { tasks, up } = flatten(roots)
  const n = tasks.length
  const parent = new Uint8Array(n)
  for (const p of up) if (p >= 0) parent[p] = 1
  const { from, to, written } = edgesOf(tasks, up, parent)
  const deps = group(to, from, n)
  const dependents = group(from, to, n)
  // Kahn's order: a task's level is known once its dependencies' are. A task in a cycle is never ready.
  const waiting = new Int32Array(n)
  const ready: number[] = []
  for (let i = 0; i < n; i++) if ((waiting[i] = deps.start[i + 1] - deps.start[i]) === 0) ready.push(i)
  const level = new Int32Array(n)
  const via = new Int32Array(n).fill(-1)
  while (ready.length > 0) {
    const i = ready.pop()!
    for (let k = deps.start[i]; k < deps.start[i + 1]; k++) {
      const d = deps.at[k]
      if (via[i] < 0 || level[d] > level[via[i]]) via[i] = d
    }
    level[i] = (via[i] < 0 ? 0 : level[via[i]]) + (parent[i] ? 0 : 1)
    for (let k = dependents.start[i]; k < dependents.start[i + 1]; k++) if (--waiting[dependents.at[k]] === 0) ready.push(dependents.at[k])
  }
  return { tasks, parent, level, via, edges: written, deps }
}

/** The tasks that take work (not parents of subtasks) with a level, in file order, grouped by level. */
function byLevel({ tasks, parent, level }: Levels): Map<number, Task[]> {
  const out = new Map<number, Task[]>()
  for (let i = 0; i < tasks.length; i++) {
    if (parent[i] || level[i] === 0) continue
    const list = out.get(level[i])
    if (list) list.push(tasks[i])
    else out.set(level[i], [tasks[i]])
  }
  return out
}

/** The parallelism report of a task graph. Tasks in a cycle (which `flow validate` refuses) are left out of the chains. */
export function parallelism(roots: readonly Task[]): Parallelism {
  const graph = levels(roots)
  const { tasks, parent, level, via } = graph
  let end = -1
  let widest = { level: 0, tasks: [] as string[] }
  for (let i = 0; i < tasks.length; i++) if (!parent[i] && level[i] > 0 && (end < 0 || level[i] > level[end])) end = i
  for (const [l, list] of [...byLevel(graph)].sort((a, b) => a[0] - b[0])) {
    if (list.length > widest.tasks.length) widest = { level: l, tasks: list.map((t) => t.id) }
  }
  const chain: Task[] = []
  for (let i = end; i >= 0; i = via[i]) if (!parent[i]) chain.push(tasks[i])
  chain.reverse()
  const path = chain.map((t) => t.id)
  const times = chain.map(minutesOf).filter((m) => m !== undefined)
  return {
    tasks: tasks.length,
    edges: graph.edges,
    edges_per_task: tasks.length === 0 ? 0 : Math.round((graph.edges / tasks.length) * 100) / 100,
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
    if (list.length >= 3 && Math.max(...inside.level) === list.length) {
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

/** Two tasks that could run at once (no dependency path between them) and name the same files: a likely merge conflict. */
export type FilesOverlap = { a: string; b: string; files: string[] }

/** How many tasks the path checks of one graph may visit: past it, only tasks of one level are paired (a bound on a hostile file). */
const PATH_VISITS = 2_000_000

/**
 * Every pair of tasks with no dependency path between them (either way) whose `files` overlap
 * (lib/graph/files-overlap.ts), in file order. Tasks of one level have no path between them; for others the
 * later one's dependencies are walked back, no lower than the earlier one's level.
 */
export function filesOverlaps(tasks: readonly Task[]): FilesOverlap[] {
  const graph = levels(tasks)
  const { parent, level } = graph
  const withFiles: number[] = []
  for (let i = 0; i < graph.tasks.length; i++) if (!parent[i] && level[i] > 0 && (graph.tasks[i].files?.length ?? 0) > 0) withFiles.push(i)
  const stamp = new Int32Array(graph.tasks.length)
  let visits = 0
  let round = 0
  // Does `to` wait on `from`, through any chain? Levels only grow along a chain.
  const waitsOn = (to: number, from: number): boolean => {
    const stack = [to]
    stamp[to] = ++round
    while (stack.length > 0) {
      const i = stack.pop()!
      visits++
      for (let k = graph.deps.start[i]; k < graph.deps.start[i + 1]; k++) {
        const d = graph.deps.at[k]
        if (d === from) return true
        if (stamp[d] !== round && level[d] >= level[from]) (stamp[d] = round), stack.push(d)
      }
    }
    return false
  }
  const out: FilesOverlap[] = []
  for (let x = 0; x < withFiles.length; x++) {
    for (let y = x + 1; y < withFiles.length; y++) {
      const [a, b] = [graph.tasks[withFiles[x]], graph.tasks[withFiles[y]]]
      const files = sharedFiles(a.files, b.files)
      if (files.length === 0) continue
      const [i, j] = level[withFiles[x]] <= level[withFiles[y]] ? [withFiles[x], withFiles[y]] : [withFiles[y], withFiles[x]]
      if (level[i] !== level[j] && (visits > PATH_VISITS || waitsOn(j, i))) continue
      out.push({ a: a.id, b: b.id, files })
    }
  }
  return out
}

/** A task's time where flow knows it: how long it took when done, else the minutes its budget allows. */
function minutesOf(task: Task): number | undefined {
  if (task.started_at && task.completed_at) {
    const ms = Date.parse(task.completed_at) - Date.parse(task.started_at)
    if (Number.isFinite(ms) && ms >= 0) return ms / 60_000
  }
  return task.budget?.minutes
}

/** The report as `flow validate` and `flow generate` print it: a heading and its lines, indented. */
export function parallelismText(p: Parallelism): string {
  return `Parallelism:\n${parallelismLines(p)
    .map((l) => `  ${l}\n`)
    .join("")}`
}

/** The report as lines of text. */
function parallelismLines(p: Parallelism): string[] {
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
