// One task on one agent, from its worktree to its merge. A task's outcome is its status in tasks.yaml,
// never the agent's exit code: an agent that ran `flow block` and exited 0 leaves a blocked task.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { adapterFor, type McpServerSpec } from "../agents"
import type { AgentConfig } from "../store/config"
import { type Claim, StoreUnreachable } from "../store/store"
import { FlowError } from "../cli/errors"
import { commitAll } from "../git/git"
import type { Question } from "../model/json-shapes"
import { projectTaskPrompt } from "./project-prompt"
import { answersPrompt, callVerb, currentStep, type FlowCall, flowCall, stepPrompt } from "./prompt"
import { indexTasks, type Step, type Task } from "../model/task-index"
import { applyStatus } from "../store/transitions"
import { runTurn, type TurnResult } from "./agent-runner"
import { AUTHOR, blockTask, isoNow as now, worktreeGone, writeStatus, type Fixer, type Landing } from "./landing"
import { openPullRequest, pushBranch, type PublishResult } from "../git/publish"
import { takenOverNote } from "../git/remote-git"
import type { RunSettings } from "./settings"
import type { SpaceWait } from "./space-wait"
import { isDiskFull } from "../store/disk-full"
import { formatDuration, parseDuration } from "../cli/duration"
import { turnLimit, waitingMs } from "./turn-limit"
import { prepareWorktree, type Preparation } from "./prepare"
import { type AgentGroups, RUN_ID } from "./reaper"
import { doneMark, doneMarks, shellBlocks } from "./script-agent"
import { untilValid } from "./tasks-wait"
import { timed } from "../cli/trace"
import type { Workspace, Workspaces } from "../git/workspace"
import { budgetNote, TaskBudget } from "./budget-gate"
import { sleepUnlessStopped } from "./stop-sleep"
import type { SpendMeter } from "./budget-meter"
import { limitNote, type Parking, parkAndSay } from "./parking"

export type WorkerShared = {
  settings: RunSettings
  workspaces: Workspaces
  /** merges (journaled) and git operations on each repository, one at a time */
  landing: Landing
  /** the agents' process groups, recorded for the reaper */
  groups: AgentGroups
  /** a full disk: said once, waited out on a timer by whoever met it */
  space: SpaceWait
  /** clean-ups that need not hold up the next task (worktree removal); awaited before the run ends */
  background: Set<Promise<unknown>>
  /** pushes and pull requests of a repository, one after another (pushes of the target must not race) */
  publishQueues: Map<string, Promise<unknown>>
  /** each task's agent session in this run, with the CLI it belongs to (a task may move to another CLI) */
  sessions: Map<string, { cli: string; id: string }>
  /** what tasks, agents and the run spent so far (docs/BUDGETS.md) */
  meter: SpendMeter
  /** agents parked by their CLI's usage limit, and their tasks */
  parking: Parking
}

/** How often a task whose agent exited to wait looks for the answers (one indexed read of the state db). */
const ANSWER_POLL_MS = 200

/** How long an attempt the database's absence stopped pauses before it asks whether the database answers. */
const AWAY_PAUSE_MS = 1_000

/** paused: the run's or the agent's budget is spent; parked: the agent's CLI reported a usage limit (both: left in progress) */
type Outcome = "finished" | "blocked" | "stopped" | "paused" | "parked"

/**
 * The block note of an agent that exited without saying how the task went: its exit code, the CLI's error
 * on one line, and its last output unless that is only the same error again.
 */
function exitNote(turn: Turn, missing: string): string {
  const tail = turn.tail.trim() && turn.tail.trim() !== turn.error?.trim() ? `; its last output:\n${turn.tail}` : ""
  if (turn.stoppedAfter !== undefined) return `${ended(turn)} ${missing}${tail}`
  return `the agent exited (code ${turn.code}${turn.error ? `: ${turn.error}` : ""}) ${missing}${tail}`
}

/**
 * A turn as the worker sees it: `stoppedAfter` is set when task_timeout stopped it (the limit, in ms),
 * `budgetStop` (why) when a budget's ceiling did.
 */
type Turn = TurnResult & { stoppedAfter?: number; budgetStop?: string }

/** Why the script agent's turn failed: its exit code, or the time limit that stopped it. */
function scriptEnd(turn: Turn, what: string): string {
  return turn.stoppedAfter === undefined
    ? `${what} failed (exit ${turn.code})`
    : `${what} was stopped after ${formatDuration(turn.stoppedAfter)} (task_timeout)`
}

