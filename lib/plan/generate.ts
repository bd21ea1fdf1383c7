// plan.md's sections → tasks.yaml's tasks, deterministically and offline (docs/PLANNING.md has the rules).
// Pure: the command reads and writes the files. Types are imported as types only: no arktype at runtime.
import { carryProgress, type Carried } from "./carry-progress"
import { applyEnrichment, type Enrichment } from "./enrich"
import { readBody, type PlanBody, type PlanRefs } from "./plan-body"
import { defaultDependencies, type GateSection } from "./plan-gates"
import { joinIdFor, settleJoins, wrapJoins } from "./plan-joins"
import { parsePlan, type ParsedPlan, type PlanChild, type PlanNote, type PlanSection } from "./plan-parse"
import { closest, toKebab } from "../cli/suggest"
import type { Step, Task, TaskFile } from "../model/task-index"
import { renderTasks } from "../store/tasks-render"

export type GeneratedTasks = {
  tasks: Task[]
  /** phase number → title, for the comments above each phase in tasks.yaml */
  phases: Map<number, string>
  notes: PlanNote[]
  /** task id → the plan.md line of its heading, to point validation findings back at the plan */
  lines: Map<string, number>
  /** the sections' tasks before joins took them in: phase by phase as plan.md has them (docs/PLANNING.md, "the gate rule") */
  sections: Task[]
  /** the ids of the phases' joins */
  joins: string[]
}

// The same shape lib/model/schema.ts checks; repeated here because importing the schema loads arktype.
const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*$/
/** Generated ids stay short: they become branch and worktree names, and must fit a box in the inspector. */
const MAX_ID = 24
/** The limit before issue 34: an id of that rule already in tasks.yaml is kept, with its task's progress. */
const LEGACY_MAX_ID = 40
/** Words a long id drops first: the id stays readable with the words that carry the meaning. English, then German (accents dropped, as in ids). */
const SMALL_WORDS = new Set([
  ...["a", "an", "the", "of", "and", "or", "to", "for", "with", "in", "on", "at", "by", "from", "its", "their", "into", "is", "be", "s"],
  ...["und", "oder", "der", "die", "das", "des", "dem", "den", "ein", "eine", "fur", "mit", "von", "vom", "zu", "zum", "zur", "auf", "bei", "nach", "im", "am"],
])

export type Generation = GeneratedTasks &
  Omit<Carried, "warnings"> & {
    /** the new tasks.yaml; undefined when a note is an error */
    text?: string
    /** ids whose instructions or acceptance criteria came from an agent's proposals */
    enriched: string[]
  }

/**
 * plan.md's text → the text of tasks.yaml, with the progress recorded in `old` carried over. The text is
 * given only when it passes every check of `flow validate`; otherwise the notes say why, with plan lines.
 * `planName` is the plan file as notes and tasks.yaml's header name it.
 */
export async function generateTasks(planText: string, old?: TaskFile, enrichment?: Enrichment, planName = "plan.md"): Promise<Generation> {
  const generated = planToTasks(parsePlan(planText, planName), old ? idsOf(old.tasks) : undefined)
  const { warnings, ...carried } = carryProgress(generated.tasks, old, generated.lines)
  const notes = generated.notes
  notes.push(...warnings, ...settleJoins(generated.tasks, new Set(generated.joins), carried.requeued, generated.lines))
  notes.sort(byLine)
  if (notes.some((n) => n.severity === "error")) return { ...generated, ...carried, enriched: [] }
  const enriched = enrichment ? applyEnrichment(generated.tasks, enrichment) : []
  // A `phases:` list the old file had is kept, with plan.md's titles winning (lib/plan/plan-phases.ts reads them so).
  const keepList = old?.phases !== undefined
  if (keepList) for (const p of old!.phases!) if (!generated.phases.get(p.number)) generated.phases.set(p.number, p.title)
  const text = renderTasks(generated.tasks, generated.phases, keepList, planName)
  const { validateText } = await import("../validation/validate")
  for (const f of (await validateText(text)).findings) {
    if (f.severity !== "error") continue
    notes.push({
      severity: "error",
      line: f.task_id ? generated.lines.get(f.task_id) : undefined,
      message: `${f.message} (tasks.yaml would not pass 'flow validate')`,
      hint: f.hint,
    })
  }
  return { ...generated, ...carried, enriched, text: notes.some((n) => n.severity === "error") ? undefined : text }
}

type Node = {
  heading: PlanSection | PlanChild
  body: PlanBody
  where: string
  id: string
  subtasks: Node[]
  steps: { child: PlanChild; body: PlanBody }[]
}

/**
 * Tasks for every section of a parsed plan; errors in `notes` mean the tasks must not be written. `existing`:
 * the ids of the tasks.yaml being replaced, whose ids made by an older rule are kept.
 */
