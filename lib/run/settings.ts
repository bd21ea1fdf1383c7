// What one `flow run` is given and what it reports: shared by the orchestrator, the task workers, the landing
// of finished work and the merge queues, so none of them imports another for its types.
import type { AgentConfig, BudgetConfig, PublishSettings, VerifyConfig } from "../config/config"
import type { PriceTable } from "../budget/prices"
import type { ReviewConfig } from "../config/review-config"
import type { Project } from "../cli/project"
import type { RunState } from "../state/run-state"
import type { TaskStore } from "../store/store"
import type { EventBus } from "./events"
import type { PrepareSettings } from "../worktree/hooks"

export type RunSettings = {
  project: Project
  agents: AgentConfig[]
  parallelism: number
  retries: number
  /** flow.yaml's task_timeout in ms: how long one agent turn may run (a task's own task_timeout wins); undefined: no limit */
  taskTimeoutMs?: number
  /** on a shared graph, how long a claim holds without a renewal (flow.yaml `lease`; docs/FLEET.md) */
  leaseMs: number
  /** the first back-off of an agent whose CLI named no reset of its usage limit (flow.yaml `limit_backoff`; docs/BUDGETS.md) */
  limitBackoffMs: number
  /** approve checkpoints automatically (the demo's --yes) */
  yes: boolean
  defaults: { repo?: string; target?: string }
  /** the checks a merge must pass before its target moves (flow.yaml `verify`; empty: merged unchecked) */
  verify: VerifyConfig[]
  /** how many times a failed check or a merge conflict goes back to the agent */
  fixAttempts: number
  /** how many candidates of a merge queue are built and checked at once, fleet-wide (1: strictly serial) */
  queueDepth?: number
  /** how many consecutive candidates a merge queue checks as one merge (flow.yaml `queue: { batch }`; 1: one each) */
  queueBatch?: number
  /** how many merge-queue checks this run takes at once (`flow run --checks`; default: its parallelism; 0: others' machines run them) */
  checks?: number
  /** who approves a task's merge before it lands (flow.yaml `review`; docs/REVIEW.md); undefined: nobody */
  review?: ReviewConfig
  /** a task finished with no changes on its branch: done with a note (allow), or blocked (flow.yaml empty_done) */
  emptyDone: "allow" | "block"
  /** how each task's worktree is made ready before its agent starts (flow.yaml setup, teardown, copy, ports) */
  prepare: PrepareSettings
  /** push and pull requests after merges (flow.yaml) */
  publish: PublishSettings
  /** what tasks, agents and the run may spend (flow.yaml `budget`; docs/BUDGETS.md) */
  budget?: BudgetConfig
  /** prices per model for CLIs that report tokens without dollars: flow's, with flow.yaml's `prices` on top */
  prices: PriceTable
  /** how an agent runs flow: the argv prefix of this very program */
  flowArgv: string[]
  bus: EventBus
  signal: AbortSignal
  /** the project's runtime state: questions, agents, the event log */
  db: RunState
  /** the task graph: tasks.yaml, or the shared database (lib/store/store.ts) */
  store: TaskStore
}

export type RunSummary = {
  done: number
  blocked: string[]
  remaining: number
  interrupted: boolean
  /** tasks left because their agent_name names no agent of this run, with that name */
  unassignable: { id: string; agent: string }[]
}
