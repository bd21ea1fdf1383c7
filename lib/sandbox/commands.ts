// flow.yaml's own commands in the sandbox (docs/SANDBOX.md, "The check and the setup"): with the top-level
// `sandbox`, the worktrees' setup and teardown and the merge queue's check run code the agents wrote (a check
// such as `npm test` runs their tests), so they run confined as an agent does: the folder they run in
// writable with the git files its commits need, the package caches writable, the rest read-only, /tmp
// private, the environment cut to the allow list, the network as the setting says. They have no door: a
// `flow` command inside one reads the project's state but cannot change it.
import type { SandboxSettings } from "../config/sandbox-config"
import type { Confine } from "../worktree/command"
import { sandbox } from "./sandbox"

/** How flow.yaml's commands start under `settings` (the top-level sandbox's); undefined: without one. */
export function confineCommands(settings: SandboxSettings | undefined): Confine | undefined {
  if (!settings) return undefined
  return (argv, cwd, env) => {
    const box = sandbox({ settings, worktree: cwd, agent: { home: [], env: [] }, own: [], env: { ...process.env, ...env } })
    return { argv: box.wrap(argv), env: box.env(env) }
  }
}
