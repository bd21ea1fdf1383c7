// `flow validate`'s checks (SPEC section 7 and more), as data: a list of findings in file order.
import { collapse, type Finding, type Group, type Path, type RawFinding } from "./findings"
import { mayHaveDuplicateKeys } from "./duplicate-keys"
import { isTaskFile, STEP_KEYS, TASK_KEYS } from "../model/generated/task-file-check"
import { fencedShellBlocks } from "../model/shell-blocks"
import { closest } from "../cli/suggest"
import { dependencyFindings, filesOverlapFindings, type Visited } from "./validate-deps"
import { lowerFirst, schemaFinding, schemaProblems } from "./validate-schema"
import { parseForPositions, positionOf, syntaxErrors, type ParsedForPositions } from "./yaml-position"
import { branchNameProblem } from "./branch-name"
import { mayHaveAnchors, textLimitFindings } from "./yaml-limits"
import { isAlias, visit } from "yaml"
import type { Task } from "../model/task-index"

/** The findings, the number of tasks, and the parsed data when the text parsed (the parallelism report reads it). */
export type Validation = { findings: Finding[]; taskCount: number; data?: unknown }

type Rec = Record<string, unknown>

/** Subtasks nest at most this deep: every level costs each command that walks the tree. */
const MAX_SUBTASK_DEPTH = 32

const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * A task's `worktree` naming the branch its work merges into: its commits would be on the target already,
 * and landing would report them merged and checked when no check ever ran (docs/RUN.md, "Landing").
 */
export function targetWorktree(label: string, branch: string, path: (string | number)[], id: string | undefined): RawFinding {
  return {
    severity: "error",
    message: `${label}: worktree '${branch}' is the branch finished work merges into; a task works on a branch of its own`,
    task_id: id,
    path,
    hint: `leave worktree out (flow uses 'flow/<id>') or name another branch`,
  }
}

/**
 * All findings for the text of a tasks file, errors and warnings, sorted by line; repeats (one kind in one task,
 * or in the file) are one finding with a count. `targets`: the branches finished work merges into; a task's
 * `worktree` naming one is refused (flow validate). `overlaps`: also the pairs of tasks that may run at once over the
 * same files (flow validate). Time and output are linear in the text's size (the pairs: lib/graph/parallelism.ts).
 */
export async function validateText(text: string, opts: { targets?: string[]; overlaps?: boolean } = {}): Promise<Validation> {
  // Checked before any parser sees the text: nesting that would overflow a parser's stack, lone CRs.
  const limits = textLimitFindings(text)
  if (limits.length > 0) return { findings: limits, taskCount: 0 }
  let data: unknown
  try {
    data = Bun.YAML.parse(text)
  } catch (cause) {
    return { findings: syntaxFindings(text, cause), taskCount: 0 }
  }
  const { raw, taskCount } = await checkData(data, opts.targets)
  // The graph's shape, for `flow validate` alone (every read of tasks.yaml validates it): only a valid graph has one.
  if (opts.overlaps && !raw.some((f) => f.severity === "error")) {
    const tasks = (data as { tasks: Task[] }).tasks
    raw.push(...filesOverlapFindings(tasks, walkTasks(tasks)))
  }
  if (raw.length === 0 && !mayHaveDuplicateKeys(text) && !mayHaveAnchors(text)) return { findings: [], taskCount, data }
  const parsed = parseForPositions(text)
  // Bun.YAML accepted the text; `yaml` may still see duplicate keys, which Bun silently merged.
  const found: Finding[] = collapse(
    syntaxErrors(parsed).map((e) => ({ severity: "error" as const, message: `YAML: ${e.message}`, ...e.position, group: yamlGroup(e.message) })),
  )
  for (const { path, atKey, ...f } of collapse(raw)) found.push({ ...f, ...positionOf(parsed, path, atKey) })
  found.push(...collapse(anchorFindings(parsed)))
  return { findings: found.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)), taskCount, data }
}

/** A YAML error repeated through the file (a key written 100,000 times) is one finding with a count. */
const yamlGroup = (message: string): Group => ({ kind: `yaml ${message}`, scope: "the file" })

/**
 * Anchors and aliases: flow edits a value in place, so an edit through an alias (or of an anchored value that
 * aliases repeat) would change other tasks or not read back; every writer refuses such a file, and so does validate.
 */
