// validate's checks of depends_on and validation_task_id: missing, repeated, self and parent dependencies, and
// cycles, each bounded so that the whole is linear in the file (docs/PERFORMANCE.md, "validate on hostile files").
import type { Path, RawFinding } from "./findings"
import { findCycles } from "../graph/graph"
import { filesOverlaps } from "../graph/parallelism"
import type { Task } from "../model/task-index"
import { closest } from "../cli/suggest"
import { lowerFirst } from "./validate-schema"

/** A task record as validate walked it: its path in the file, its label in messages, its ancestors' ids. */
export type Visited = { node: Record<string, unknown>; path: Path; label: string; ancestors: string[] }

/**
 * "did you mean" hints for missing dependencies per file: each compares with every id, so 100,000 missing
 * dependencies among 100,000 tasks would make 10^10 comparisons; later ones get the plain hint.
 */
const MAX_SUGGESTIONS = 10

/** The findings about each task's dependencies and validation task; `byId` holds the first task of each id. */
export function dependencyFindings(byId: Map<string, Visited>): RawFinding[] {
  const raw: RawFinding[] = []
  const ids = [...byId.keys()]
  const deps = new Map<string, string[]>()
  const edgeAt = new Map<string, number[]>() // where each edge of deps is in the task's depends_on
  const suggestions = { left: MAX_SUGGESTIONS }
  for (const [id, v] of byId) {
    const { edges, positions } = checkDependsOn(id, v, byId, ids, suggestions, raw)
    deps.set(id, edges)
    edgeAt.set(id, positions)
    checkValidationTask(id, v, byId, raw)
  }
  checkCycles(ids, deps, edgeAt, byId, raw)
  return raw
}

/**
 * One task's depends_on: each entry repeated, itself, missing or its parent is a finding; the rest are the
 * graph's edges, with where each is in the list (`positions`), for a cycle's finding to point at.
 */
function checkDependsOn(
  id: string,
  v: Visited,
  byId: Map<string, Visited>,
  ids: string[],
  suggestions: { left: number },
  raw: RawFinding[],
): { edges: string[]; positions: number[] } {
  const list = Array.isArray(v.node.depends_on) ? v.node.depends_on : []
  const scope = lowerFirst(v.label)
  const times = new Map<string, number>()
  for (const dep of list) if (typeof dep === "string") times.set(dep, (times.get(dep) ?? 0) + 1)
  const seen = new Set<string>()
  const edges: string[] = []
  const positions: number[] = []
  list.forEach((dep, i) => {
    if (typeof dep !== "string") return
    const at = [...v.path, "depends_on", i]
    if (seen.has(dep)) {
      // Reported once, at the second mention, with how many times it is listed.
      if (times.get(dep)! > 0) {
        const n = times.get(dep)!
        times.set(dep, 0)
        const often = n === 2 ? "twice" : `${n.toLocaleString("en")} times`
        raw.push({
          severity: "warning",
          message: `Task '${id}' lists '${dep}' ${often} in depends_on`,
          task_id: id,
          path: at,
          group: { kind: "listed twice", scope },
        })
      }
      return
    }
    seen.add(dep)
    if (dep === id)
      raw.push({ severity: "error", message: `Task '${id}' depends on itself`, task_id: id, path: at, hint: `remove '${id}' from its depends_on` })
    else if (!byId.has(dep)) {
      const near =
        suggestions.left-- > 0
          ? closest(
              dep,
              ids.filter((k) => k !== id),
            )
          : undefined
      raw.push({
        severity: "error",
        message: `Task '${id}' depends on '${dep}' which doesn't exist`,
        task_id: id,
        path: at,
        hint: near
          ? `did you mean '${near}'? Otherwise add the missing task or remove the dependency`
          : "add the missing task or correct/remove the dependency",
        group: { kind: "missing dependency", scope, item: dep },
      })
    } else if (v.ancestors.includes(dep)) {
      raw.push({
        severity: "error",
        message: `Task '${id}' depends on its parent '${dep}', which cannot be done before its subtasks`,
        task_id: id,
        path: at,
        hint: `remove '${dep}' from depends_on; list what '${dep}' itself depends on instead`,
      })
    } else {
      edges.push(dep)
      positions.push(i)
    }
  })
  return { edges, positions }
}

function checkValidationTask(id: string, v: Visited, byId: Map<string, Visited>, raw: RawFinding[]): void {
  const vt = v.node.validation_task_id
  if (typeof vt !== "string") return
  const at = [...v.path, "validation_task_id"]
  if (vt === id) raw.push({ severity: "error", message: `Task '${id}' names itself as its validation task`, task_id: id, path: at })
  else if (!byId.has(vt))
    raw.push({
      severity: "error",
      message: `Task '${id}' has validation_task_id '${vt}' which doesn't exist`,
      task_id: id,
      path: at,
      hint: "add the validating task or correct/remove validation_task_id",
    })
}

/** Cycles are listed whole up to a total linear in the file's tasks; the rest only counted. */
function checkCycles(ids: string[], deps: Map<string, string[]>, edgeAt: Map<string, number[]>, byId: Map<string, Visited>, raw: RawFinding[]): void {
  const { cycles, more } = findCycles(ids, deps, 4 * ids.length + 1_000)
  for (const { path: cycle, edge } of cycles) {
    const from = cycle[cycle.length - 2]
    raw.push({
      severity: "error",
      message: `Circular dependency detected: ${cycle.join(" → ")}`,
      task_id: cycle[0],
      path: [...byId.get(from)!.path, "depends_on", edgeAt.get(from)![edge]],
      hint: "correct or remove one of these dependencies",
    })
  }
  if (more > 0) {
    const last = raw.findLast((f) => f.message.startsWith("Circular dependency"))!
    Object.assign(last, { message: `${last.message} (and ${more.toLocaleString("en")} more circular dependencies, not listed)`, count: more + 1 })
  }
}

/**
 * Pairs of tasks with no dependency path between them that name the same files (`flow validate` only: a warning,
 * since both may run at once and their merges are likely to conflict). `visited`: every task record, in file order.
 */
export function filesOverlapFindings(tasks: readonly Task[], visited: readonly Visited[]): RawFinding[] {
  const at = new Map<string, Visited>()
  for (const v of visited) if (typeof v.node.id === "string" && !at.has(v.node.id)) at.set(v.node.id, v)
  // A done task's work is merged: nothing of it runs beside another any more.
  const open = (id: string) => at.get(id)!.node.status !== "done"
  return filesOverlaps(tasks)
    .filter(({ a, b }) => open(a) && open(b))
    .map(({ a, b, files }) => ({
      severity: "warning",
      message: `Tasks '${a}' and '${b}' may run at the same time (no dependency path between them) and both name ${files.map((f) => `'${f}'`).join(", ")}: their merges are likely to conflict`,
      task_id: b,
      path: [...at.get(b)!.path, "files"],
      atKey: true,
      hint: `make one depend on the other, or split the files so that each task has its own ('flow run' keeps them apart while other work is ready)`,
      // Many pairs with one task (a hostile file: all of them on one file) are one finding at that task.
      group: { kind: "files overlap", scope: lowerFirst(at.get(b)!.label), item: a },
    }))
}
