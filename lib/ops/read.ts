// list, show and next as functions of the project: what the commands print (in text or with --json) and what
// `flow mcp`'s tools return come from here, so both say the same about the same file.
import type { Project } from "../cli/project"
import { availableTasks } from "../graph/availability"
import { effectivePhase, showReport } from "../graph/show-report"
import { taskSummary } from "../graph/task-lines"
import { requireTask } from "../graph/task-lookup"
import type { BudgetReport, LandingWait, ListReport, NextReport, ShowReport, TaskEvidence, Usage, WorkedBy } from "../model/json-shapes"
import { indexTasks, type Indexed, type Task } from "../model/task-index"
import { phaseHeader, readPhaseTitles } from "../plan/plan-phases"
import { readTaskBudget } from "../budget/budget-report"
import { readLandingWaits } from "../landing/landing-waits"
import { readUsage } from "../budget/usage"
import { readWork, workedBy } from "../run/worked-by"
import { readTaskEvidence } from "../run/evidence"
import { readBudgetConfig } from "../config/budget-config"
import { openStore } from "../store/open"

/**
 * One group of `flow list`: a phase (null: none) with its header line and its shown tasks, each with its
 * indentation and the agent of a run that works or worked on it (lib/run/worked-by.ts).
 */
export type ListGroup = { phase: number | null; title: string; rows: { entry: Indexed; indent: number; worker: WorkedBy | null }[] }

/**
 * The tasks grouped by the phase of their top-level task, phases ascending and tasks without one last; with
 * `filter`, only tasks of that status, each indented below its nearest shown ancestor. Empty groups are left out.
 */
export async function listGroups(project: Project, filter?: Task["status"]): Promise<{ groups: ListGroup[]; index: Map<string, Indexed> }> {
  const { data } = await (await openStore(project)).read()
  const index = indexTasks(data)
  // One read of the run state for every task (a few queries, never one per task).
  const work = await readWork(project)
  const groups = new Map<number | null, ListGroup>()
  // Per task id: the indentation its shown children get (the number of shown ancestors, itself included),
  // and the group of its top-level task, which decides the group of every descendant.
  const childIndent = new Map<string, number>()
  const groupOf = new Map<string, ListGroup>()
  for (const entry of index.values()) {
    const { task, parent } = entry
    let group: ListGroup
    let indent = 0
    if (parent === undefined) {
      const phase = task.phase ?? null
      group = groups.get(phase) ?? { phase, title: "", rows: [] }
      groups.set(phase, group)
    } else {
      group = groupOf.get(parent.id) as ListGroup
      indent = childIndent.get(parent.id) as number
    }
    groupOf.set(task.id, group)
    const shown = filter === undefined || task.status === filter
    childIndent.set(task.id, shown ? indent + 1 : indent)
    if (shown) group.rows.push({ entry, indent, worker: workedBy(task, work) })
  }
  const ordered = [...groups.values()]
    .filter((g) => g.rows.length > 0)
    .sort((a, b) => (a.phase ?? Number.POSITIVE_INFINITY) - (b.phase ?? Number.POSITIVE_INFINITY))
  const titles = ordered.some((g) => g.phase !== null) ? readPhaseTitles(project.dir, data) : new Map<number, string>()
  for (const g of ordered) g.title = g.phase === null ? "No phase" : phaseHeader(g.phase, titles)
  return { groups: ordered, index }
}

/** `flow list --json`. */
export function listReport(groups: ListGroup[]): ListReport {
  return {
    phases: groups.map((g) => ({
      phase: g.phase,
      title: g.title,
      tasks: g.rows.map(({ entry, worker }) => ({ ...taskSummary(entry.task, entry.parent, entry.depth), worked_by: worker })),
    })),
  }
}

export type ShowData = {
  report: ShowReport
  index: Map<string, Indexed>
  entry: Indexed
  usage: Usage | null
  worker: WorkedBy | null
  /** its spend beside its caps (docs/BUDGETS.md), null when it has none */
  budget: BudgetReport | null
  /** what its landing waits for in the live run (lib/landing/landing-waits.ts), null when it does not wait */
  landing: LandingWait | null
  /** what its landing stands on and went through (lib/run/evidence.ts), null before its branch was handed over */
  evidence: TaskEvidence | null
}

/** One task (a subtask id works too) and what `flow show` derives from it; a FlowError naming the closest id when there is none. */
export async function showTask(project: Project, id: string): Promise<ShowData> {
  const { data } = await (await openStore(project)).read()
  const index = indexTasks(data)
  const entry = requireTask(index, id)
  const { phase } = effectivePhase(entry, index)
  const titles = phase === null ? new Map<number, string>() : readPhaseTitles(project.dir, data)
  const [totals, work, budget, waits, evidence] = await Promise.all([
    readUsage(project),
    readWork(project),
    readBudgetConfig(project.dir).then((config) => readTaskBudget(project, config, entry.task)),
    readLandingWaits(project),
    readTaskEvidence(project, entry.task.id),
  ])
  const usage = totals.byTask.get(entry.task.id) ?? null
  const worker = workedBy(entry.task, work)
  const landing = waits.get(entry.task.id) ?? null
  const report = showReport(index, entry, titles, usage, worker, budget, landing, evidence)
  return { report, index, entry, usage, worker, budget, landing, evidence }
}

/** The tasks that may be taken now, for any agent or for `agent` (lib/graph/availability.ts), and `flow next --json`. */
export async function nextTasks(project: Project, agent?: string): Promise<{ report: NextReport; available: Indexed[] }> {
  const { data } = await (await openStore(project)).read()
  const available = availableTasks(indexTasks(data), agent)
  return { report: { tasks: available.map((e) => taskSummary(e.task, e.parent, e.depth)) }, available }
}
