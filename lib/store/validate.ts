// `flow validate`'s checks (SPEC section 7 and more), as data: a list of findings in file order.
import type { Finding, Path, RawFinding } from "./findings"
import { mayHaveDuplicateKeys } from "./duplicate-keys"
import { findCycles } from "../graph/graph"
import { STEP_STATUSES, TASK_STATUSES } from "../model/statuses"
import { isTaskFile, STEP_KEYS, TASK_KEYS } from "../model/generated/task-file-check"
import { closest, toKebab } from "../cli/suggest"
import { parseForPositions, positionOf, syntaxErrors, type ParsedForPositions } from "./yaml-position"
import { branchNameProblem } from "./branch-name"
import { mayHaveAnchors, textLimitFindings } from "./yaml-limits"
import { isAlias, visit } from "yaml"

export type Validation = { findings: Finding[]; taskCount: number }

type Rec = Record<string, unknown>

/** Subtasks nest at most this deep: every level costs each command that walks the tree. */
const MAX_SUBTASK_DEPTH = 32
type Visited = { node: Rec; path: Path; label: string; ancestors: string[] }

const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v)

/** All findings for the text of a tasks file, errors and warnings, sorted by line. */
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

/** `targets`: the branches finished work merges into; a task's `worktree` naming one is refused (flow validate). */
export async function validateText(text: string, opts: { targets?: string[] } = {}): Promise<Validation> {
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
  if (raw.length === 0 && !mayHaveDuplicateKeys(text) && !mayHaveAnchors(text)) return { findings: [], taskCount }
  const parsed = parseForPositions(text)
  // Bun.YAML accepted the text; `yaml` may still see duplicate keys, which Bun silently merged.
  const found: Finding[] = syntaxErrors(parsed).map((e) => ({
    severity: "error",
    message: `YAML: ${e.message}`,
    ...e.position,
  }))
  for (const { path, atKey, ...f } of raw) found.push({ ...f, ...positionOf(parsed, path, atKey) })
  found.push(...anchorFindings(parsed))
  return { findings: found.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)), taskCount }
}

/**
 * Anchors and aliases: flow edits a value in place, so an edit through an alias (or of an anchored value that
 * aliases repeat) would change other tasks or not read back; every writer refuses such a file, and so does validate.
 */
function anchorFindings(parsed: ParsedForPositions): Finding[] {
  const out: Finding[] = []
  const hint = "write the value out in each place: flow edits tasks.yaml in place and cannot edit through YAML anchors and aliases"
  visit(parsed.doc, (_key, node) => {
    if (!node) return
    const offset = (node as { range?: number[] }).range?.[0]
    const at = offset === undefined ? {} : (({ line, col }) => ({ line, column: col }))(parsed.lines.linePos(offset))
    if (isAlias(node)) out.push({ severity: "error", message: `YAML alias '*${node.source}' (flow does not support anchors and aliases)`, hint, ...at })
    else if ((node as { anchor?: string }).anchor)
      out.push({
        severity: "error",
        message: `YAML anchor '&${(node as { anchor?: string }).anchor}' (flow does not support anchors and aliases)`,
        hint,
        ...at,
      })
  })
  return out
}

