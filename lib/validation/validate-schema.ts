// What arktype says is wrong with a tasks file that failed the generated yes/no check, turned into findings
// that name the task and the field (lib/validation/validate.ts calls it only for such a file).
import type { Path, RawFinding } from "./findings"
import { STEP_STATUSES, TASK_STATUSES } from "../model/statuses"
import { toKebab } from "../cli/suggest"

type Rec = Record<string, unknown>
type Problem = { code: string; path: Path; problem: string; data: unknown }
/** The task a finding is about: its label ("Task 'a'", "Subtask #2 of task 'b'") and its record. */
export type Labelled = { node: Rec; label: string }

const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * arktype's problems with `data` (which has a `tasks` list), every task checked on its own. arktype's errors for
 * one recursive list grow quadratically with the failing items (50,000 tasks that are strings: 11 s; one at a
 * time: 0.13 s), so the file is checked without its tasks, and each task without its subtasks.
 */
export async function schemaProblems(data: Rec & { tasks: unknown[] }): Promise<Problem[]> {
  const [{ type }, { Task, TaskFile }] = await Promise.all([import("arktype"), import("../model/schema")])
  const out: Problem[] = []
  const check = (t: (v: unknown) => unknown, value: unknown, prefix: Path) => {
    const errors = t(value)
    if (!(errors instanceof type.errors)) return
    // Spread first: map on arktype's path class makes another one through a constructor that takes a length.
    for (const e of errors)
      out.push({ code: e.code, path: [...prefix, ...[...e.path].map((k) => (typeof k === "number" ? k : String(k)))], problem: problemOf(e), data: e.data })
  }
  check(TaskFile, { ...data, tasks: [] }, [])
  const stack: [unknown, Path][] = data.tasks.map((t, i) => [t, ["tasks", i]])
  stack.reverse()
  while (stack.length > 0) {
    const [task, path] = stack.pop()!
    if (!isRec(task) || !Array.isArray(task.subtasks)) {
      check(Task, task, path)
      continue
    }
    check(Task, { ...task, subtasks: [] }, path)
    for (let i = task.subtasks.length - 1; i >= 0; i--) stack.push([task.subtasks[i], [...path, "subtasks", i]])
  }
  return out
}

/** Turns one arktype problem into a finding that names the task and the field. */
export function schemaFinding({ code, path, problem, data: actual }: Problem, tasks: Map<string, Labelled>): RawFinding {
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
  // One finding per task and kind of problem: 100,000 numbers in one depends_on are one error with a count.
  const kind = `schema ${code} ${field.filter((k) => typeof k === "string").join(".")}`
  const base = { severity: "error" as const, task_id: taskId, path, group: { kind, scope: lowerFirst(label) } }
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
    return {
      ...base,
      group: { kind, scope: "the file" },
      message: `Task #${Number(field[1]) + 1} must be a mapping of fields ${problem.replace(/^must be an object /, "")}`,
    }
  }
  return { ...base, message: `${where}: ${name || "value"} ${problem}` }
}

/** A problem in the top-level `phases:` list of titles (lib/model/schema.ts Phase). */
function phaseFinding(code: string, path: Path, problem: string): RawFinding {
  const where = typeof path[1] === "number" ? `Phase entry #${path[1] + 1}` : "'phases'"
  const field = path.slice(2).join(".")
  const base = { severity: "error" as const, path, group: { kind: `phases ${code} ${field}` } }
  const hint = "write 'phases:' as a list of '- number: <n>' with 'title: <title>' under it"
  if (code === "required") return { ...base, hint, message: `${where} is missing required field '${String(path.at(-1))}'` }
  return { ...base, hint, message: `${where}: ${field || "value"} ${problem}` }
}

/** `Task 'x'` → `task 'x'`: only the leading word, never an id. */
export function lowerFirst(label: string): string {
  return label[0].toLowerCase() + label.slice(1)
}

/** arktype's problem without the path it sometimes repeats (in union errors), e.g. "must be boolean (was 3)". */
function problemOf(e: { problem: string; propString: string }): string {
  const prefix = e.propString ? `${e.propString} ` : ""
  return prefix && e.problem.startsWith(prefix) ? e.problem.slice(prefix.length) : e.problem
}
