// One task on one agent, from its worktree to its merge. A task's outcome is its status in tasks.yaml,
// never the agent's exit code: an agent that ran `flow block` and exited 0 leaves a blocked task.
import { rmSync } from "node:fs"
import type { AgentConfig } from "../../config/config"
import { type Claim, StoreUnreachable } from "../../store/store"
import { FlowError } from "../../cli/errors"
import { currentStep } from "../../prompts/prompt"
import { applyStatus } from "../../store/transitions"
import { isoSeconds as now } from "../../cli/clock"
import { identityEnv } from "../../git/identity"
import { takenOverNote } from "../../git/remote-git"
import type { RunSettings } from "../settings"
import { parseDuration } from "../../cli/duration"
import { prepareWorktree } from "../../worktree/prepare"
import { doneMarks } from "../../agents/script-agent"
import { untilValid } from "../tasks-wait"
import { timed } from "../../cli/trace"
import { sleepUnlessStopped } from "../../cli/stop-sleep"
import { agentEnv } from "./agent-turn"
import { awaitAnswers, continuation, resumable } from "./agent-session"
import { runSteps, runWhole } from "./task-steps"
import { afterBlocked, finish } from "./task-end"
import { WorkerTask, type WorkerShared } from "./worker-task"

/** How long an attempt the database's absence stopped pauses before it asks whether the database answers. */
const AWAY_PAUSE_MS = 1_000

export class TaskWorker {
  private readonly t: WorkerTask

  /**
   * `handover`: what the first turn is told of a turn a usage limit stopped (lib/budget/parking.ts); `claim`: the
   * run's claim of the task on a shared graph, which fences every write of the task (docs/FLEET.md).
   */
  constructor(
    shared: WorkerShared,
    taskId: string,
    agent: AgentConfig,
    private handover?: string,
    claim?: Claim,
  ) {
    this.t = new WorkerTask(shared, taskId, agent, claim)
  }

  private get s(): RunSettings {
    return this.t.s
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
        const unblocked = await this.untilRoom(() => this.t.block(`flow run: ${message}`)).then(
          () => undefined,
          (e2) => {
            const why = (e2 as Error).message.split("\n")[0]
            return message.startsWith(why) ? `its status cannot be written: ${why}` : `it failed (${message.split("\n")[0]}) and could not be blocked: ${why}`
          },
        )
        if (unblocked && !this.s.signal.aborted) return unblocked
      }
    } finally {
      this.t.prep?.release()
      const status = await this.t.read().then(
        (task) => task.status,
        () => "unknown",
      )
      this.s.bus.emit({ type: "task-end", taskId: this.t.taskId, agent: this.t.agent.name, cli: this.t.agent.cli, status })
    }
  }

  /**
   * `fn`, tried again (with `retry` true) after the disk had no room for it (lib/run/space-wait.ts) or a
   * shared graph's database could not be reached (the run says so; docs/FLEET.md, "The database away
   * mid-run"): the task keeps its place, nothing is blocked for it, and the run's stop ends the wait.
   */
  private async untilRoom(fn: (retry: boolean) => Promise<void>): Promise<void> {
    const space = this.t.shared.space
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
        if (this.s.signal.aborted || !space.claims(e, this.t.ws ? [this.t.ws.path] : [], this.t.taskId)) throw e
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
    const t = this.t
    const task = await t.read()
    t.limitMs = task.task_timeout === undefined ? t.s.taskTimeoutMs : parseDuration(task.task_timeout, `task '${t.taskId}': task_timeout`)
    if (retry && (task.status === "done" || task.status === "blocked")) {
      if (!t.ws) return // decided by a person before this worker got its worktree: nothing of ours to land
      return task.status === "done" ? finish(t, task) : afterBlocked(t)
    }
    if (task.status !== "in_progress" && task.status !== "assigned") {
      // A fresh start (never run, or reset by a person): what an earlier attempt journaled is history.
      await t.shared.landing.journal.close(t.taskId)
      for (const mark of doneMarks(t.s.project.stateDir, t.taskId)) rmSync(mark, { force: true })
    }
    if (!retry) t.s.bus.emit({ type: "task-assigned", taskId: t.taskId, agent: t.agent.name, cli: t.agent.cli })
    // SPEC rule 3: the orchestrator hands the task to an agent (assigned), then the agent works (in_progress).
    t.ws = await t.shared.workspaces.forTask(task)
    const ws = t.ws
    // The claim (a tasks.yaml write) and the worktree (git) do not wait for each other.
    const [, how] = await Promise.all([
      task.status !== "in_progress" ? timed(t.taskId, "claim", () => t.setStatus("assigned")) : undefined,
      timed(t.taskId, "worktree", () => t.shared.landing.worktree(t.taskId, ws)),
    ])
    t.identity ??= await identityEnv(ws.path, process.env)
    // Another machine's attempt pushed the branch and died: its work is here, its agent's session is not.
    if (how === "taken-over") this.handover ??= takenOverNote(ws.branch)
    await timed(t.taskId, "start", () => t.setStatus("in_progress"))
    // Taken over from a run that died after its merge reached the shared remote, before its done write: the
    // branch it pushed is in the remote's target. Landed as it is (done, no second merge), its agent never run again.
    if (how === "taken-over" && (await t.shared.landing.landedOnRemote(ws))) return finish(t, await t.read())
    t.s.bus.emit({
      type: "task-start",
      taskId: t.taskId,
      agent: t.agent.name,
      branch: t.ws.branch,
      worktree: t.ws.path,
      resumed: how === "reused",
    })
    // The worktree made ready (flow.yaml copy, ports, setup) before any agent works in it; an earlier
    // attempt's ports (a retry after a full disk) go back first.
    t.prep?.release()
    t.prep = undefined
    const prep = await prepareWorktree(t.s, {
      taskId: t.taskId,
      agent: t.agent.name,
      ws,
      env: agentEnv(t),
      onGroup: (pid) => void t.shared.groups.track(pid, t.taskId).catch(() => {}),
    })
    t.prep = prep.ok ? prep : undefined
    if (!prep.ok) {
      if (prep.note === undefined) return // the run stops
      await t.block(prep.note)
      return afterBlocked(t)
    }
    // A run stopped while the agent waited for answers: wait again before launching anything, then
    // resume its session with the answers (a fresh session gets them in the full prompt).
    const started = await t.read()
    const answers = await awaitAnswers(t, currentStep(started))
    if (t.s.signal.aborted) return
    const handover = this.handover
    this.handover = undefined // told once: a retry after a full disk is no new handover
    const resumeWith = resumable(t) ? [answers, handover].filter(Boolean).join("\n") || undefined : handover ? await continuation(t, handover) : undefined
    const outcome = started.steps?.length ? await runSteps(t, resumeWith) : await runWhole(t, resumeWith)
    if (outcome === "finished") await finish(t, await t.read())
    else if (outcome === "blocked") await afterBlocked(t)
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
}
