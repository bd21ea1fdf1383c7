// What the run's terminal UI knows, built from the run's event stream (lib/run/events.ts) and two reads
// of the stores the events point at: tasks.yaml (titles, steps, counts by status) and the state database
// (pending questions). Pure data and a reducer: tui.ts draws it and wires it to a terminal.
import type { Question } from "../model/json-shapes"
import { TASK_STATUSES } from "../model/statuses"
import type { RunEvent } from "../run/events"
import { agentLine, clockTime, logLine } from "../run/log"
import { sanitize } from "../terminal/screen"
import * as clock from "../cli/clock"

/** What the UI needs of tasks.yaml: each task's title, step ids and status. */
export type TaskSnapshot = Map<string, { title: string; status: string; steps: string[] }>

export type PaneState = "running" | "waiting for an answer" | "idle" | `queue ${string}` | `parked until ${string}`

export type Pane = {
  agent: string
  taskId?: string
  stepId?: string
  /** when the current task started, or when the agent became idle (ms since the epoch) */
  since: number
  /** the agent's recent output, oldest first, already safe to draw */
  lines: string[]
}

/** Lines kept per agent pane and in the footer log: more than any terminal shows. */
const KEEP = 200
/** The events whose headless log lines make the footer: what happened to tasks, not what agents said. */
const FOOTER = new Set<RunEvent["type"]>([
  "status",
  "merge",
  "merge-failed",
  "notice",
  "queue",
  "queue-end",
  "queue-report",
  "check",
  "fix",
  "retry",
  "checkpoint",
  "published",
  "publish-failed",
  "question-answered",
  "budget",
  "budget-raised",
  "parked",
  "prepared",
  "hook-end",
])

export class RunView {
  readonly panes = new Map<string, Pane>()
  tasks: TaskSnapshot = new Map()
  questions: Question[] = []
  /** tasks whose agent exited to wait for answers (question-wait until question-answered) */
  readonly waiting = new Set<string>()
  /** tasks whose branch is in a merge queue, with its last word there (`queue main #2 checking`) */
  readonly queued = new Map<string, string>()
  readonly log: string[] = []
  target = ""
  /** checkpoints announced as waiting for review; shown until tasks.yaml says they are done or blocked */
  readonly checkpoints = new Set<string>()
  /** tasks whose merge passed and waits for the person's review (flow.yaml `review`), oldest first, until it lands or goes back */
  readonly landings = new Set<string>()
  /** agents parked by their CLI's usage limit, until when (ms since the epoch) */
  readonly parked = new Map<string, number>()
  /** why the run waits with nothing to do, until it moves on */
  waitingFor?: string
  stopping = false

  constructor(
    readonly project: string,
    agents: string[],
    readonly started: number,
  ) {
    for (const agent of agents) this.panes.set(agent, { agent, since: started, lines: [] })
  }

  apply(e: RunEvent, at: Date): void {
    const t = at.getTime()
    if (FOOTER.has(e.type)) push(this.log, logLine(e, at)!)
    switch (e.type) {
      case "run-start":
        this.target = e.target
        for (const agent of e.agents) if (!this.panes.has(agent)) this.panes.set(agent, { agent, since: t, lines: [] })
        return
      case "task-assigned":
      case "task-start": {
        this.waitingFor = undefined // the run moved on
        this.parked.delete(e.agent)
        const pane = this.pane(e.agent)
        if (pane.taskId !== e.taskId) {
          pane.taskId = e.taskId
          pane.stepId = undefined
          pane.since = t
          push(pane.lines, `── ${e.taskId}`)
        }
        return
      }
      case "step-start":
        this.pane(e.agent).stepId = e.stepId
        push(this.pane(e.agent).lines, `── step ${e.stepId}`)
        return
      case "agent": {
        const pane = this.pane(e.agent)
        const ev = e.event
        // Assistant text keeps its lines here; the headless log folds each message into one line.
        const lines = ev.type === "text" ? ev.text.split("\n").filter((l) => l.trim()) : [agentLine(ev)].filter((l) => l !== undefined)
        for (const line of lines) push(pane.lines, sanitize(line))
        return
      }
      case "agent-exit":
        push(this.pane(e.agent).lines, `── exited ${e.code} after ${e.seconds.toFixed(1)} s`)
        return
      // A setup runs in the agent's pane, before the agent; a teardown has no pane (the footer says how it ended).
      case "hook-start":
        if (e.agent) push(this.pane(e.agent).lines, `── ${e.hook}: ${sanitize(e.command)}`)
        return
      case "hook-output":
        if (e.agent) push(this.pane(e.agent).lines, sanitize(e.line))
        return
      case "task-end": {
        const pane = this.pane(e.agent)
        if (pane.taskId === e.taskId) Object.assign(pane, { taskId: undefined, stepId: undefined, since: t })
        this.waiting.delete(e.taskId)
        this.queued.delete(e.taskId)
        this.landings.delete(e.taskId)
        return
      }
      case "question-wait":
        this.waiting.add(e.taskId)
        return
      case "queue":
        this.queued.set(e.taskId, `queue ${e.target} #${e.position} ${e.state}`)
        return
      case "merge":
      case "merge-failed":
      case "fix": // back to its agent
        this.queued.delete(e.taskId)
        this.landings.delete(e.taskId)
        return
      case "question-answered":
        this.waiting.delete(e.taskId)
        return
      case "queue-end": // out of the line: landed, failed, or sent back by the reviewer
        this.landings.delete(e.taskId)
        return
      case "checkpoint":
        this.checkpoints.add(e.taskId)
        return
      case "waiting":
        return void this.onWaiting(e)
      case "parked":
        this.parked.set(e.agent, new Date(e.until).getTime())
        return
    }
  }

