// flow.yaml's `sandbox`: whether each agent's processes run in a sandbox (lib/sandbox, docs/SANDBOX.md), for
// all agents (the top-level field) or one (the agent's own, which wins). Its own module so config.ts only names it.
import { type } from "arktype"

/** An environment variable's name, as the agent's `sandbox.env` lets it through. */
const ENV_NAME = type(/^[A-Za-z_][A-Za-z0-9_]*$/).describe("an environment variable's name (letters, digits, '_')")

/**
 * `true`, or the sandbox's settings: `network` (`full`, the default: the host's network; `none`: no network
 * but loopback of its own) and `env`, the names of further variables the agent keeps (its own API key's, say).
 */
export const SandboxConfig = type("boolean").or(
  type({
    "network?": "'full' | 'none'",
    "env?": ENV_NAME.array(),
  }),
)
export type SandboxConfig = typeof SandboxConfig.infer

/** A sandbox as the run applies it to one agent. */
export type SandboxSettings = { network: "full" | "none"; env: readonly string[] }

/** The agent's sandbox (its own setting, else flow.yaml's for all), or undefined when it runs without one. */
export function sandboxOf(agent: { sandbox?: SandboxConfig }, all?: SandboxConfig): SandboxSettings | undefined {
  const setting = agent.sandbox ?? all
  if (setting === undefined || setting === false) return undefined
  if (setting === true) return { network: "full", env: [] }
  return { network: setting.network ?? "full", env: setting.env ?? [] }
}

/** The agents with flow.yaml's top-level `sandbox` laid under each agent's own (the agents of --cli too). */
export function withSandbox<A extends { sandbox?: SandboxConfig }>(agents: readonly A[], all: SandboxConfig | undefined): A[] {
  return agents.map((a) => (a.sandbox === undefined && all !== undefined ? { ...a, sandbox: all } : a))
}