/** How a turn ended, for notes and retry reasons: its exit code, or the time limit that stopped it. */
function ended(turn: Turn): string {
  return turn.stoppedAfter === undefined
    ? `the agent exited (code ${turn.code})`
    : `the agent was stopped after ${formatDuration(turn.stoppedAfter)} (task_timeout)`
}

export class TaskWorker {
  private ws?: Workspace
  /** what the worktree was given before the agent (lib/run/prepare.ts); its ports are held until the worker ends */
  private prep?: Extract<Preparation, { ok: true }>
  /** task_timeout: the task's own, else flow.yaml's; undefined: no limit */
  private limitMs?: number
  private readonly budget: TaskBudget

  /**
   * `handover`: what the first turn is told of a turn a usage limit stopped (lib/run/parking.ts); `claim`: the
   * run's claim of the task on a shared graph, which fences every write of the task (docs/FLEET.md).
   */
  constructor(
    private shared: WorkerShared,
    private taskId: string,
    private agent: AgentConfig,
    private handover?: string,
    private claim?: Claim,
  ) {
    this.budget = new TaskBudget(shared.settings, shared.meter, {
      taskId,
      agent: agent.name,
      budget: () => this.read(),
      commit: (why) => this.commitWork(why),
      block: (note) => this.block(note),
    })
  }

  private get s(): RunSettings {
    return this.shared.settings
  }

  /**
   * Works the task to its end. Returns why, when it failed and even blocking it failed (a tasks.yaml that
   * may not be written): the run must not take it again at once, or it would fail again in a loop.
   */
  async run(): Promise<string | undefined> {
    try {
      await this.untilRoom((retry) => this.attempt(retry))
    } catch (e) {
      if (!this.s.signal.aborted) {
        // The hint says how to get the task going again: the note is where the person reads it.
        const message = e instanceof FlowError ? `${e.message}${e.hint ? `: ${e.hint}` : ""}` : String((e as Error)?.stack ?? e)
        const unblocked = await this.untilRoom(() => this.block(`flow run: ${message}`)).then(
          () => undefined,
          (e2) => {
            const why = (e2 as Error).message.split("\n")[0]
            return message.startsWith(why) ? `its status cannot be written: ${why}` : `it failed (${message.split("\n")[0]}) and could not be blocked: ${why}`
          },
        )
        if (unblocked && !this.s.signal.aborted) return unblocked
      }
    } finally {
      this.prep?.release()
      const status = await this.read().then(
        (t) => t.status,
        () => "unknown",
      )
      this.s.bus.emit({ type: "task-end", taskId: this.taskId, agent: this.agent.name, cli: this.agent.cli, status })
    }
  }

  /**
   * `fn`, tried again (with `retry` true) after the disk had no room for it (lib/run/space-wait.ts) or a
   * shared graph's database could not be reached (the run says so; docs/FLEET.md, "The database away
   * mid-run"): the task keeps its place, nothing is blocked for it, and the run's stop ends the wait.
   */
  private async untilRoom(fn: (retry: boolean) => Promise<void>): Promise<void> {
    const space = this.shared.space
    for (let retry = false; ; retry = true) {
      try {
        await fn(retry)
        if (retry) space.ok()
        return
      } catch (e) {
        if (e instanceof StoreUnreachable && !this.s.signal.aborted) {
          // Whatever the attempt was doing goes on from the task's status once the database answers: an agent's
          // finished work is found (its status, a script's done mark) and landed, not run again. A pause first:
          // a database that answers reads but refuses more connections must not be asked in a tight loop.
          await sleepUnlessStopped(AWAY_PAUSE_MS, this.s.signal)
          await untilValid(this.s.signal, () => this.s.store.read()).catch((e2) => {
            if (!this.s.signal.aborted) throw e2
          })
          if (this.s.signal.aborted) return
          continue
        }
        if (this.s.signal.aborted || !space.claims(e, this.ws ? [this.ws.path] : [], this.taskId)) throw e
        await space.wait()
        if (this.s.signal.aborted) return
      }
    }
  }