  /**
   * The run-wide messages, one a line: that the run stops; or what waits for a person (a checkpoint, a merge's
   * review: a line each, both when both wait), or else why the run waits. Empty when there is none.
   */
  notices(): string[] {
    if (this.stopping) return ["stopping: agents are being stopped; their tasks will be resumed by the next 'flow run' (q or Ctrl-C again to quit at once)"]
    // The run's own "waiting for review" names commands for another terminal: here the keys do it.
    const reviews = this.reviews()
    const landings = this.landingReviews()
    const said = [
      ...(reviews.length ? [`checkpoint waiting for review: ${reviews.join(", ")} (c approves ${reviews[0]}, b blocks it with a reason)`] : []),
      ...(landings.length ? [`merge waiting for your review: ${landings.join(", ")} (l lands ${landings[0]}, r asks for changes with a comment)`] : []),
    ]
    return said.length || !this.waitingFor ? said : [this.waitingFor]
  }

  /** Merges waiting for the person's review, oldest first: `l` and `r` act on the first. */
  landingReviews(): string[] {
    return [...this.landings]
  }

  /** Checkpoints announced as waiting and not yet done or blocked in tasks.yaml, oldest first: `c` and `b` act on the first. */
  reviews(): string[] {
    return [...this.checkpoints].filter((id) => !["done", "blocked"].includes(this.tasks.get(id)?.status ?? ""))
  }

  /** What an agent is doing now: a pending question about its task means it waits for a person. */
  stateOf(pane: Pane, now = clock.now()): PaneState {
    const parked = this.parked.get(pane.agent)
    if (parked !== undefined && parked > now && !pane.taskId) return `parked until ${clockTime(new Date(parked), new Date(now))}`
    if (!pane.taskId) return "idle"
    if (this.waiting.has(pane.taskId) || this.questions.some((q) => q.task_id === pane.taskId)) return "waiting for an answer"
    const queued = this.queued.get(pane.taskId)
    return queued ? (queued as PaneState) : "running"
  }

  /** `step k/n` of the pane's task, when it has steps. */
  stepOf(pane: Pane): string | undefined {
    const steps = pane.taskId ? (this.tasks.get(pane.taskId)?.steps ?? []) : []
    if (!pane.stepId || steps.length === 0) return undefined
    return `step ${steps.indexOf(pane.stepId) + 1}/${steps.length}`
  }

  /** How many tasks have each status, in the nominal order of statuses; statuses no task has are left out. */
  counts(): [string, number][] {
    const counts = new Map<string, number>()
    for (const { status } of this.tasks.values()) counts.set(status, (counts.get(status) ?? 0) + 1)
    return [...TASK_STATUSES, ...[...counts.keys()].filter((s) => !(TASK_STATUSES as readonly string[]).includes(s))]
      .filter((s) => counts.has(s))
      .map((s) => [s, counts.get(s)!])
  }

  private onWaiting(e: Extract<RunEvent, { type: "waiting" }>): void {
    // A person's review is said by the keys that decide it (notices); an agent's needs nobody yet.
    if (e.taskId !== undefined && e.review && !e.reviewer) return void this.landings.add(e.taskId)
    if (e.taskId !== undefined) this.landings.delete(e.taskId)
    this.waitingFor = e.reason
  }

  private pane(agent: string): Pane {
    let pane = this.panes.get(agent)
    if (!pane) this.panes.set(agent, (pane = { agent, since: this.started, lines: [] }))
    return pane
  }
}

function push(lines: string[], line: string): void {
  lines.push(line)
  if (lines.length > KEEP) lines.splice(0, lines.length - KEEP)
}