export function planToTasks(plan: ParsedPlan, existing?: ReadonlySet<string>): GeneratedTasks {
  const notes: PlanNote[] = [...plan.notes]
  const roots = planTree(plan)
  const flatten = (n: Node): Node[] => [n, ...n.subtasks.flatMap(flatten)]
  const all = roots.flatMap(flatten)
  for (const n of all) notes.push(...n.body.notes)
  for (const { body } of roots.flatMap((r) => r.steps)) notes.push(...body.notes)
  assignIds(all, existing, notes)
  const resolve = referenceResolver(all, notes)
  const explicit = new Map<Node, string[]>()
  for (const n of all) if (n.body.dependsOn) explicit.set(n, resolve(n.body.dependsOn, n.where))
  const gateSections: GateSection[] = roots.map((r) => {
    const section = r.heading as PlanSection
    return { id: r.id, phase: section.phase, checkpoint: section.checkpoint, line: section.line, where: r.where, ref: section.number ?? r.id }
  })
  const explicitById = new Map([...explicit].filter(([n]) => roots.includes(n)).map(([n, deps]) => [n.id, deps]))
  const taken = new Set(all.map((n) => n.id))
  const { defaults, joins } = defaultDependencies(gateSections, explicitById, (p) => joinIdFor(p, taken), notes)
  const build: Build = { lines: new Map(), explicit, defaults, resolve, notes }
  const sections = roots.map((r) => buildTask(build, r, true))
  const tasks = wrapJoins(sections, joins, plan.phases, build.lines)
  const phases = new Map<number, string>()
  for (const p of plan.phases) if (!phases.has(p.n)) phases.set(p.n, p.title)
  return { tasks, phases, notes: notes.sort(byLine), lines: build.lines, sections, joins: [...joins.values()] }
}

/** Each section as a node, its subtasks under it by depth and its steps in order; ids are given later. */
function planTree(plan: ParsedPlan): Node[] {
  return plan.sections.map((section) => {
    const where = section.number ? `section ${section.number}` : `section '${section.title}'`
    const node: Node = { heading: section, body: readBody(section.body, where), where, id: "", subtasks: [], steps: [] }
    // open[d] is the node a subtask of depth d + 1 belongs to: the section, then the latest subtask of each depth.
    const open: Node[] = [node]
    for (const child of section.children) {
      const childWhere =
        child.kind === "step" ? `step ${node.steps.length + 1} of ${where}` : child.number ? `subtask ${child.number}` : `subtask '${child.title}'`
      const body = readBody(child.body, childWhere)
      if (child.kind === "step") node.steps.push({ child, body })
      else {
        const sub: Node = { heading: child, body, where: childWhere, id: "", subtasks: [], steps: [] }
        open[child.depth - 1].subtasks.push(sub)
        open.length = child.depth
        open.push(sub)
      }
    }
    return node
  })
}

/** Every node's id: the ones written as {#id} first, so a generated id never takes a name the plan chose. */
function assignIds(all: Node[], existing: ReadonlySet<string> | undefined, notes: PlanNote[]): void {
  const taken = new Set<string>()
  for (const n of all) {
    const id = n.heading.id
    if (id === undefined) continue
    if (!KEBAB.test(id)) {
      notes.push({
        severity: "error",
        line: n.heading.line,
        message: `the id '{#${id}}' of ${n.where} is not kebab-case`,
        hint: `use lowercase letters, digits and single dashes, for example {#${toKebab(id) || "setup"}}`,
      })
    } else if (taken.has(id)) {
      notes.push({ severity: "error", line: n.heading.line, message: `the id '${id}' of ${n.where} is used twice`, hint: "give each section its own {#id}" })
    }
    taken.add(id)
    n.id = id
  }
  for (const n of all) {
    if (n.id) continue
    const kebab = toKebab(n.heading.title)
    const legacy = cut(kebab, LEGACY_MAX_ID)
    const base = kebab
      ? existing?.has(legacy) && !taken.has(legacy)
        ? legacy
        : shorten(kebab, MAX_ID)
      : `task-${(n.heading.number ?? String(all.indexOf(n) + 1)).replaceAll(".", "-")}`
    let id = base
    for (let k = 2; taken.has(id); k++) id = `${shorten(base, MAX_ID - String(k).length - 1)}-${k}`
    if (id !== base)
      notes.push({
        severity: "warning",
        line: n.heading.line,
        message: `${n.where} has the same id as an earlier section; it is '${id}'`,
        hint: `give it its own title or an id: {#${base}-<something>}`,
      })
    taken.add(id)
    n.id = id
  }
}

type Resolve = (refs: PlanRefs, where: string) => string[]