  /**
   * The task from where it is: started (assigned, its worktree, in progress), its agent run, its work landed.
   * A retry after a full disk goes on from the task's status: a done task is landed, a blocked one's
   * validated tasks are blocked, anything else starts or resumes.
   */
  private async attempt(retry: boolean): Promise<void> {
    const task = await this.read()
    this.limitMs = task.task_timeout === undefined ? this.s.taskTimeoutMs : parseDuration(task.task_timeout, `task '${this.taskId}': task_timeout`)
    if (retry && (task.status === "done" || task.status === "blocked")) {
      if (!this.ws) return // decided by a person before this worker got its worktree: nothing of ours to land
      return task.status === "done" ? this.finish(task) : this.afterBlocked()
    }
    if (task.status !== "in_progress" && task.status !== "assigned") {
      // A fresh start (never run, or reset by a person): what an earlier attempt journaled is history.
      await this.shared.landing.journal.close(this.taskId)
      for (const mark of doneMarks(this.s.project.stateDir, this.taskId)) rmSync(mark, { force: true })
    }
    if (!retry) this.s.bus.emit({ type: "task-assigned", taskId: this.taskId, agent: this.agent.name, cli: this.agent.cli })
    // SPEC rule 3: the orchestrator hands the task to an agent (assigned), then the agent works (in_progress).
    this.ws = await this.shared.workspaces.forTask(task)
    const ws = this.ws
    // The claim (a tasks.yaml write) and the worktree (git) do not wait for each other.
    const [, how] = await Promise.all([
      task.status !== "in_progress" ? timed(this.taskId, "claim", () => this.setStatus("assigned")) : undefined,
      timed(this.taskId, "worktree", () => this.shared.landing.worktree(this.taskId, ws)),
    ])
    // Another machine's attempt pushed the branch and died: its work is here, its agent's session is not.
    if (how === "taken-over") this.handover ??= takenOverNote(ws.branch)
    await timed(this.taskId, "start", () => this.setStatus("in_progress"))
    // Taken over from a run that died after its merge reached the shared remote, before its done write: the
    // branch it pushed is in the remote's target. Landed as it is (done, no second merge), its agent never run again.
    if (how === "taken-over" && (await this.shared.landing.landedOnRemote(ws))) return this.finish(await this.read())
    this.s.bus.emit({
      type: "task-start",
      taskId: this.taskId,
      agent: this.agent.name,
      branch: this.ws.branch,
      worktree: this.ws.path,
      resumed: how === "reused",
    })
    // The worktree made ready (flow.yaml copy, ports, setup) before any agent works in it; an earlier
    // attempt's ports (a retry after a full disk) go back first.
    this.prep?.release()
    this.prep = undefined
    const prep = await prepareWorktree(this.s, {
      taskId: this.taskId,
      agent: this.agent.name,
      ws,
      env: this.agentEnv(),
      onGroup: (pid) => void this.shared.groups.track(pid, this.taskId).catch(() => {}),
    })
    this.prep = prep.ok ? prep : undefined
    if (!prep.ok) {
      if (prep.note === undefined) return // the run stops
      await this.block(prep.note)
      return this.afterBlocked()
    }
    // A run stopped while the agent waited for answers: wait again before launching anything, then
    // resume its session with the answers (a fresh session gets them in the full prompt).
    const started = await this.read()
    const answers = await this.awaitAnswers(currentStep(started))
    if (this.s.signal.aborted) return
    const handover = this.handover
    this.handover = undefined // told once: a retry after a full disk is no new handover
    const resumeWith = this.resumable() ? [answers, handover].filter(Boolean).join("\n") || undefined : handover ? await this.continuation(handover) : undefined
    const outcome = started.steps?.length ? await this.runSteps(resumeWith) : await this.runWhole(resumeWith)
    if (outcome === "finished") await this.finish(await this.read())
    else if (outcome === "blocked") await this.afterBlocked()
  }

