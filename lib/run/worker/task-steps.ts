// A task's agent at work, turn after turn, until the task's status says how it went: a task without steps in
// one session, retried (resumed) when the agent exits without done or block; a task's steps one after
// another in one session, each retried until the agent marks it done.
import { existsSync, rmSync } from "node:fs"
import { formatDuration } from "../../cli/duration"
import { commitAll } from "../../git/git"
import { agentTurn, ended, exitNote, scriptEnd, type Turn } from "./agent-turn"
import { awaitAnswers, continuation, resumable, session, taskPrompt } from "./agent-session"
import { budgetNote } from "../../budget/budget-gate"
import { AUTHOR } from "../landing"
import { limitNote, parkAndSay } from "../../budget/parking"
import { callVerb, type FlowCall, flowCall } from "../../agents/flow-call"
import { currentStep, stepPrompt } from "../../prompts/prompt"
import { doneMark } from "../../agents/script-agent"
import { sleepUnlessStopped } from "../../cli/stop-sleep"
import type { WorkerTask } from "./worker-task"
import * as clock from "../../cli/clock"

/** paused: the run's or the agent's budget is spent; parked: the agent's CLI reported a usage limit (both: left in progress) */
export type Outcome = "finished" | "blocked" | "stopped" | "paused" | "parked"

/** A task without steps: one session, retried (resumed) when the agent exits without done or block. */
export async function runWhole(t: WorkerTask, resumeWith?: string, env?: Record<string, string>): Promise<Outcome> {
  let prompt = resumeWith ?? (await taskPrompt(t))
  for (let attempt = 1; ; attempt++) {
    const task = await t.read()
    // The script finished before the run died (its mark): land it, never run it again.
    if (t.agent.cli === "script" && existsSync(doneMark(t.s.project.stateDir, t.taskId))) return "finished"
    const gate = await t.budget.gate()
    if (gate !== "go") return gate
    const turn = await agentTurn(t, prompt, task.instructions ?? "", undefined, env)
    if (t.s.signal.aborted) return "stopped"
    if (turn.tooLong) return blockTooLong(t, turn)
    const after = await t.read()
    if (after.status === "blocked") return "blocked"
    if (after.status === "done") return "finished"
    if (turn.budgetStop) {
      // Stopped by a budget, not failed: the gate asks (or pauses) before the session goes on.
      prompt = await continuation(t, budgetNote(t.taskId, turn.budgetStop, t.agent.mcp))
      attempt--
      continue
    }
    if (turn.limit) {
      if (env === undefined) return park(t, turn)
      // A fix for the merge queue waits in place: its landing is under way.
      if (!(await waitOutLimit(t, turn))) return "stopped"
      prompt = await continuation(t, limitNote(t.taskId, turn.limit!.message))
      attempt--
      continue
    }
    if (t.agent.cli === "script") {
      if (turn.code === 0) return "finished"
      await t.block(`${scriptEnd(turn, "script")}:\n${turn.tail}`)
      return "blocked"
    }
    const answers = await awaitAnswers(t, undefined)
    if (t.s.signal.aborted) return "stopped"
    if (answers) {
      // Asking and exiting to wait is allowed, not a failed attempt.
      prompt = await continuation(t, answers)
      attempt--
      continue
    }
    if (attempt > t.s.retries) {
      await t.block(exitNote(turn, "without 'flow done' or 'flow block'"))
      return "blocked"
    }
    // The run's log names the commands (a person reads it); the agent is told what it was given to use.
    const tools = t.agent.mcp
    const call = (c: FlowCall, withTools = tools) => flowCall(c, withTools, "'")
    const without = (withTools?: boolean) => `${ended(turn)} without ${call({ done: t.taskId }, withTools)} or ${call({ block: t.taskId }, withTools)}`
    t.s.bus.emit({ type: "retry", taskId: t.taskId, attempt: attempt + 1, reason: without(false) })
    prompt = await continuation(
      t,
      `${without(tools)}. Finish the task, then ${callVerb(tools)} ${call({ done: t.taskId })}, or ${callVerb(tools)} ${call({ block: t.taskId, reason: "<reason>" })} if you cannot.\n`,
    )
  }
}

