// The inspector's view of a project: the last valid tasks.yaml, a version that moves on every change of
// the watched files, and the layout of the graph's current structure. The server (lib/view/app.ts) turns
// it into JSON; nothing here knows HTTP.
import { existsSync, readFileSync } from "node:fs"
import { basename, join } from "node:path"
import { writeFileAtomic } from "../store/atomic-write"
import { FlowError } from "../cli/errors"
import type { GraphTask, ListReport, ViewTaskReport, ViewTasksReport } from "../model/json-shapes"
import { phaseHeader, readPhaseTitles } from "../plan/plan-phases"
import type { Project } from "../cli/project"
import { projectTaskPrompt } from "../prompts/project-prompt"
import { currentStep, stepPrompt } from "../prompts/prompt"
import { waitsForReview } from "../graph/checkpoint"
import { parallelism, type Parallelism } from "../graph/parallelism"
import { descendantsOf, showReport } from "../graph/show-report"
import { readTaskEvidence } from "../run/evidence"
import { readUsage } from "../budget/usage"
import { readLandingWaits } from "../landing/landing-waits"
import { parkedUntil, readTaskBudget } from "../budget/budget-report"
import { readBudgetConfig } from "../config/budget-config"
import { readWork, workedBy, type WorkLedger } from "../run/worked-by"
import { indexTasks, type Indexed } from "../model/task-index"
import { taskSummary } from "../graph/task-lines"
import { openStore } from "../store/open"
import { ensureStateDir } from "../store/valid-cache"
import { computeLayout, layoutKey, phaseGroups, type Layout } from "./layout"

export type ViewEvent = { type: "version"; version: number } | { type: "layout"; key: string; done: number; total: number }

type Loaded = { index: Map<string, Indexed>; titles: Map<number, string>; key: string; work: WorkLedger; parallelism: Parallelism }

/** The last layout, in the project's .flow/: a new `flow view` on an unchanged graph starts without ELK. */
export const LAYOUT_FILE = "view-layout.json"
/** What flow view writes is for the person only (a shared machine: issue 21), in a .flow/ that is too. */
export const PRIVATE_FILE = 0o600

export class ViewModel {
  version = 0
  error: string | null = null
  private loaded: Loaded | undefined
  private readonly layouts = new Map<string, Promise<Layout>>()
  private readonly listeners = new Set<(e: ViewEvent) => void>()

  constructor(readonly project: Project) {}

  /**
   * Reads the project's files again and moves the version on; an invalid tasks.yaml keeps the last good
   * tasks. The first read throws instead: there is nothing to show yet. Calls run one after another, so a
   * slow read (one that validates) never overwrites a newer one.
   */
  refresh(): Promise<void> {
    const run = this.queue.then(() => this.read())
    this.queue = run.catch(() => undefined)
    return run
  }

  private queue: Promise<void> = Promise.resolve()

  private async read(): Promise<void> {
    try {
      const [{ data }, work] = await Promise.all([openStore(this.project).then((s) => s.read()), readWork(this.project)])
      const index = indexTasks(data)
      this.loaded = { index, titles: readPhaseTitles(this.project.dir, data), key: layoutKey(index), work, parallelism: parallelism(data.tasks) }
      this.error = null
      // Started now, before a page asks; a failure reaches the page that asks for it.
      this.layout(this.loaded.key)?.catch(() => undefined)
    } catch (e) {
      if (!(e instanceof FlowError) || !this.loaded) throw e
      this.error = `${e.message}${e.hint ? `\n${e.hint}` : ""}`
    }
    this.version++
    this.emit({ type: "version", version: this.version })
  }

  subscribe(listener: (e: ViewEvent) => void): () => void {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }

  private emit(e: ViewEvent): void {
    for (const l of this.listeners) l(e)
  }

  private current(): Loaded {
    if (!this.loaded) throw new FlowError(this.error ?? "tasks.yaml has not been read yet", undefined, "fix tasks.yaml; the page updates by itself")
    return this.loaded
  }