  /** A task without steps: one session, retried (resumed) when the agent exits without done or block. */
  private async runWhole(resumeWith?: string, env?: Record<string, string>): Promise<Outcome> {
    let prompt = resumeWith ?? (await this.taskPrompt())
    for (let attempt = 1; ; attempt++) {
      const task = await this.read()
      // The script finished before the run died (its mark): land it, never run it again.
      if (this.agent.cli === "script" && existsSync(doneMark(this.s.project.stateDir, this.taskId))) return "finished"
      const gate = await this.budget.gate()
      if (gate !== "go") return gate
      const turn = await this.turn(prompt, task.instructions ?? "", undefined, env)
      if (this.s.signal.aborted) return "stopped"
      const after = await this.read()
      if (after.status === "blocked") return "blocked"
      if (after.status === "done") return "finished"
      if (turn.budgetStop) {
        // Stopped by a budget, not failed: the gate asks (or pauses) before the session goes on.
        prompt = await this.continuation(budgetNote(this.taskId, turn.budgetStop, this.agent.mcp))
        attempt--
        continue
      }
      if (turn.limit) {
        if (env === undefined) return this.park(turn)
        // A fix for the merge queue waits in place: its landing is under way.
        if (!(await this.waitOutLimit(turn))) return "stopped"
        prompt = await this.continuation(limitNote(this.taskId, turn.limit!.message))
        attempt--
        continue
      }
      if (this.agent.cli === "script") {
        if (turn.code === 0) return "finished"
        await this.block(`${scriptEnd(turn, "script")}:\n${turn.tail}`)
        return "blocked"
      }
      const answers = await this.awaitAnswers(undefined)
      if (this.s.signal.aborted) return "stopped"
      if (answers) {
        // Asking and exiting to wait is allowed, not a failed attempt.
        prompt = await this.continuation(answers)
        attempt--
        continue
      }
      if (attempt > this.s.retries) {
        await this.block(exitNote(turn, "without 'flow done' or 'flow block'"))
        return "blocked"
      }
      // The run's log names the commands (a person reads it); the agent is told what it was given to use.
      const tools = this.agent.mcp
      const call = (c: FlowCall, withTools = tools) => flowCall(c, withTools, "'")
      const without = (withTools?: boolean) => `${ended(turn)} without ${call({ done: this.taskId }, withTools)} or ${call({ block: this.taskId }, withTools)}`
      this.s.bus.emit({ type: "retry", taskId: this.taskId, attempt: attempt + 1, reason: without(false) })
      prompt = await this.continuation(
        `${without(tools)}. Finish the task, then ${callVerb(tools)} ${call({ done: this.taskId })}, or ${callVerb(tools)} ${call({ block: this.taskId, reason: "<reason>" })} if you cannot.\n`,
      )
    }
  }

  /** Steps share one session: the first prompt carries the whole task, later ones resume it (SPEC 3.3). */
  private async runSteps(answers?: string): Promise<Outcome> {
    const tries = new Map<string, number>()
    let resumeWith = answers // the answers to questions the agent exited to wait for
    for (;;) {
      const task = await this.read()
      if (task.status === "blocked") return "blocked"
      const step = currentStep(task)
      if (!step) return "finished"
      if ((step.status ?? "pending") === "pending") await this.stepStatus(step.id, "in_progress")
      const n = (tries.get(step.id) ?? 0) + 1
      tries.set(step.id, n)
      const gate = await this.budget.gate()
      if (gate !== "go") return gate
      const session = this.session()
      // A session that cannot be resumed starts afresh: it gets the whole task's prompt, then the new part.
      const base = this.resumable() || this.agent.cli === "script" ? stepPrompt(task, step, this.agent.mcp) : await this.taskPrompt()
      const prompt = resumeWith ?? base
      this.s.bus.emit({ type: "step-start", taskId: this.taskId, stepId: step.id, agent: this.agent.name, session })
      const finished = this.agent.cli === "script" && existsSync(doneMark(this.s.project.stateDir, this.taskId, step.id))
      const turn: Turn = finished
        ? { code: 0, tail: "", seconds: 0 }
        : await this.turn(
            n > 1 && !resumeWith
              ? `${prompt}\nThe last attempt ended before ${flowCall({ stepDone: step.id }, this.agent.mcp, "'")}. Continue the step.\n`
              : prompt,
            step.instruction,
            step.id,
          )
      resumeWith = undefined
      if (this.s.signal.aborted) return "stopped"
      if (turn.budgetStop || turn.limit) {
        const after = await this.read()
        if (after.status === "blocked") return "blocked"
        if (!(after.steps?.find((x) => x.id === step.id)?.status === "done")) {
          if (turn.limit) return this.park(turn)
          tries.set(step.id, n - 1)
          resumeWith = await this.continuation(budgetNote(this.taskId, turn.budgetStop!, this.agent.mcp))
          continue
        }
      }
      if (this.agent.cli === "script") {
        if (turn.code !== 0) {
          await this.block(`${scriptEnd(turn, `script of step ${step.id}`)}:\n${turn.tail}`)
          return "blocked"
        }
        await commitAll(this.ws!.path, `${this.taskId}: step ${step.id}`, AUTHOR)
        await this.shared.landing.pushBranch(this.taskId, this.ws!)
        await this.stepStatus(step.id, "done")
        rmSync(doneMark(this.s.project.stateDir, this.taskId, step.id), { force: true })
        continue
      }
      const after = await this.read()
      if (after.status === "blocked") return "blocked"
      if (after.steps?.find((x) => x.id === step.id)?.status === "done") {
        await this.shared.landing.pushBranch(this.taskId, this.ws!) // what the agent committed in the step
        continue
      }
      resumeWith = await this.awaitAnswers(step)
      if (this.s.signal.aborted) return "stopped"
      if (resumeWith) {
        tries.set(step.id, n - 1)
        continue
      }
      if (n > this.s.retries) {
        await this.block(exitNote(turn, `before 'flow step done ${step.id}'`))
        return "blocked"
      }
      this.s.bus.emit({
        type: "retry",
        taskId: this.taskId,
        attempt: n + 1,
        reason: `step ${step.id} not done (${turn.stoppedAfter === undefined ? `exit ${turn.code}` : `stopped after ${formatDuration(turn.stoppedAfter)}: task_timeout`})`,
      })
    }
  }

