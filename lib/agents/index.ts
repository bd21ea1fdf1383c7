// The registry of agent adapters: flow.yaml's `cli:` name → adapter.
import { Exit, FlowError } from "../cli/errors"
import { closest } from "../cli/suggest"
import { claude } from "./claude"
import { codex } from "./codex"
import { commandAdapter } from "./command"
import { copilot } from "./copilot"
import { cursor } from "./cursor"
import { gemini } from "./gemini"
import { goose } from "./goose"
import { opencode } from "./opencode"
import type { Adapter } from "./types"

export type { Adapter, AgentEvent, LaunchOptions, McpHandOver, McpServerSpec } from "./types"
export { commandAdapter } from "./command"

const BUILT_IN: Record<string, Adapter> = { claude, codex, gemini, opencode, cursor, copilot, goose }

/** Every adapter name `cli:` accepts, in the order the docs list them. */
export const AGENT_CLIS: readonly string[] = [...Object.keys(BUILT_IN), "command"]
/** The CLIs flow can hand its MCP server to (flow.yaml `mcp: true`). */
export const MCP_CLIS: readonly string[] = Object.values(BUILT_IN)
  .filter((a) => a.mcp !== undefined)
  .map((a) => a.cli)

/** With flow's built-in offline agent, which needs no adapter (lib/agents/script-agent.ts). */
const KNOWN: readonly string[] = ["script", ...AGENT_CLIS]

/**
 * The adapter for a `cli:` name. `command` needs the agent's argv template (flow.yaml `command:`).
 * An unknown name is a usage error that lists the known ones and the likely typo.
 */
export function adapterFor(cli: string, config: { command?: readonly string[] } = {}): Adapter {
  if (cli === "command") {
    if (config.command === undefined) {
      throw new FlowError("the command agent needs an argv template", Exit.usage, 'add command: ["my-agent", "--prompt", "{prompt}"] to the agent in flow.yaml')
    }
    return commandAdapter(config.command)
  }
  const adapter = BUILT_IN[cli]
  if (adapter !== undefined) return adapter
  const guess = closest(cli, KNOWN)
  throw new FlowError(
    `unknown agent cli '${cli}' (known: ${KNOWN.join(", ")})`,
    Exit.usage,
    guess ? `did you mean '${guess}'?` : `use one of ${KNOWN.join(", ")}`,
  )
}