/** Reads 'Depends on' and 'Validated by' references: a section number (1.2, 2.1.3) or an id; an unknown one is an error note. */
function referenceResolver(all: Node[], notes: PlanNote[]): Resolve {
  const byNumber = new Map<string, Node>()
  for (const n of all) {
    const number = n.heading.number
    if (number === undefined) continue
    const first = byNumber.get(number)
    if (first)
      notes.push({
        severity: "warning",
        line: n.heading.line,
        message: `${number} is the number of two sections (the first at line ${first.heading.line}); references to ${number} mean the first`,
        hint: "renumber one of them",
      })
    else byNumber.set(number, n)
  }
  const byId = new Map(all.map((n) => [n.id, n]))
  return (refs, where) => {
    const ids: string[] = []
    for (const ref of refs.refs) {
      const found = byNumber.get(ref.replace(/\.$/, "")) ?? byId.get(ref) ?? byId.get(toKebab(ref))
      if (found) ids.push(found.id)
      else {
        const near = closest(ref, [...byNumber.keys(), ...byId.keys()])
        notes.push({
          severity: "error",
          line: refs.line,
          message: `${where} refers to '${ref}', which is no section number or task id`,
          hint: near ? `did you mean '${near}'?` : "use a section number such as 1.2, or a task id",
        })
      }
    }
    return [...new Set(ids)]
  }
}

/** What building the tasks shares: the heading line of each id (filled), the dependencies, the notes. */
type Build = { lines: Map<string, number>; explicit: Map<Node, string[]>; defaults: Map<string, string[]>; resolve: Resolve; notes: PlanNote[] }

function buildTask(b: Build, n: Node, top: boolean): Task {
  b.lines.set(n.id, n.heading.line)
  const task: Task = { id: n.id, title: n.heading.title || n.id, status: "todo" }
  const phase = top ? (n.heading as PlanSection).phase : undefined
  if (phase !== undefined) task.phase = phase
  if (n.heading.checkpoint) task.checkpoint = true
  const deps = b.explicit.get(n) ?? (top ? b.defaults.get(n.id) : undefined)
  if (deps && deps.length > 0) task.depends_on = deps
  if (n.body.files && n.body.files.files.length > 0) task.files = n.body.files.files
  if (n.body.validatedBy) {
    const [target] = b.resolve(n.body.validatedBy, n.where)
    if (target) task.validation_task_id = target
  }
  const instructions = n.body.instructions
  if (instructions) task.instructions = instructions
  else if (n.steps.length === 0) {
    task.instructions = n.heading.title || n.id
    if (n.subtasks.length === 0) {
      b.notes.push({
        severity: "warning",
        line: n.heading.line,
        message: `${n.where} has no work items: its instructions are its title`,
        hint: "list the work as bullets under the heading",
      })
    }
  }
  if (n.body.acceptance.length > 0) task.acceptance_criteria = n.body.acceptance
  if (n.steps.length > 0) task.steps = n.steps.map((s, i) => buildStep(n.id, i + 1, s.child, s.body, b.notes))
  if (n.subtasks.length > 0) task.subtasks = n.subtasks.map((s) => buildTask(b, s, false))
  return task
}

function buildStep(taskId: string, k: number, child: PlanChild, body: PlanBody, notes: PlanNote[]): Step {
  const where = `step ${k} of '${taskId}'`
  if (body.dependsOn || body.validatedBy) {
    notes.push({
      severity: "warning",
      line: (body.dependsOn ?? body.validatedBy)!.line,
      message: `${where}: steps run in order in one session, so 'Depends on' and 'Validated by' do not apply to them (ignored)`,
      hint: "put the line in the section's own text, above its first step",
    })
  }
  // A heading and one line read as one sentence ("Tokenizer: src/tokenize.ts ..."); longer text goes below it.
  const text =
    child.title && body.instructions ? `${child.title}${body.instructions.includes("\n") ? "\n" : ": "}${body.instructions}` : child.title || body.instructions
  let instruction = text.includes("\n") && !text.endsWith("\n") ? `${text}\n` : text
  if (!instruction) {
    instruction = `Step ${k}`
    notes.push({ severity: "warning", line: child.line, message: `${where} has no text`, hint: "write what the step does after its heading" })
  }
  const step: Step = { id: `${taskId}.${k}`, instruction }
  if (body.acceptance.length > 0) step.acceptance_criteria = body.acceptance
  return step
}

function byLine(a: PlanNote, b: PlanNote): number {
  return (a.line ?? 0) - (b.line ?? 0)
}

/**
 * A kebab id of at most `max` characters: small words dropped from the end until it fits (the first word
 * stays: "sign-in-with-a-card-number" is "sign-in-with-card-number"), then cut at a dash.
 */
function shorten(id: string, max: number): string {
  const words = id.split("-")
  for (let i = words.length - 1; i > 0 && words.join("-").length > max; i--) if (SMALL_WORDS.has(words[i])) words.splice(i, 1)
  return cut(words.join("-"), max)
}

/** A kebab id cut at a dash to at most `max` characters. */
function cut(id: string, max: number): string {
  if (id.length <= max) return id
  const head = id.slice(0, max + 1)
  const dash = head.lastIndexOf("-")
  return dash > 0 ? head.slice(0, dash) : id.slice(0, max)
}

/** Every id of a task file, subtasks included. */
function idsOf(tasks: readonly Task[]): Set<string> {
  const ids = new Set<string>()
  const stack = [...tasks]
  while (stack.length > 0) {
    const t = stack.pop()!
    ids.add(t.id)
    stack.push(...(t.subtasks ?? []))
  }
  return ids
}