  private async turn(prompt: string, script: string, stepId?: string, env?: Record<string, string>) {
    const result = await this.launch(prompt, script, stepId, env)
    if (!result.lostSession || this.s.signal.aborted) return result
    // The CLI does not have the session (Gemini never saves one whose first request failed): start a new
    // one with the whole task, since a resume prompt alone would make no sense to a fresh session.
    this.shared.sessions.delete(this.taskId)
    rmSync(this.sessionFile(), { force: true })
    return this.launch(await this.taskPrompt(), script, stepId, env)
  }

  private async launch(prompt: string, script: string, stepId?: string, env?: Record<string, string>): Promise<Turn> {
    const ws = this.ws!
    const limitMs = this.limitMs
    const watch = await this.budget.watch(this.s.signal)
    const limit = turnLimit(
      limitMs,
      watch.signal,
      async (since) => waitingMs(await this.s.db.questions.forTask(this.taskId), since, Date.now()),
      () => this.s.bus.emit({ type: "notice", taskId: this.taskId, text: `task_timeout: its agent ran for ${formatDuration(limitMs!)}: stopping it` }),
    )
    const turn = runTurn({
      doneMark: this.agent.cli === "script" ? doneMark(this.s.project.stateDir, this.taskId, stepId) : undefined,
      onGroup: (pid) => void this.shared.groups.track(pid, this.taskId).catch(() => {}),
      agent: this.agent,
      prompt,
      script,
      cwd: ws.path,
      env: { ...this.agentEnv(), ...env },
      mcp: this.mcpServer(),
      sessionId: this.session(),
      sessionDir: join(this.s.project.stateDir, "sessions", this.taskId),
      usageFile: join(this.s.project.stateDir, "sessions", `${this.taskId}.usage.json`),
      pricing: { table: this.s.prices, model: this.agent.model },
      signal: limit.signal,
      onEvent: (event) => {
        if (event.type === "session") this.saveSession(event.id)
        this.s.bus.emit({ type: "agent", taskId: this.taskId, agent: this.agent.name, event })
      },
    }).finally(() => {
      limit.clear()
      watch.clear()
    })
    const result = await timed(this.taskId, "agent", () => turn)
    this.s.bus.emit({ type: "agent-exit", taskId: this.taskId, agent: this.agent.name, code: result.code, seconds: result.seconds })
    if (!result.limit) this.shared.parking.ok(this.agent.name)
    const budgetStop = watch.stopped()
    if (budgetStop && !this.s.signal.aborted) return { ...result, budgetStop }
    return limit.expired() && !this.s.signal.aborted ? { ...result, stoppedAfter: limitMs } : result
  }

  /**
   * The agent's CLI reported a usage limit: its work is committed, the agent parked until the reset (or a
   * back-off), and the task handed back to the run, in progress with its session, for this agent once the
   * reset comes or for a fallback agent now (lib/run/parking.ts).
   */
  private async park(turn: Turn): Promise<Outcome> {
    await this.commitWork("its agent's usage limit is reached")
    const pinned = (await this.read()).agent_name !== undefined
    parkAndSay({ parking: this.shared.parking, bus: this.s.bus, taskId: this.taskId, agent: this.agent, limit: turn.limit!, pinned })
    return "parked"
  }

  /** A limited turn of a fix waits for the reset where it is (or the run's stop: false). */
  private async waitOutLimit(turn: Turn): Promise<boolean> {
    const until = parkAndSay({ parking: this.shared.parking, bus: this.s.bus, taskId: this.taskId, agent: this.agent, limit: turn.limit!, inPlace: true })
    await sleepUnlessStopped(until.getTime() - Date.now(), this.s.signal)
    return !this.s.signal.aborted
  }