function anchorFindings(parsed: ParsedForPositions): (Finding & { group: Group })[] {
  const out: (Finding & { group: Group })[] = []
  const hint = "write the value out in each place: flow edits tasks.yaml in place and cannot edit through YAML anchors and aliases"
  visit(parsed.doc, (_key, node) => {
    if (!node) return
    const offset = (node as { range?: number[] }).range?.[0]
    const at = offset === undefined ? {} : (({ line, col }) => ({ line, column: col }))(parsed.lines.linePos(offset))
    const [kind, name] = isAlias(node) ? (["alias", `*${node.source}`] as const) : (["anchor", `&${(node as { anchor?: string }).anchor}`] as const)
    if (kind === "alias" || (node as { anchor?: string }).anchor)
      out.push({
        severity: "error",
        message: `YAML ${kind} '${name}' (flow does not support anchors and aliases)`,
        hint,
        ...at,
        group: { kind, scope: "the file" },
      })
  })
  return out
}

function syntaxFindings(text: string, cause: unknown): Finding[] {
  const errors = syntaxErrors(parseForPositions(text))
  const hint = "fix the YAML syntax at that position (indentation, a missing colon, or quotes around text with ': ')"
  if (errors.length === 0) return [{ severity: "error", message: `YAML: ${(cause as Error).message}`, hint }]
  return collapse(errors.map((e) => ({ severity: "error" as const, message: `YAML: ${e.message}`, hint, ...e.position, group: yamlGroup(e.message) })))
}

/** The checks that need only the data; each finding carries the path whose position it reports. */
export async function checkData(data: unknown, targets: string[] = []): Promise<{ raw: RawFinding[]; taskCount: number }> {
  const raw: RawFinding[] = []
  if (!isRec(data) || !Array.isArray(data.tasks)) {
    raw.push({
      severity: "error",
      message: "The file has no top-level 'tasks' list",
      hint: "start the file with 'tasks:' followed by a list of tasks (run 'flow generate' to make one from plan.md)",
      path: isRec(data) && "tasks" in data ? ["tasks"] : [],
    })
    return { raw, taskCount: 0 }
  }
  checkTopLevelKeys(data, raw)
  const visited = walkTasks(data.tasks)
  // The generated check says yes or no without loading arktype; only a file that fails it pays for arktype's
  // import (about 0.2 s) to learn what is wrong.
  if (!isTaskFile(data)) await checkSchema(data as Rec & { tasks: unknown[] }, visited, raw)
  const seen: Seen = { byId: new Map(), stepIds: new Set(), targets }
  for (const v of visited) checkTask(v, seen, raw)
  raw.push(...dependencyFindings(seen.byId))
  raw.push(...checkPhaseList(data.phases, visited))
  return { raw, taskCount: visited.length }
}

// The steps push into `raw` rather than return lists: a spread into push fails past some hundreds of thousands of
// arguments, and a hostile file's findings of one kind can be as many as its lines.

function checkTopLevelKeys(data: Rec, raw: RawFinding[]): void {
  for (const key of Object.keys(data)) {
    if (key !== "tasks" && key !== "phases")
      raw.push({
        severity: "warning",
        message: `Unknown top-level key '${key}' (kept as is)`,
        path: [key],
        atKey: true,
        group: { kind: "top-level key", scope: "the file" },
      })
  }
}

async function checkSchema(data: Rec & { tasks: unknown[] }, visited: Visited[], raw: RawFinding[]): Promise<void> {
  const labelAt = new Map<string, Visited>(visited.map((v) => [v.path.join("."), v]))
  for (const problem of await schemaProblems(data)) raw.push(schemaFinding(problem, labelAt))
}

/** What the checks of one task need from the rest of the file: the ids so far, the branches work merges into. */
type Seen = { byId: Map<string, Visited>; stepIds: Set<string>; targets: string[] }

