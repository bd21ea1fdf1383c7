// One turn of a task's agent: launched in the task's worktree with its environment and session, watched by
// the task's time limit and budget, and started again in a fresh session when its CLI lost the one resumed.
import { join } from "node:path"
import type { McpServerSpec } from "../../agents"
import { formatDuration } from "../../cli/duration"
import { timed } from "../../cli/trace"
import { runTurn, type TurnResult } from "./agent-runner"
import { forgetSession, saveSession, session, taskPrompt } from "./agent-session"
import { RUN_ID } from "../../cli/run-id"
import { doneMark } from "../../agents/script-agent"
import { turnLimit, waitingMs } from "./turn-limit"
import type { WorkerTask } from "./worker-task"
import * as clock from "../../cli/clock"
import { turnSandbox } from "./turn-sandbox"

/**
 * A turn as the worker sees it: `stoppedAfter` is set when task_timeout stopped it (the limit, in ms),
 * `budgetStop` (why) when a budget's ceiling did.
 */
export type Turn = TurnResult & { stoppedAfter?: number; budgetStop?: string }

/**
 * The block note of an agent that exited without saying how the task went: its exit code, the CLI's error
 * on one line, and its last output unless that is only the same error again.
 */
export function exitNote(turn: Turn, missing: string): string {
  const tail = turn.tail.trim() && turn.tail.trim() !== turn.error?.trim() ? `; its last output:\n${turn.tail}` : ""
  if (turn.stoppedAfter !== undefined) return `${ended(turn)} ${missing}${tail}`
  return `the agent exited (code ${turn.code}${turn.error ? `: ${turn.error}` : ""}) ${missing}${tail}`
}

/** Why the script agent's turn failed: its exit code, or the time limit that stopped it. */
export function scriptEnd(turn: Turn, what: string): string {
  return turn.stoppedAfter === undefined
    ? `${what} failed (exit ${turn.code})`
    : `${what} was stopped after ${formatDuration(turn.stoppedAfter)} (task_timeout)`
}

/** How a turn ended, for notes and retry reasons: its exit code, or the time limit that stopped it. */
export function ended(turn: Turn): string {
  return turn.stoppedAfter === undefined
    ? `the agent exited (code ${turn.code})`
    : `the agent was stopped after ${formatDuration(turn.stoppedAfter)} (task_timeout)`
}

/** One turn of the task's agent on `prompt` (the script agent runs `script`); `env` adds to its environment. */
export async function agentTurn(t: WorkerTask, prompt: string, script: string, stepId?: string, env?: Record<string, string>): Promise<Turn> {
  const result = await launch(t, prompt, script, stepId, env)
  // A session flow chose that the CLI never started: the next turn starts one, with the whole task.
  if (result.unconfirmed) forgetSession(t)
  if (!result.lostSession || t.s.signal.aborted) return reached(t, result)
  // The CLI does not have the session (Gemini never saves one whose first request failed): start a new
  // one with the whole task, since a resume prompt alone would make no sense to a fresh session.
  forgetSession(t)
  return reached(t, await launch(t, await taskPrompt(t), script, stepId, env))
}

/**
 * A turn that ended without a usage limit ends the task's limits in a row (lib/budget/parking.ts). Only the
 * turn's last launch counts: a resume the CLI refused for a session it never saved never reached the provider.
 */
function reached(t: WorkerTask, turn: Turn): Turn {
  if (!turn.limit && !turn.tooLong) t.shared.parking.ok(t.taskId)
  return turn
}

async function launch(t: WorkerTask, prompt: string, script: string, stepId?: string, env?: Record<string, string>): Promise<Turn> {
  const ws = t.ws!
  const limitMs = t.limitMs
  const watch = await t.budget.watch(t.s.signal)
  const limit = turnLimit(
    limitMs,
    watch.signal,
    async (since) => waitingMs(await t.s.db.questions.forTask(t.taskId), since, clock.now()),
    () => t.s.bus.emit({ type: "notice", taskId: t.taskId, text: `task_timeout: its agent ran for ${formatDuration(limitMs!)}: stopping it` }),
  )
  const turnEnv = { ...agentEnv(t), ...env }
  const box = await turnSandbox(t, turnEnv)
  const turn = runTurn({
    doneMark: t.agent.cli === "script" ? doneMark(t.s.project.stateDir, t.taskId, stepId) : undefined,
    onGroup: (pid) => void t.shared.groups.track(pid, t.taskId).catch(() => {}),
    agent: t.agent,
    prompt,
    script,
    cwd: ws.path,
    env: turnEnv,
    mcp: mcpServer(t),
    sandbox: box?.sandbox,
    sessionId: session(t),
    sessionDir: join(t.s.project.stateDir, "sessions", t.taskId),
    usageFile: join(t.s.project.stateDir, "sessions", `${t.taskId}.usage.json`),
    pricing: { table: t.s.prices, model: t.agent.model },
    signal: limit.signal,
    onEvent: (event) => {
      if (event.type === "session") saveSession(t, event.id)
      t.s.bus.emit({ type: "agent", taskId: t.taskId, agent: t.agent.name, event })
    },
  }).finally(() => {
    limit.clear()
    watch.clear()
    box?.close()
  })
  const result = await timed(t.taskId, "agent", () => turn)
  t.s.bus.emit({ type: "agent-exit", taskId: t.taskId, agent: t.agent.name, code: result.code, seconds: result.seconds })
  const budgetStop = watch.stopped()
  if (budgetStop && !t.s.signal.aborted) return { ...result, budgetStop }
  return limit.expired() && !t.s.signal.aborted ? { ...result, stoppedAfter: limitMs } : result
}

/** Agents find the project and their task through the environment, and `flow` on their PATH. */
export function agentEnv(t: WorkerTask): Record<string, string | undefined> {
  const bin = join(t.s.project.stateDir, "bin")
  return {
    FLOW_PROJECT: t.s.project.dir,
    FLOW_TASK_ID: t.taskId,
    FLOW_AGENT: t.agent.name,
    // Marks every process the agent starts, whatever session it puts them in, for the reaper (reaper.ts).
    FLOW_RUN_ID: RUN_ID,
    // On a shared graph the claim's number: the agent's own writes of its task are fenced by it, so an attempt
    // that was taken over (its machine paused past its lease) changes nothing (docs/FLEET.md).
    ...(t.claim ? { FLOW_ATTEMPT: String(t.claim.attempt) } : {}),
    PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    // The person's git identity, for a CLI whose shell hides their git config (Gemini CLI's).
    ...t.identity,
    // Its ports, and git's view of the files copied into the worktree (kept out of the agent's commits).
    ...t.prep?.env,
  }
}

/**
 * flow's MCP server for an agent with `mcp: true`: this flow (the launcher on the agent's PATH) as `flow mcp`,
 * knowing the project, the task and the agent as the agent's own `flow` commands do.
 */
function mcpServer(t: WorkerTask): { server: McpServerSpec; dir: string } | undefined {
  if (!t.agent.mcp) return undefined
  const { FLOW_PROJECT, FLOW_TASK_ID, FLOW_AGENT, FLOW_RUN_ID, FLOW_ATTEMPT } = agentEnv(t) as Record<string, string>
  const server = {
    name: "flow",
    command: join(t.s.project.stateDir, "bin", "flow"),
    args: ["mcp"],
    env: { FLOW_PROJECT, FLOW_TASK_ID, FLOW_AGENT, FLOW_RUN_ID, ...(FLOW_ATTEMPT ? { FLOW_ATTEMPT } : {}) },
  }
  return { server, dir: join(t.s.project.stateDir, "mcp", t.taskId) }
}