  tasks(): ViewTasksReport {
    const { index, titles, key, work, parallelism } = this.current()
    const phases: ViewTasksReport["phases"] = []
    for (const [phase, tops] of phaseGroups(index)) {
      const tasks: GraphTask[] = []
      for (const top of tops) {
        tasks.push(graphTask(index, top, work))
        for (const d of descendantsOf(top.task, 0)) tasks.push(graphTask(index, index.get(d.task.id) as Indexed, work))
      }
      phases.push({ phase, title: phase === null ? "No phase" : phaseHeader(phase, titles), tasks })
    }
    const report: ViewTasksReport = { version: this.version, project: basename(this.project.dir), error: this.error, layout_key: key, phases, parallelism }
    return report satisfies ListReport
  }

  /** `flow show --json` of one task with its prompts, or undefined for an unknown id. */
  async task(id: string): Promise<ViewTaskReport | undefined> {
    const { index, titles, work } = this.current()
    const entry = index.get(id)
    if (!entry) return undefined
    const step = currentStep(entry.task)
    return {
      ...showReport(
        index,
        entry,
        titles,
        (await readUsage(this.project)).byTask.get(id) ?? null,
        workedBy(entry.task, work),
        await readTaskBudget(this.project, await readBudgetConfig(this.project.dir), entry.task),
        (await readLandingWaits(this.project)).get(id) ?? null,
        await readTaskEvidence(this.project, id),
      ),
      parked_until: await parkedUntil(this.project, id),
      prompt: await projectTaskPrompt(this.project, index, id),
      resume_prompt: step ? stepPrompt(entry.task, step) : null,
    }
  }

  ids(): string[] {
    return this.loaded ? [...this.loaded.index.keys()] : []
  }

  /**
   * The layout of the structure `key` (the current one when omitted): from memory, else from
   * .flow/view-layout.json, else computed (with progress events). Undefined for a key that is not current.
   */
  layout(key?: string): Promise<Layout> | undefined {
    const loaded = this.current()
    if (key !== undefined && key !== loaded.key) return this.layouts.get(key)
    const wanted = loaded.key
    const known = this.layouts.get(wanted)
    if (known) return known
    const pending = this.readSavedLayout(wanted) ?? this.computeAndSave(loaded.index, wanted)
    // A failed layout is not kept: the next request tries again.
    pending.catch(() => this.layouts.delete(wanted))
    // Keep the current structure's layout and the one before it (an edit is often undone).
    for (const k of this.layouts.keys()) if (this.layouts.size >= 2 && k !== wanted) this.layouts.delete(k)
    this.layouts.set(wanted, pending)
    return pending
  }

  private async computeAndSave(index: Map<string, Indexed>, key: string): Promise<Layout> {
    const layout = await computeLayout(index, (done, total) => this.emit({ type: "layout", key, done, total }))
    try {
      ensureStateDir(this.project.stateDir)
      writeFileAtomic(join(this.project.stateDir, LAYOUT_FILE), JSON.stringify(layout), { mode: PRIVATE_FILE })
    } catch {
      // The saved copy only spares the next `flow view` a layout; a read-only .flow costs nothing else.
    }
    return layout
  }

  private readSavedLayout(key: string): Promise<Layout> | undefined {
    const file = join(this.project.stateDir, LAYOUT_FILE)
    if (!existsSync(file)) return undefined
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as Layout
      return saved.key === key ? Promise.resolve(saved) : undefined
    } catch {
      return undefined // a damaged copy is laid out again and overwritten
    }
  }
}

function graphTask(index: Map<string, Indexed>, entry: Indexed, work: WorkLedger): GraphTask {
  const { task, parent, depth } = entry
  const steps = task.steps ?? []
  return {
    ...taskSummary(task, parent, depth),
    worked_by: workedBy(task, work),
    validation_task_id: task.validation_task_id ?? null,
    steps: { done: steps.filter((s) => s.status === "done").length, total: steps.length },
    review: waitsForReview(index, task),
  }
}
