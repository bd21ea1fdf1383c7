// Tasks that name the same files (tasks.yaml `files`, from plan.md's `Files:` lines) and may be worked on at
// the same time: their merges are likely to conflict. One reading of "the same files" for `flow validate`,
// `flow refine plan`, the scheduler (which keeps such tasks apart when it can) and the prompt (which tells each
// agent of the other). Pure.
import type { Indexed, Task } from "../model/task-index"

/** The entries of `a` that overlap one of `b`: the same path, a folder and a path inside it, or a glob and a path it matches. */
export function sharedFiles(a: readonly string[] | undefined, b: readonly string[] | undefined): string[] {
  if (!a?.length || !b?.length) return []
  return a.filter((f) => b.some((g) => overlap(f, g)))
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

/** A task that may be at work beside another and names some of the same files. */
export type Beside = { task: Task; files: string[] }

/**
 * The tasks not done that may be worked on beside `taskId` (no dependency path between them either way, neither
 * part of the other) and name some of its files, in file order. Linear in the tasks and their dependencies.
 */
export function besideOnFiles(index: Map<string, Indexed>, taskId: string): Beside[] {
  const own = index.get(taskId)?.task
  if (!own?.files?.length) return []
  const linked = linkedTo(index, taskId)
  const out: Beside[] = []
  for (const { task } of index.values()) {
    if (task.status === "done" || task.subtasks?.length || linked.has(task.id)) continue
    const files = sharedFiles(own.files, task.files)
    if (files.length > 0) out.push({ task, files })
  }
  return out
}

/** The ids with a dependency path to or from `taskId`, its ancestors and subtasks included (and itself). */
function linkedTo(index: Map<string, Indexed>, taskId: string): Set<string> {
  // A task waits for its own and its ancestors' depends_on; a parent waits for its subtasks.
  const waitsFor = new Map<string, string[]>()
  const waitedBy = new Map<string, string[]>()
  const edge = (from: string, to: string) => {
    ;(waitsFor.get(to) ?? waitsFor.set(to, []).get(to)!).push(from)
    ;(waitedBy.get(from) ?? waitedBy.set(from, []).get(from)!).push(to)
  }
  for (const e of index.values()) {
    for (let a: Indexed | undefined = e; a; a = a.parent ? index.get(a.parent.id) : undefined) for (const d of a.task.depends_on ?? []) edge(d, e.task.id)
    if (e.parent) edge(e.task.id, e.parent.id)
  }
  const seen = new Set<string>([taskId])
  for (const next of [waitsFor, waitedBy]) {
    const stack = [taskId]
    while (stack.length > 0) for (const n of next.get(stack.pop()!) ?? []) if (!seen.has(n)) seen.add(n), stack.push(n)
  }
  return seen
}
