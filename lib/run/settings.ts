// What one `flow run` is given and what it reports: shared by the orchestrator, the task workers, the landing
// of finished work and the merge queues, so none of them imports another for its types.
import type { AgentConfig, PublishSettings, VerifyConfig } from "../store/config"
import type { Project } from "../cli/project"
import type { StateDb } from "./state-db"
import type { EventBus } from "./events"

export type RunSettings = {
  project: Project
  agents: AgentConfig[]
  parallelism: number
  retries: number
  /** approve checkpoints automatically (the demo's --yes) */
  yes: boolean
  defaults: { repo?: string; target?: string }
  /** the checks a merge must pass before its target moves (flow.yaml `verify`; empty: merged unchecked) */
  verify: VerifyConfig[]
  /** how many times a failed check or a merge conflict goes back to the agent */
  fixAttempts: number
  /** how many candidates of a merge queue are checked at once (1: strictly serial) */
  queueDepth?: number
  /** a task finished with no changes on its branch: done with a note (allow), or blocked (flow.yaml empty_done) */
  emptyDone: "allow" | "block"
  /** push and pull requests after merges (flow.yaml) */
  publish: PublishSettings
  /** how an agent runs flow: the argv prefix of this very program */
  flowArgv: string[]
  bus: EventBus
  signal: AbortSignal
  /** the project's runtime state: questions, agents, the event log */
  db: StateDb
}

export type RunSummary = {
  done: number
  blocked: string[]
  remaining: number
  interrupted: boolean
  /** tasks left because their agent_name names no agent of this run, with that name */
  unassignable: { id: string; agent: string }[]
}