  /** Commits what the agent left in its worktree on its branch, so that no work is lost where it stops. */
  private async commitWork(why: string): Promise<void> {
    const ws = this.ws
    if (!ws || !existsSync(ws.path)) return
    const committed = await commitAll(ws.path, `${this.taskId}: work so far (${why})`, AUTHOR)
    if (committed) this.s.bus.emit({ type: "notice", taskId: this.taskId, text: `committed its agent's work so far on ${ws.branch} (${why})` })
    await this.shared.landing.pushBranch(this.taskId, ws)
  }

  /**
   * What people answered that this task's agent has not been told, once its agent exited: questions still
   * unanswered (the agent asked and left to wait) are waited for (or the run's stop); answers given while it
   * worked, which it never read (`flow ask` without --wait), are taken as they are. Returns the prompt that
   * resumes the session with them, recorded as delivered; undefined when there was nothing to hand over.
   */
  private async awaitAnswers(step: Step | undefined): Promise<string | undefined> {
    const db = this.s.db
    const asked = (await db.questions.forTask(this.taskId)).filter((q) => q.answer === null).map((q) => q.id)
    if (asked.length > 0) {
      this.s.bus.emit({ type: "question-wait", taskId: this.taskId, questions: asked })
      for (;;) {
        if (this.s.signal.aborted) return undefined
        const now = (await Promise.all(asked.map((id) => db.questions.get(id)))).filter((q): q is Question => q !== undefined)
        if (now.every((q) => q.answer !== null)) break
        await sleepUnlessStopped(ANSWER_POLL_MS, this.s.signal)
      }
    }
    const answers = await db.questions.undelivered(this.taskId)
    if (answers.length === 0) return undefined // nothing asked, or the database was reset meanwhile
    this.s.bus.emit({ type: "question-answered", taskId: this.taskId, questions: answers.map((q) => q.id) })
    await this.handedOver(answers)
    return answersPrompt(await this.read(), answers, step, this.agent.mcp)
  }

  /** Lands the task (lib/run/landing.ts); once done, its push and pull request go on in the background. */
  private async finish(task: Task): Promise<void> {
    const ws = this.ws!
    const gone = await worktreeGone(ws)
    if (gone) {
      this.s.bus.emit({ type: "merge-failed", taskId: task.id, branch: ws.branch, target: ws.target, reason: gone })
      return blockTask(this.s, task.id, `nothing was merged: ${gone}`, true, this.claim)
    }
    if (!(await this.shared.landing.land(task.id, task.title, ws, this.shared.background, { fixer: this.fixer(task), finished: true, claim: this.claim })))
      return
    // The outcome is final: free the agent and let dependents start now; the network work (push, pull
    // request) goes on meanwhile: dependents need only the local merge.
    const publish = this.s.publish
    if (publish.push || publish.pullRequest) this.shared.background.add(this.publish(task, ws))
  }

  /**
   * How this task's agent fixes a failed check or a conflict on its branch (docs/RUN.md, "Sent back to the
   * agent"). The script agent runs the task's ```sh fix blocks, with FLOW_FIX and the output in its
   * environment (none: it is not sent back). An agent CLI gets its session resumed with the prompt (a fresh
   * session gets the whole task's prompt first), the task back in progress, and works until `flow done`
   * (fixed) or `flow block` (gave up), retried like any turn.
   */
  private fixer(task: Task): Fixer {
    const blocks = shellBlocks(task.instructions ?? "", "fix")
    return {
      canFix: this.agent.cli !== "script" || blocks.length > 0,
      tools: this.agent.mcp,
      fix: async (prompt, env) => {
        // The finished mark no longer holds: a run killed during the fix reruns it rather than landing as is.
        for (const mark of doneMarks(this.s.project.stateDir, this.taskId)) rmSync(mark, { force: true })
        if (this.agent.cli === "script") {
          const turn = await this.turn(prompt, blocks.map((b) => `\`\`\`sh\n${b}\`\`\`\n`).join("\n"), undefined, env)
          if (this.s.signal.aborted) return "stopped"
          return turn.code === 0 ? "fixed" : "failed"
        }
        await this.setStatus("in_progress")
        const outcome = await this.runWhole(await this.continuation(prompt), env)
        // A budget that stops new work leaves the fix for the next run, as a stop does: not the agent giving up.
        return outcome === "finished" ? "fixed" : outcome === "stopped" || outcome === "paused" ? "stopped" : "gave-up"
      },
    }
  }