/** One task's findings, in the order they are reported: its id, its fields, its worktree, its depth, its steps. */
function checkTask(v: Visited, seen: Seen, raw: RawFinding[]): void {
  const { node, path, label } = v
  const id = typeof node.id === "string" ? node.id : undefined
  if (id !== undefined) {
    if (seen.byId.has(id)) {
      raw.push({
        severity: "error",
        message: `Duplicate task id '${id}'`,
        task_id: id,
        path: [...path, "id"],
        hint: "ids must be unique across the whole file, subtasks included: rename one of them",
        group: { kind: `duplicate id ${id}` },
      })
    } else seen.byId.set(id, v)
  }
  const steps = Array.isArray(node.steps) ? node.steps : []
  checkTaskFields(v, id, steps, raw)
  if (typeof node.worktree === "string") checkWorktree(v, id, node.worktree, seen.targets, raw)
  if (v.ancestors.length > MAX_SUBTASK_DEPTH) {
    raw.push({
      severity: "error",
      message: `${label} is nested ${v.ancestors.length} levels of subtasks deep; flow allows at most ${MAX_SUBTASK_DEPTH}`,
      task_id: id,
      path,
      hint: "flatten the tree: make deep subtasks top-level tasks with depends_on",
    })
  }
  checkSteps(v, id, steps, seen.stepIds, raw)
}

/** A task's fields against each other: instructions or steps, known keys, and what subtasks make unreachable. */
function checkTaskFields({ node, path, label }: Visited, id: string | undefined, steps: unknown[], raw: RawFinding[]): void {
  if (node.instructions === undefined && steps.length === 0) {
    raw.push({
      severity: "error",
      message: `${label} is missing required field 'instructions'`,
      task_id: id,
      path,
      hint: "add 'instructions:' with what to do, or give the task 'steps'",
    })
  }
  const unknown = unknownKeys(label, Object.keys(node), TASK_KEYS, path, id)
  if (unknown) raw.push(unknown)
  if (Array.isArray(node.subtasks) && node.subtasks.length > 0 && typeof node.instructions === "string" && fencedShellBlocks(node.instructions).length > 0) {
    // flow runs subtasks, never their parent (docs/RUN.md, "Scheduling"): the script agent would not run these.
    raw.push({
      severity: "warning",
      message: `${label} has subtasks, so flow never runs it: the \`\`\`sh block in its instructions never runs`,
      task_id: id,
      path: [...path, "instructions"],
      hint: "move the block into the instructions of the subtask that should run it (or of a new subtask)",
    })
  }
  if (steps.length > 0 && Array.isArray(node.subtasks) && node.subtasks.length > 0) {
    // Such a task would wait for its subtasks, then be marked done with its steps never run (as generate refuses it).
    raw.push({
      severity: "error",
      message: `${label} has both steps and subtasks: a task has one or the other`,
      task_id: id,
      path: [...path, "subtasks"],
      atKey: true,
      hint: "move the steps into a subtask of their own, or turn the subtasks into steps",
    })
  }
}

function checkWorktree({ path, label }: Visited, id: string | undefined, worktree: string, targets: string[], raw: RawFinding[]): void {
  const problem = branchNameProblem(worktree)
  if (problem)
    raw.push({
      severity: "error",
      message: `${label}: worktree '${worktree}' is not a usable branch name: ${problem}`,
      task_id: id,
      path: [...path, "worktree"],
      hint: "use letters, digits, '-', '_', '.' and '/', like 'feature/login' (or leave worktree out: flow uses 'flow/<id>')",
    })
  else if (targets.includes(worktree)) raw.push(targetWorktree(label, worktree, [...path, "worktree"], id))
}

/** A task's steps: ids unique across the file (`stepIds`, shared by every task), known keys. */
function checkSteps({ path, label }: Visited, id: string | undefined, steps: unknown[], stepIds: Set<string>, raw: RawFinding[]): void {
  steps.forEach((step, i) => {
    if (!isRec(step)) return
    const stepPath = [...path, "steps", i]
    if (typeof step.id === "string") {
      if (stepIds.has(step.id)) {
        raw.push({
          severity: "error",
          message: `Duplicate step id '${step.id}'`,
          task_id: id,
          path: [...stepPath, "id"],
          hint: "step ids must be unique across the file: use '<task_id>.<n>'",
          group: { kind: "duplicate step id", scope: lowerFirst(label) },
        })
      }
      stepIds.add(step.id)
    }
    const stepLabel = `Step ${typeof step.id === "string" ? `'${step.id}'` : `#${i + 1}`} of ${lowerFirst(label)}`
    const unknown = unknownKeys(stepLabel, Object.keys(step), STEP_KEYS, stepPath, id)
    if (unknown) raw.push({ ...unknown, group: { kind: "step field", scope: lowerFirst(label) } })
  })
}

