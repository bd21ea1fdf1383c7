// A task as its worker holds it: what the run's workers share, the task's worktree, its preparation, time limit
// and budget, and the writes of its status, each fenced by the run's claim of the task on a shared graph.
import { existsSync } from "node:fs"
import type { AgentConfig } from "../../config/config"
import type { Claim } from "../../store/store"
import { FlowError } from "../../cli/errors"
import { commitAll } from "../../git/git"
import { indexTasks, type Task } from "../../model/task-index"
import { applyStatus } from "../../store/transitions"
import { isoSeconds as now } from "../../cli/clock"
import { AUTHOR, blockTask, writeStatus, type Landing } from "../landing"
import type { RunSettings } from "../settings"
import type { SpaceWait } from "../space-wait"
import type { Preparation } from "../../worktree/prepare"
import type { AgentGroups } from "../reaper"
import { untilValid } from "../tasks-wait"
import type { Workspace, Workspaces } from "../../git/workspace"
import { TaskBudget } from "../../budget/budget-gate"
import type { SpendMeter } from "../../budget/budget-meter"
import type { Parking } from "../../budget/parking"
import type { AgentSlots } from "./agent-slots"

export type WorkerShared = {
  settings: RunSettings
  workspaces: Workspaces
  /** merges (journaled) and git operations on each repository, one at a time */
  landing: Landing
  /** the agents' process groups, recorded for the reaper */
  groups: AgentGroups
  /** a full disk: said once, waited out on a timer by whoever met it */
  space: SpaceWait
  /** clean-ups that need not hold up the next task (worktree removal); awaited before the run ends */
  background: Set<Promise<unknown>>
  /** pushes and pull requests of a repository, one after another (pushes of the target must not race) */
  publishQueues: Map<string, Promise<unknown>>
  /** each task's agent session in this run, with the CLI it belongs to (a task may move to another CLI) */
  sessions: Map<string, { cli: string; id: string }>
  /** what tasks, agents and the run spent so far (docs/BUDGETS.md) */
  meter: SpendMeter
  /** agents parked by their CLI's usage limit, and their tasks */
  parking: Parking
  /** the run's agents at work (lib/run/worker/agent-slots.ts); absent: the agent stays held while its task lands */
  slots?: AgentSlots
}

export class WorkerTask {
  ws?: Workspace
  /** what the worktree was given before the agent (lib/worktree/prepare.ts); its ports are held until the worker ends */
  prep?: Extract<Preparation, { ok: true }>
  /** task_timeout: the task's own, else flow.yaml's; undefined: no limit */
  limitMs?: number
  /** the person's git identity in the task's repository, for its agent's commits (lib/git/identity.ts) */
  identity?: Record<string, string>
  readonly budget: TaskBudget

  /** `claim`: the run's claim of the task on a shared graph, which fences every write of the task (docs/FLEET.md). */
  constructor(
    readonly shared: WorkerShared,
    readonly taskId: string,
    readonly agent: AgentConfig,
    readonly claim?: Claim,
  ) {
    this.budget = new TaskBudget(shared.settings, shared.meter, {
      taskId,
      agent: agent.name,
      budget: () => this.read(),
      commit: (why) => this.commitWork(why),
      block: (note) => this.block(note),
    })
  }

  get s(): RunSettings {
    return this.shared.settings
  }

  async read(): Promise<Task> {
    const { data } = await untilValid(this.s.signal, () => this.s.store.read())
    const entry = indexTasks(data).get(this.taskId)
    if (!entry) throw new FlowError(`task '${this.taskId}' is no longer in tasks.yaml`)
    return entry.task
  }

  async setStatus(to: "assigned" | "in_progress"): Promise<void> {
    await this.write(`flow run: ${to} ${this.taskId}`, (editor) => applyStatus(editor, this.taskId, to, now()).changes)
  }

  block(note: string): Promise<void> {
    return blockTask(this.s, this.taskId, note, false, this.claim)
  }

  async stepStatus(stepId: string, to: "in_progress" | "done"): Promise<void> {
    await untilValid(this.s.signal, () =>
      this.s.store.mutate(
        `flow run: step ${stepId}`,
        (editor) => {
          editor.set({ taskId: this.taskId, stepId }, "status", to)
          editor.set({ taskId: this.taskId, stepId }, to === "done" ? "completed_at" : "started_at", now())
        },
        this.claim,
      ),
    )
  }

  write(command: string, edit: Parameters<typeof writeStatus>[2]): Promise<void> {
    return writeStatus(this.s, command, edit, this.claim)
  }

  /** Commits what the agent left in its worktree on its branch, so that no work is lost where it stops. */
  async commitWork(why: string): Promise<void> {
    const ws = this.ws
    if (!ws || !existsSync(ws.path)) return
    const committed = await commitAll(ws.path, `${this.taskId}: work so far (${why})`, AUTHOR)
    if (committed) this.s.bus.emit({ type: "notice", taskId: this.taskId, text: `committed its agent's work so far on ${ws.branch} (${why})` })
    await this.shared.landing.pushBranch(this.taskId, ws)
  }
}