  /** Push and pull request, one repository's at a time; a failure is logged and noted, never fatal. */
  private publish(task: Task, ws: Workspace): Promise<void> {
    const { remote, push, pullRequest } = this.s.publish
    const work = async () => {
      if (pullRequest) {
        const body = [
          task.instructions?.trim(),
          task.acceptance_criteria?.length ? `Acceptance criteria:\n${task.acceptance_criteria.map((c) => `- ${c}`).join("\n")}` : "",
          `Task \`${task.id}\`, done by ${this.agent.name} (${this.agent.cli}) under \`flow run\`.`,
        ]
          .filter(Boolean)
          .join("\n\n")
        await this.report(
          "pull-request",
          await openPullRequest({
            repo: ws.repo,
            remote,
            base: pullRequest.base ?? ws.target,
            head: ws.branch,
            title: `${task.id}: ${task.title}`,
            body,
            draft: pullRequest.draft,
          }),
        )
      }
      if (push) await this.report("push", await pushBranch(ws.repo, remote, ws.target))
    }
    const queue = this.shared.publishQueues
    const result = (queue.get(ws.repo) ?? Promise.resolve())
      .then(work)
      .catch((e) => this.report(push ? "push" : "pull-request", { ok: false, detail: (e as Error).message }))
    queue.set(ws.repo, result)
    return result
  }

  private async report(what: "push" | "pull-request", result: PublishResult): Promise<void> {
    if (result.ok) {
      this.s.bus.emit({ type: "published", taskId: this.taskId, what, detail: result.detail })
      if (what === "pull-request")
        await this.write(
          `flow run: pull request ${this.taskId}`,
          (editor) => (editor.append({ taskId: this.taskId }, "ai_notes", `Pull request: ${result.detail}`), []),
        )
      return
    }
    this.s.bus.emit({ type: "publish-failed", taskId: this.taskId, what, detail: result.detail })
    await this.write(
      `flow run: ${what} ${this.taskId}`,
      (editor) => (editor.append({ taskId: this.taskId }, "ai_notes", `${result.detail} (the local merge stands)`), []),
    ).catch(() => {})
  }

  /** A failed validation (this task validates others) blocks the validated tasks too, with the reason. */
  private async afterBlocked(): Promise<void> {
    const { data } = await untilValid(this.s.signal, () => this.s.store.read())
    const index = indexTasks(data)
    const me = index.get(this.taskId)?.task
    const reason = me?.ai_notes?.at(-1) ?? "no reason given"
    const validated = [...index.values()].filter((e) => e.task.validation_task_id === this.taskId && e.task.status !== "blocked")
    if (validated.length === 0) return
    await this.write(`flow run: validation ${this.taskId}`, (editor) =>
      validated.flatMap(({ task }) => {
        editor.append({ taskId: task.id }, "ai_notes", `Validation by ${this.taskId} failed: ${reason}`)
        return applyStatus(editor, task.id, "blocked", now()).changes
      }),
    )
  }

  static async approveCheckpoint(shared: WorkerShared, id: string): Promise<void> {
    await shared.settings.store
      .mutate(`flow run --yes: ${id}`, (editor) => {
        editor.append({ taskId: id }, "ai_notes", "Approved automatically by 'flow run --yes'")
        return applyStatus(editor, id, "done", now()).changes
      })
      .then((changes) => {
        for (const c of changes) shared.settings.bus.emit({ type: "status", taskId: c.id, from: c.from, to: c.to, reason: c.reason })
      })
  }

  private async setStatus(to: "assigned" | "in_progress"): Promise<void> {
    await this.write(`flow run: ${to} ${this.taskId}`, (editor) => applyStatus(editor, this.taskId, to, now()).changes)
  }

  private block(note: string): Promise<void> {
    return blockTask(this.s, this.taskId, note, false, this.claim)
  }

  private async stepStatus(stepId: string, to: "in_progress" | "done"): Promise<void> {
    await untilValid(this.s.signal, () =>
      this.s.store.mutate(
        `flow run: step ${stepId}`,
        (editor) => {
          editor.set({ taskId: this.taskId, stepId }, "status", to)
          editor.set({ taskId: this.taskId, stepId }, to === "done" ? "completed_at" : "started_at", now())
        },
        this.claim,
      ),
    )
  }

  private write(command: string, edit: Parameters<typeof writeStatus>[2]): Promise<void> {
    return writeStatus(this.s, command, edit, this.claim)
  }

  /** Whether the agent's next turn continues its session: a CLI that can resume, and a session to resume. */
  private resumable(): boolean {
    if (this.agent.cli === "script") return false
    const session = this.session()
    return session !== undefined && adapterFor(this.agent.cli, { command: this.agent.command }).canResume
  }

