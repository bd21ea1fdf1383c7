// The sandbox's one door (docs/SANDBOX.md, "The flow command door"): a sandboxed agent cannot write tasks.yaml
// or .flow/, so its `flow` commands travel over a unix socket bound into its sandbox alone, and the run runs
// them outside, in the task's worktree with the task's environment. Only the task commands pass, and only for
// the agent's own task and its steps: anything else is refused with why.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import type { RunResult } from "../cli/proc"

/** A request through the door: the command line after `flow`, and the folder it was given in. */
export type DoorRequest = { args: string[]; cwd: string }

/** The commands an agent's prompts name, each with where its task or step id stands in the arguments. */
const COMMANDS: Record<string, { at: number; of: "task" | "step" } | Record<string, { at: number; of: "task" | "step" }>> = {
  done: { at: 1, of: "task" },
  block: { at: 1, of: "task" },
  note: { at: 1, of: "task" },
  ask: { at: 1, of: "task" },
  show: { at: 1, of: "task" },
  step: { start: { at: 2, of: "step" }, done: { at: 2, of: "step" }, show: { at: 2, of: "task" }, list: { at: 2, of: "task" } },
}

/** Why the door refuses `args` for the agent of `task` (with `steps`), or undefined when it lets them through. */
export function doorRefusal(args: readonly string[], task: string, steps: readonly string[]): string | undefined {
  const entry = COMMANDS[args[0] ?? ""]
  if (!entry) return `'flow ${args[0] ?? ""}' is not one of the task commands a sandboxed agent may run (${Object.keys(COMMANDS).join(", ")})`
  const rule = "at" in entry ? entry : entry[args[1] ?? ""]
  if (!rule || typeof rule.at !== "number") return `'flow step ${args[1] ?? ""}' is not one a sandboxed agent may run (start, done, show, list)`
  const id = args[rule.at as number]
  const ok = rule.of === "task" ? id === task : steps.includes(id ?? "")
  if (!ok)
    return `a sandboxed agent may run 'flow ${args.slice(0, rule.at as number).join(" ")}' only for its own ${rule.of === "task" ? `task '${task}'` : `task's steps (${steps.join(", ") || "none"})`}, right after the command`
  return undefined
}

export type Door = { path: string; close(): void }

const FOLDER = "flow-door-"

/**
 * A fresh folder for a door, in the system's temp (a socket's path is at most 107 bytes; a project's may be
 * longer), named after this process. Those of processes that are gone (a run killed by SIGKILL closes
 * nothing) are removed first.
 */
export function doorFolder(): string {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(new RegExp(`^${FOLDER}(\\d+)-`).exec(name)?.[1])
    if (pid && !alive(pid)) rmSync(join(tmpdir(), name), { recursive: true, force: true })
  }
  return mkdtempSync(join(tmpdir(), `${FOLDER}${process.pid}-`))
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Opens the door at `path` (a socket in a folder of its own, the one bound into the sandbox): each request,
 * one JSON line, gets `execute`'s result back as one JSON line, or a refusal (exit 2, said on stderr).
 */
export function openDoor(path: string, task: string, steps: readonly string[], execute: (req: DoorRequest) => Promise<RunResult>): Door {
  mkdirSync(dirname(path), { recursive: true })
  rmSync(path, { force: true })
  const server = Bun.listen<{ text: string }>({
    unix: path,
    socket: {
      open(socket) {
        socket.data = { text: "" }
      },
      async data(socket, chunk) {
        socket.data.text += Buffer.from(chunk).toString("utf8")
        if (!socket.data.text.includes("\n")) return
        const reply = await answer(socket.data.text, task, steps, execute)
        socket.end(`${JSON.stringify(reply)}\n`)
      },
    },
  })
  return {
    path,
    close: () => {
      server.stop(true)
      rmSync(path, { force: true })
    },
  }
}

async function answer(line: string, task: string, steps: readonly string[], execute: (req: DoorRequest) => Promise<RunResult>): Promise<RunResult> {
  let req: DoorRequest
  try {
    req = JSON.parse(line) as DoorRequest
    if (!Array.isArray(req.args) || !req.args.every((a) => typeof a === "string") || typeof req.cwd !== "string") throw new Error("bad shape")
  } catch {
    return { code: 2, stdout: "", stderr: "error: the flow command door takes one JSON line {args, cwd}\n" }
  }
  const refusal = doorRefusal(req.args, task, steps)
  if (refusal) return { code: 2, stdout: "", stderr: `error: ${refusal}\nhint: this agent runs in a sandbox (flow.yaml 'sandbox'); see docs/SANDBOX.md\n` }
  return execute(req)
}