/** Steps share one session: the first prompt carries the whole task, later ones resume it (SPEC 3.3). */
export async function runSteps(t: WorkerTask, answers?: string): Promise<Outcome> {
  const tries = new Map<string, number>()
  let resumeWith = answers // the answers to questions the agent exited to wait for
  for (;;) {
    const task = await t.read()
    if (task.status === "blocked") return "blocked"
    const step = currentStep(task)
    if (!step) return "finished"
    if ((step.status ?? "pending") === "pending") await t.stepStatus(step.id, "in_progress")
    const n = (tries.get(step.id) ?? 0) + 1
    tries.set(step.id, n)
    const gate = await t.budget.gate()
    if (gate !== "go") return gate
    const current = session(t)
    // A session that cannot be resumed starts afresh: it gets the whole task's prompt, then the new part.
    const base = resumable(t) || t.agent.cli === "script" ? stepPrompt(task, step, t.agent.mcp) : await taskPrompt(t)
    const prompt = resumeWith ?? base
    t.s.bus.emit({ type: "step-start", taskId: t.taskId, stepId: step.id, agent: t.agent.name, session: current })
    const finished = t.agent.cli === "script" && existsSync(doneMark(t.s.project.stateDir, t.taskId, step.id))
    const turn: Turn = finished
      ? { code: 0, tail: "", seconds: 0 }
      : await agentTurn(
          t,
          n > 1 && !resumeWith ? `${prompt}\nThe last attempt ended before ${flowCall({ stepDone: step.id }, t.agent.mcp, "'")}. Continue the step.\n` : prompt,
          step.instruction,
          step.id,
        )
    resumeWith = undefined
    if (t.s.signal.aborted) return "stopped"
    if (turn.tooLong) return blockTooLong(t, turn)
    if (turn.budgetStop || turn.limit) {
      const after = await t.read()
      if (after.status === "blocked") return "blocked"
      if (!(after.steps?.find((x) => x.id === step.id)?.status === "done")) {
        if (turn.limit) return park(t, turn)
        tries.set(step.id, n - 1)
        resumeWith = await continuation(t, budgetNote(t.taskId, turn.budgetStop!, t.agent.mcp))
        continue
      }
    }
    if (t.agent.cli === "script") {
      if (turn.code !== 0) {
        await t.block(`${scriptEnd(turn, `script of step ${step.id}`)}:\n${turn.tail}`)
        return "blocked"
      }
      await commitAll(t.ws!.path, `${t.taskId}: step ${step.id}`, AUTHOR)
      await t.shared.landing.pushBranch(t.taskId, t.ws!)
      await t.stepStatus(step.id, "done")
      rmSync(doneMark(t.s.project.stateDir, t.taskId, step.id), { force: true })
      continue
    }
    const after = await t.read()
    if (after.status === "blocked") return "blocked"
    if (after.steps?.find((x) => x.id === step.id)?.status === "done") {
      await t.shared.landing.pushBranch(t.taskId, t.ws!) // what the agent committed in the step
      continue
    }
    resumeWith = await awaitAnswers(t, step)
    if (t.s.signal.aborted) return "stopped"
    if (resumeWith) {
      tries.set(step.id, n - 1)
      continue
    }
    if (n > t.s.retries) {
      await t.block(exitNote(turn, `before 'flow step done ${step.id}'`))
      return "blocked"
    }
    t.s.bus.emit({
      type: "retry",
      taskId: t.taskId,
      attempt: n + 1,
      reason: `step ${step.id} not done (${turn.stoppedAfter === undefined ? `exit ${turn.code}` : `stopped after ${formatDuration(turn.stoppedAfter)}: task_timeout`})`,
    })
  }
}

/**
 * The agent's CLI reported a usage limit: its work is committed, the agent parked until the reset (or a
 * back-off), and the task handed back to the run, in progress with its session, for this agent once the
 * reset comes or for a fallback agent now (lib/budget/parking.ts).
 */
async function park(t: WorkerTask, turn: Turn): Promise<Outcome> {
  await t.commitWork("its agent's usage limit is reached")
  const pinned = (await t.read()).agent_name !== undefined
  parkAndSay({ parking: t.shared.parking, bus: t.s.bus, taskId: t.taskId, agent: t.agent, limit: turn.limit!, pinned })
  return "parked"
}

/** A prompt longer than the agent's CLI takes: asking again sends it again, so a person decides. */
async function blockTooLong(t: WorkerTask, turn: Turn): Promise<Outcome> {
  await t.block(
    `flow run: ${turn.error}; shorten what the prompt holds ('flow prompt ${t.taskId}' shows it: the task's instructions and notes, its dependencies' notes), or give the task an agent whose CLI takes it`,
  )
  return "blocked"
}

/** A limited turn of a fix waits for the reset where it is (or the run's stop: false). */
async function waitOutLimit(t: WorkerTask, turn: Turn): Promise<boolean> {
  const until = parkAndSay({ parking: t.shared.parking, bus: t.s.bus, taskId: t.taskId, agent: t.agent, limit: turn.limit!, inPlace: true })
  await sleepUnlessStopped(until.getTime() - clock.now(), t.s.signal)
  return !t.s.signal.aborted
}