function syntaxFindings(text: string, cause: unknown): Finding[] {
  const errors = syntaxErrors(parseForPositions(text))
  const hint = "fix the YAML syntax at that position (indentation, a missing colon, or quotes around text with ': ')"
  if (errors.length === 0) return [{ severity: "error", message: `YAML: ${(cause as Error).message}`, hint }]
  return errors.map((e) => ({ severity: "error", message: `YAML: ${e.message}`, hint, ...e.position }))
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
  for (const key of Object.keys(data)) {
    if (key !== "tasks" && key !== "phases") raw.push({ severity: "warning", message: `Unknown top-level key '${key}' (kept as is)`, path: [key], atKey: true })
  }

  const visited = walk(data.tasks)
  const byId = new Map<string, Visited>()
  // The generated check says yes or no without loading arktype; only a file that fails it pays for arktype's
  // import (about 0.2 s) to learn what is wrong.
  const out = isTaskFile(data) ? undefined : await explainSchemaErrors(data)
  if (out) {
    const labelAt = new Map<string, Visited>(visited.map((v) => [v.path.join("."), v]))
    for (const e of out)
      raw.push(
        schemaFinding(
          e.code,
          [...e.path].map((k) => (typeof k === "number" ? k : String(k))),
          problemOf(e),
          labelAt,
          e.data,
        ),
      )
  }

  const stepIds = new Set<string>()
  for (const v of visited) {
    const { node, path, label } = v
    const id = typeof node.id === "string" ? node.id : undefined
    if (id !== undefined) {
      if (byId.has(id)) {
        raw.push({
          severity: "error",
          message: `Duplicate task id '${id}'`,
          task_id: id,
          path: [...path, "id"],
          hint: "ids must be unique across the whole file, subtasks included: rename one of them",
        })
      } else byId.set(id, v)
    }
    const steps = Array.isArray(node.steps) ? node.steps : []
    if (node.instructions === undefined && steps.length === 0) {
      raw.push({
        severity: "error",
        message: `${label} is missing required field 'instructions'`,
        task_id: id,
        path,
        hint: "add 'instructions:' with what to do, or give the task 'steps'",
      })
    }
    for (const key of Object.keys(node)) if (!TASK_KEYS.has(key)) raw.push(unknownKey(label, key, TASK_KEYS, [...path, key], id))
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
    if (typeof node.worktree === "string") {
      const problem = branchNameProblem(node.worktree)
      if (problem)
        raw.push({
          severity: "error",
          message: `${label}: worktree '${node.worktree}' is not a usable branch name: ${problem}`,
          task_id: id,
          path: [...path, "worktree"],
          hint: "use letters, digits, '-', '_', '.' and '/', like 'feature/login' (or leave worktree out: flow uses 'flow/<id>')",
        })
      else if (targets.includes(node.worktree)) raw.push(targetWorktree(label, node.worktree, [...path, "worktree"], id))
    }
    if (v.ancestors.length > MAX_SUBTASK_DEPTH) {
      raw.push({
        severity: "error",
        message: `${label} is nested ${v.ancestors.length} levels of subtasks deep; flow allows at most ${MAX_SUBTASK_DEPTH}`,
        task_id: id,
        path,
        hint: "flatten the tree: make deep subtasks top-level tasks with depends_on",
      })
    }
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
          })
        }
        stepIds.add(step.id)
      }
      const stepLabel = `Step ${typeof step.id === "string" ? `'${step.id}'` : `#${i + 1}`} of ${lowerFirst(label)}`
      for (const key of Object.keys(step)) if (!STEP_KEYS.has(key)) raw.push(unknownKey(stepLabel, key, STEP_KEYS, [...stepPath, key], id))
    })
  }

  const deps = new Map<string, string[]>()
  for (const [id, v] of byId) {
    const list = Array.isArray(v.node.depends_on) ? v.node.depends_on : []
    const seen = new Set<string>()
    const edges: string[] = []
    list.forEach((dep, i) => {
      if (typeof dep !== "string") return
      const at = [...v.path, "depends_on", i]
      if (seen.has(dep)) raw.push({ severity: "warning", message: `Task '${id}' lists '${dep}' twice in depends_on`, task_id: id, path: at })
      seen.add(dep)
      if (dep === id)
        raw.push({ severity: "error", message: `Task '${id}' depends on itself`, task_id: id, path: at, hint: `remove '${id}' from its depends_on` })
      else if (!byId.has(dep)) {
        const near = closest(
          dep,
          [...byId.keys()].filter((k) => k !== id),
        )
        raw.push({
          severity: "error",
          message: `Task '${id}' depends on '${dep}' which doesn't exist`,
          task_id: id,
          path: at,
          hint: near
            ? `did you mean '${near}'? Otherwise add the missing task or remove the dependency`
            : "add the missing task or correct/remove the dependency",
        })
      } else if (v.ancestors.includes(dep)) {
        raw.push({
          severity: "error",
          message: `Task '${id}' depends on its parent '${dep}', which cannot be done before its subtasks`,
          task_id: id,
          path: at,
          hint: `remove '${dep}' from depends_on; list what '${dep}' itself depends on instead`,
        })
      } else edges.push(dep)
    })
    deps.set(id, edges)
    const vt = v.node.validation_task_id
    if (typeof vt === "string") {
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
  }
  raw.push(...checkPhaseList(data.phases, visited))
  for (const cycle of findCycles([...byId.keys()], deps)) {
    const [from, to] = cycle.slice(-2)
    const v = byId.get(from)!
    const i = (v.node.depends_on as unknown[]).indexOf(to)
    raw.push({
      severity: "error",
      message: `Circular dependency detected: ${cycle.join(" → ")}`,
      task_id: cycle[0],
      path: [...v.path, "depends_on", i],
      hint: "correct or remove one of these dependencies",
    })
  }
  return { raw, taskCount: visited.length }
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
        hint: `give a task 'phase: ${n}', or remove the entry`,
      })
  })
  return out
}

