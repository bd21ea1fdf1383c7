// A turn's sandbox (flow.yaml `sandbox`, docs/SANDBOX.md): bubblewrap around the agent's process group, and the
// flow command door through which its `flow done`, `note`, `ask`... reach the project's state, open for the turn.
import { mkdirSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { adapterFor } from "../../agents"
import { run } from "../../cli/proc"
import { sandboxOf } from "../../config/sandbox-config"
import { doorFolder, openDoor } from "../../sandbox/door"
import { type Sandbox, sandbox } from "../../sandbox/sandbox"
import { selfArgv } from "../flow-shim"
import type { WorkerTask } from "./worker-task"

export type TurnSandbox = { sandbox: Sandbox; close(): void }

/**
 * The sandbox of the task's agent for one turn with environment `env`, or undefined when the agent has none. The
 * door's socket is in a fresh folder of its own (doorFolder), bound into this sandbox only; the commands it lets
 * through run with the task's environment.
 */
export async function turnSandbox(t: WorkerTask, env: Record<string, string | undefined>): Promise<TurnSandbox | undefined> {
  const settings = sandboxOf(t.agent)
  if (!settings) return undefined
  const worktree = t.ws!.path
  const steps = ((await t.read()).steps ?? []).map((s) => s.id)
  const folder = doorFolder()
  const door = openDoor(join(folder, "door"), t.taskId, steps, ({ args }) => run([...selfArgv(), ...args], { cwd: worktree, env }))
  const stateDir = t.s.project.stateDir
  const own = [join(stateDir, "finished"), join(stateDir, "sessions", t.taskId)]
  for (const dir of own) mkdirSync(dir, { recursive: true })
  const box = sandbox({
    settings,
    worktree,
    agent: t.agent.cli === "script" ? { home: [], env: [] } : adapterFor(t.agent.cli, { command: t.agent.command }).sandbox,
    own,
    door: door.path,
    env: { ...process.env, ...env },
    // The door's launcher runs this very flow: a source checkout's whole folder (its node_modules), or the binary.
    programs: selfArgv().map((a) => (a.endsWith(".ts") ? dirname(a) : a)),
  })
  return {
    sandbox: { ...box, env: (own) => box.env({ ...own, FLOW_DOOR: door.path }) },
    close: () => {
      door.close()
      rmSync(folder, { recursive: true, force: true })
    },
  }
}
