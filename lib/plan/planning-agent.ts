// Which agent CLI writes or refines the plan: `--agent <name>` from flow.yaml, else the first configured
// agent that is a real CLI. The offline `script` agent only runs shell blocks, so it cannot plan.
import type { AgentConfig, FlowConfig } from "../config/config"
import { Exit, FlowError } from "../cli/errors"
import { closest } from "../cli/suggest"
import { adapterFor } from "../agents"
import { commandArgv } from "../agents/command"

export type AgentChoice = { agent?: AgentConfig; reason: string }

/** The agent to use, or none with the reason (for the "offline because ..." line). */
export function planningAgent(config: FlowConfig, opts: { name?: string; offline?: boolean; offlineFlag?: string }): AgentChoice {
  if (opts.offline) return { reason: opts.offlineFlag ?? "--offline" }
  const agents = config.agents ?? []
  if (opts.name !== undefined) {
    const agent = agents.find((a) => a.name === opts.name)
    if (!agent) {
      const near = closest(
        opts.name,
        agents.map((a) => a.name),
      )
      throw new FlowError(
        `flow.yaml has no agent named '${opts.name}'`,
        Exit.usage,
        near ? `did you mean '${near}'?` : agents.length ? `its agents: ${agents.map((a) => a.name).join(", ")}` : "add the agent under 'agents:' in flow.yaml",
      )
    }
    if (agent.cli === "script")
      throw new FlowError(
        `the agent '${agent.name}' is a 'script' agent, which only runs shell blocks and cannot plan`,
        Exit.usage,
        "name an agent CLI such as claude or codex, or use --offline",
      )
    return { agent, reason: `--agent ${agent.name}` }
  }
  const agent = agents.find((a) => a.cli !== "script")
  if (agent) return { agent, reason: `the first agent in flow.yaml` }
  return { reason: agents.length ? "flow.yaml has only script agents" : "no agent is configured in flow.yaml" }
}

/**
 * The argv that opens an agent CLI's own interactive session with a first prompt (flags checked against the
 * --help of the versions in test/agent-clis), or undefined for the CLIs flow has not checked (goose, cursor):
 * the prompt is printed instead.
 */
export function interactiveArgv(agent: AgentConfig, prompt: string, cwd: string): string[] | undefined {
  const model = agent.model ? ["--model", agent.model] : []
  const extra = agent.args ?? []
  switch (agent.cli) {
    case "claude":
    case "codex":
      return [agent.cli, ...model, ...extra, "--", prompt]
    case "gemini":
      return ["gemini", ...model, ...extra, "--prompt-interactive", prompt]
    case "copilot":
      return ["copilot", ...model, ...extra, "--interactive", prompt]
    case "opencode":
      return ["opencode", ...model, ...extra, "--prompt", prompt]
    case "command":
      return agent.command ? commandArgv(agent.command, { prompt, cwd, model: agent.model }) : undefined
    default:
      return undefined
  }
}

/**
 * Fails, before anything is written or asked, when the agent's CLI is not on PATH: the error says how to
 * install it and how to go on without it (`instead`).
 */
export function requireInstalled(agent: AgentConfig, path: string | undefined, instead: string): void {
  const adapter = adapterFor(agent.cli, { command: agent.command })
  // A path in a command template is used as written; only bare names are looked up.
  if (adapter.binary.includes("/") || Bun.which(adapter.binary, { PATH: path ?? "" })) return
  throw new FlowError(`agent ${agent.name} needs '${adapter.binary}', which is not on PATH`, Exit.failure, `${adapter.install}; or ${instead}`)
}