  /** What the next turn is told: the new part alone in a resumed session, else the whole task first. */
  private async continuation(text: string): Promise<string> {
    return this.resumable() ? text : `${await this.taskPrompt()}\n\n${text}`
  }

  private async read(): Promise<Task> {
    const { data } = await untilValid(this.s.signal, () => this.s.store.read())
    const entry = indexTasks(data).get(this.taskId)
    if (!entry) throw new FlowError(`task '${this.taskId}' is no longer in tasks.yaml`)
    return entry.task
  }

  /** The whole task's prompt; the answers it lists are given to the agent with it. */
  private async taskPrompt(): Promise<string> {
    const { data } = await untilValid(this.s.signal, () => this.s.store.read())
    const ready = await this.s.db.questions.undelivered(this.taskId)
    const prompt = await projectTaskPrompt(this.s.project, indexTasks(data), this.taskId, {
      workspace: { branch: this.ws!.branch },
      db: this.s.db,
      prepared: this.prep?.prepared,
      tools: this.agent.mcp,
    })
    await this.handedOver(ready)
    return prompt
  }

  /** Records that the agent is given these answers, in the prompt being sent. */
  private async handedOver(answered: readonly Question[]): Promise<void> {
    const ids = answered.map((q) => q.id)
    if (ids.length > 0) await this.s.db.questions.delivered(this.taskId, ids, "flow run")
  }

  /** Agents find the project and their task through the environment, and `flow` on their PATH. */
  private agentEnv(): Record<string, string | undefined> {
    const bin = join(this.s.project.stateDir, "bin")
    return {
      FLOW_PROJECT: this.s.project.dir,
      FLOW_TASK_ID: this.taskId,
      FLOW_AGENT: this.agent.name,
      // Marks every process the agent starts, whatever session it puts them in, for the reaper (reaper.ts).
      FLOW_RUN_ID: RUN_ID,
      // On a shared graph the claim's number: the agent's own writes of its task are fenced by it, so an attempt
      // that was taken over (its machine paused past its lease) changes nothing (docs/FLEET.md).
      ...(this.claim ? { FLOW_ATTEMPT: String(this.claim.attempt) } : {}),
      PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      // Its ports, and git's view of the files copied into the worktree (kept out of the agent's commits).
      ...this.prep?.env,
    }
  }

  /**
   * flow's MCP server for an agent with `mcp: true`: this flow (the launcher on the agent's PATH) as `flow mcp`,
   * knowing the project, the task and the agent as the agent's own `flow` commands do.
   */
  private mcpServer(): { server: McpServerSpec; dir: string } | undefined {
    if (!this.agent.mcp) return undefined
    const { FLOW_PROJECT, FLOW_TASK_ID, FLOW_AGENT, FLOW_RUN_ID, FLOW_ATTEMPT } = this.agentEnv() as Record<string, string>
    const server = {
      name: "flow",
      command: join(this.s.project.stateDir, "bin", "flow"),
      args: ["mcp"],
      env: { FLOW_PROJECT, FLOW_TASK_ID, FLOW_AGENT, FLOW_RUN_ID, ...(FLOW_ATTEMPT ? { FLOW_ATTEMPT } : {}) },
    }
    return { server, dir: join(this.s.project.stateDir, "mcp", this.taskId) }
  }

  // Sessions survive a stopped run, so an interrupted task resumes in the same agent session (rule 7).
  private sessionFile(): string {
    return join(this.s.project.stateDir, "sessions", `${this.taskId}.json`)
  }

  /** The task's session to resume on this agent's CLI: this run's, else the one saved by an earlier run. */
  private session(): string | undefined {
    const current = this.shared.sessions.get(this.taskId)
    return current ? (current.cli === this.agent.cli ? current.id : undefined) : this.savedSession()
  }

  private savedSession(): string | undefined {
    try {
      const saved = JSON.parse(readFileSync(this.sessionFile(), "utf8")) as { cli: string; session: string }
      return saved.cli === this.agent.cli ? saved.session : undefined
    } catch {
      return undefined
    }
  }

  private saveSession(id: string): void {
    this.shared.sessions.set(this.taskId, { cli: this.agent.cli, id })
    try {
      mkdirSync(join(this.s.project.stateDir, "sessions"), { recursive: true })
      writeFileSync(this.sessionFile(), JSON.stringify({ cli: this.agent.cli, agent: this.agent.name, session: id }))
    } catch (e) {
      // Called from the agent's output stream, which must go on: on a full disk the session is kept in
      // memory for this run; only a later run could not resume it.
      if (!isDiskFull(e)) throw e
    }
  }
}