/** Every task record, subtasks included, in file order. */
function walk(tasks: unknown[]): Visited[] {
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

function unknownKey(label: string, key: string, known: ReadonlySet<string>, path: Path, taskId?: string): RawFinding {
  const near = closest(key, known)
  return {
    severity: "warning",
    message: `${label} has unknown field '${key}' (kept as is; flow does not use it)`,
    path,
    atKey: true,
    task_id: taskId,
    hint: near ? `did you mean '${near}'?` : undefined,
  }
}

/** Turns one arktype problem into a finding that names the task and the field. */
function schemaFinding(code: string, path: Path, problem: string, tasks: Map<string, Visited>, actual: unknown): RawFinding {
  if (path[0] === "phases") return phaseFinding(code, path, problem)
  let split = path.length
  while (split > 0 && !tasks.has(path.slice(0, split).join("."))) split--
  const task = split > 0 ? tasks.get(path.slice(0, split).join(".")) : undefined
  const label = task?.label ?? "The file"
  const taskId = typeof task?.node.id === "string" ? task.node.id : undefined
  const field = path.slice(split)
  const stepIndex = field[0] === "steps" && typeof field[1] === "number" ? field[1] : undefined
  const key = String(field[field.length - 1])
  const step = stepIndex === undefined || !Array.isArray(task?.node.steps) ? undefined : task.node.steps[stepIndex]
  const stepName = isRec(step) && typeof step.id === "string" && key !== "id" ? `'${step.id}'` : `#${(stepIndex ?? 0) + 1}`
  const where = stepIndex === undefined ? label : `Step ${stepName} of ${lowerFirst(label)}`
  const base = { severity: "error" as const, task_id: taskId, path }
  if (code === "required") return { ...base, message: `${where} is missing required field '${key}'` }
  if (key === "id" && stepIndex === undefined && typeof actual === "string") {
    return {
      ...base,
      message: `Task id '${actual}' is not kebab-case`,
      hint: `ids become branch and folder names: use lowercase letters, digits and single hyphens, like '${toKebab(actual) || "my-task"}'`,
    }
  }
  if (key === "id" && typeof actual === "string") {
    return { ...base, message: `${where}: step id '${actual}' is not of the form '<task_id>.<n>'` }
  }
  if (key === "status") {
    const allowed = stepIndex === undefined ? TASK_STATUSES : STEP_STATUSES
    return { ...base, message: `${where}: status must be one of ${allowed.join(", ")} (was ${JSON.stringify(actual)})` }
  }
  const rest = stepIndex === undefined ? field : field.slice(2)
  const name = rest.map((k, i) => (typeof k === "number" ? `[${k}]` : i === 0 ? k : `.${k}`)).join("")
  if (split === 0 && field.length === 2 && field[0] === "tasks") {
    return { ...base, message: `Task #${Number(field[1]) + 1} must be a mapping of fields ${problem.replace(/^must be an object /, "")}` }
  }
  return { ...base, message: `${where}: ${name || "value"} ${problem}` }
}

/** A problem in the top-level `phases:` list of titles (lib/model/schema.ts Phase). */
function phaseFinding(code: string, path: Path, problem: string): RawFinding {
  const where = typeof path[1] === "number" ? `Phase entry #${path[1] + 1}` : "'phases'"
  const field = path.slice(2).join(".")
  const hint = "write 'phases:' as a list of '- number: <n>' with 'title: <title>' under it"
  if (code === "required") return { severity: "error", path, hint, message: `${where} is missing required field '${String(path.at(-1))}'` }
  return { severity: "error", path, hint, message: `${where}: ${field || "value"} ${problem}` }
}

/** `Task 'x'` → `task 'x'`: only the leading word, never an id. */
function lowerFirst(label: string): string {
  return label[0].toLowerCase() + label.slice(1)
}

/** arktype's problem without the path it sometimes repeats (in union errors), e.g. "must be boolean (was 3)". */
function problemOf(e: { problem: string; propString: string }): string {
  const prefix = e.propString ? `${e.propString} ` : ""
  return prefix && e.problem.startsWith(prefix) ? e.problem.slice(prefix.length) : e.problem
}

async function explainSchemaErrors(data: unknown) {
  const [{ type }, { TaskFile }] = await Promise.all([import("arktype"), import("../model/schema")])
  const out = TaskFile(data)
  return out instanceof type.errors ? out : undefined
}
