// An agent's writes on a shared graph carry its run's claim (docs/FLEET.md, "Claims, leases, fencing"): the run
// gives its agents FLOW_TASK_ID, FLOW_RUN_ID and FLOW_ATTEMPT, and every write an agent makes through `flow`
// (its commands or flow's MCP tools) is refused once that attempt no longer holds the task: an agent whose
// machine was paused past its lease, while another run took the task over, changes nothing. A person's
// command has none of them and is never fenced.
import type { Fence } from "../store/store"

/** The claim an agent's environment carries, if it is an agent of a run on a shared graph. */
export function agentFence(env: Record<string, string | undefined>): Fence | undefined {
  const { FLOW_TASK_ID: taskId, FLOW_RUN_ID: run, FLOW_ATTEMPT: attempt } = env
  if (!taskId || !run || !attempt || !/^\d+$/.test(attempt)) return undefined
  return { taskId, run, attempt: Number(attempt) }
}
