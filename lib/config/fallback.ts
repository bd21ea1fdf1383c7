// An agent's `fallback` in flow.yaml (docs/BUDGETS.md, "Usage limits"): the agents its task moves to when
// its CLI reports a usage limit.
import { Exit, FlowError } from "../cli/errors"
import { closest } from "../cli/suggest"

/** What the check reads of an agent of flow.yaml (config.ts's AgentConfig, which imports this module). */
type Agent = { name: string; cli: string; fallback?: string | string[] }

/**
 * A fallback names another agent of flow.yaml, on another CLI: the same CLI shares the limit that was reached
 * (the same account), and a task cannot fall back to the agent it is moving away from.
 */
export function checkFallbacks(agents: readonly Agent[]): void {
  const hint = "fallback: names other agents of flow.yaml, each on a different cli (docs/BUDGETS.md)"
  for (const agent of agents) {
    for (const name of fallbacksOf(agent)) {
      const to = agents.find((a) => a.name === name)
      if (!to) {
        const near = closest(
          name,
          agents.map((a) => a.name),
        )
        throw new FlowError(
          `flow.yaml: agent '${agent.name}' falls back to '${name}', which is not an agent of flow.yaml`,
          Exit.invalid,
          near ? `did you mean '${near}'?` : hint,
        )
      }
      if (to.cli === agent.cli)
        throw new FlowError(
          `flow.yaml: agent '${agent.name}' falls back to '${name}', which uses the same cli (${agent.cli}): its usage limit is likely the same`,
          Exit.invalid,
          hint,
        )
    }
  }
}

/** The agents a task of `agent` moves to when its CLI is limited, in order. */
export function fallbacksOf(agent: Agent): string[] {
  return agent.fallback === undefined ? [] : [agent.fallback].flat()
}