/**
 * The top-level `phases:` list against itself and the tasks. Both findings are warnings, like a dependency
 * listed twice: nothing breaks (the first title of a number is the one shown, lib/plan/plan-phases.ts), but one
 * of the two titles is never seen, and a title for a phase no task has names nothing.
 */
function checkPhaseList(phases: unknown, visited: Visited[]): RawFinding[] {
  if (!Array.isArray(phases)) return []
  const used = new Set(visited.map((v) => v.node.phase).filter((p) => typeof p === "number"))
  const first = new Map<number, number>()
  const out: RawFinding[] = []
  phases.forEach((entry, i) => {
    if (!isRec(entry) || typeof entry.number !== "number") return
    const n = entry.number
    const path = ["phases", i, "number"]
    const earlier = first.get(n)
    if (earlier !== undefined) {
      out.push({
        severity: "warning",
        message: `Phase ${n} is listed twice in 'phases' (entries #${earlier + 1} and #${i + 1})`,
        path,
        group: { kind: "phase twice", scope: "the file" },
        hint: `only the first title is shown: remove entry #${i + 1} or give it another number`,
      })
      return
    }
    first.set(n, i)
    if (!used.has(n))
      out.push({
        severity: "warning",
        message: `Phase entry #${i + 1} names phase ${n}, which no task has`,
        path,
        group: { kind: "unused phase", scope: "the file" },
        hint: `give a task 'phase: ${n}', or remove the entry`,
      })
  })
  return out
}

/** Every task record, subtasks included, in file order. */
export function walkTasks(tasks: unknown[]): Visited[] {
  const out: Visited[] = []
  const stack: { list: unknown[]; i: number; path: Path; parent?: Visited }[] = [{ list: tasks, i: 0, path: ["tasks"] }]
  while (stack.length > 0) {
    const top = stack[stack.length - 1]
    if (top.i >= top.list.length) {
      stack.pop()
      continue
    }
    const i = top.i++
    const node = top.list[i]
    if (!isRec(node)) continue
    const path = [...top.path, i]
    const id = typeof node.id === "string" && node.id ? node.id : undefined
    const parent = top.parent
    const label = id ? `Task '${id}'` : parent ? `Subtask #${i + 1} of ${lowerFirst(parent.label)}` : `Task #${i + 1}`
    const ancestors = parent ? [...parent.ancestors, ...(typeof parent.node.id === "string" ? [parent.node.id] : [])] : []
    const v: Visited = { node, path, label, ancestors }
    out.push(v)
    if (Array.isArray(node.subtasks)) stack.push({ list: node.subtasks, i: 0, path: [...path, "subtasks"], parent: v })
  }
  return out
}

/**
 * One warning for the fields of a record flow does not know, at the first of them: each named (up to a few)
 * with the known field it likely meant.
 */
function unknownKeys(label: string, keys: string[], known: ReadonlySet<string>, path: Path, taskId?: string): RawFinding | undefined {
  const unknown = keys.filter((k) => !known.has(k))
  if (unknown.length === 0) return undefined
  const named = unknown.slice(0, 3)
  const near = named.map((k) => [k, closest(k, known)] as const).filter(([, n]) => n !== undefined)
  const rest = unknown.length - named.length
  const list = named.map((k) => `'${k}'`)
  const names =
    rest > 0 ? `${list.join(", ")} and ${rest.toLocaleString("en")} more` : list.length > 1 ? `${list.slice(0, -1).join(", ")} and ${list.at(-1)}` : list[0]
  return {
    severity: "warning",
    message:
      unknown.length === 1
        ? `${label} has unknown field ${names} (kept as is; flow does not use it)`
        : `${label} has unknown fields ${names} (kept as is; flow does not use them)`,
    path: [...path, unknown[0]],
    atKey: true,
    task_id: taskId,
    hint:
      unknown.length === 1 && near.length === 1
        ? `did you mean '${near[0][1]}'?`
        : near.length > 0
          ? near.map(([k, n]) => `'${k}': did you mean '${n}'?`).join(" ")
          : undefined,
    ...(unknown.length > 1 && { count: unknown.length }),
  }
}
