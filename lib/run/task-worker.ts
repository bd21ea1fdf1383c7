// One task on one agent, from its worktree to its merge. A task's outcome is its status in tasks.yaml,
// never the agent's exit code: an agent that ran `flow block` and exited 0 leaves a blocked task.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { AgentConfig } from "../config"
import { FlowError } from "../errors"
import { commitAll, ensureWorktree, mergeInto, listWorktrees, removeWorktree } from "../git"
import type { Question } from "../json-shapes"
import { projectTaskPrompt } from "../project-prompt"
import { answersPrompt, currentStep, stepPrompt } from "../prompt"
import { indexTasks, type Step, type Task } from "../task-index"
import { mutateTasks, readTasks } from "../tasks"
import { applyStatus, type Change } from "../transitions"
import { runTurn } from "./agent-runner"
import { openPullRequest, pushBranch, type PublishResult } from "./publish"
import type { RunSettings } from "./orchestrator"
import type { Workspace, Workspaces } from "./workspace"

export type WorkerShared = {
  settings: RunSettings
  workspaces: Workspaces
  /** one git operation on a repository's shared state (worktrees, merges) at a time: git fails on its own locks */
  repoQueues: Map<string, Promise<unknown>>
  /** clean-ups that need not hold up the next task (worktree removal); awaited before the run ends */
  background: Set<Promise<unknown>>
  /** where each repository's target branch is checked out (found once per run) */
  checkouts: Map<string, string | undefined>
  /** pushes and pull requests of a repository, one after another (pushes of the target must not race) */
  publishQueues: Map<string, Promise<unknown>>
  sessions: Map<string, string>
}

/** How often a task whose agent exited to wait looks for the answers (one indexed read of the state db). */
const ANSWER_POLL_MS = 200
const AUTHOR = { name: "flow", email: "flow@localhost" }
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z")

type Outcome = "finished" | "blocked" | "stopped"

export class TaskWorker {
  private ws?: Workspace

  constructor(
    private shared: WorkerShared,
    private taskId: string,
    private agent: AgentConfig,
  ) {}

  private get s(): RunSettings {
    return this.shared.settings
  }

  async run(): Promise<void> {
    try {
      const task = await this.read()
      if (task.status === "done") {
        // Done by an earlier run that stopped before its merge: merge only, never run it again.
        this.ws = await this.shared.workspaces.forTask(task)
        if (existsSync(this.ws.path)) await this.finish(task)
        return
      }
      this.s.bus.emit({ type: "task-assigned", taskId: this.taskId, agent: this.agent.name, cli: this.agent.cli })
      this.ws = await this.shared.workspaces.forTask(task)
      const ws = this.ws
      const how = await this.inRepo(() => ensureWorktree(ws.repo, ws.path, ws.branch, ws.target))
      await this.setStatus("in_progress")
      this.s.bus.emit({ type: "task-start", taskId: this.taskId, agent: this.agent.name, branch: this.ws.branch, worktree: this.ws.path, resumed: how === "reused" })
      // A run stopped while the agent waited for answers: wait again before launching anything, then
      // resume its session with the answers (a fresh session gets them in the full prompt).
      const started = await this.read()
      const answers = await this.awaitAnswers(currentStep(started))
      if (this.s.signal.aborted) return
      const resumeWith = answers && (this.shared.sessions.get(this.taskId) ?? this.savedSession()) ? answers : undefined
      const outcome = started.steps?.length ? await this.runSteps(resumeWith) : await this.runWhole(resumeWith)
      if (outcome === "finished") await this.finish(await this.read())
      else if (outcome === "blocked") await this.afterBlocked()
    } catch (e) {
      if (!this.s.signal.aborted) {
        const message = e instanceof FlowError ? e.message : String((e as Error)?.stack ?? e)
        await this.block(`flow run: ${message}`).catch(() => {})
      }
    } finally {
      const status = await this.read().then((t) => t.status, () => "unknown")
      this.s.bus.emit({ type: "task-end", taskId: this.taskId, agent: this.agent.name, cli: this.agent.cli, status })
    }
  }

  /** A task without steps: one session, retried (resumed) when the agent exits without done or block. */
  private async runWhole(resumeWith?: string): Promise<Outcome> {
    let prompt = resumeWith ?? await this.taskPrompt()
    for (let attempt = 1; ; attempt++) {
      const task = await this.read()
      const turn = await this.turn(prompt, task.instructions ?? "")
      if (this.s.signal.aborted) return "stopped"
      const after = await this.read()
      if (after.status === "blocked") return "blocked"
      if (after.status === "done") return "finished"
      if (this.agent.cli === "script") {
        if (turn.code === 0) return "finished"
        await this.block(`script failed (exit ${turn.code}):\n${turn.tail}`)
        return "blocked"
      }
      const answers = await this.awaitAnswers(undefined)
      if (this.s.signal.aborted) return "stopped"
      if (answers) {
        // Asking and exiting to wait is allowed, not a failed attempt.
        prompt = answers
        attempt--
        continue
      }
      if (attempt > this.s.retries) {
        await this.block(`the agent exited (code ${turn.code}${turn.error ? `: ${turn.error}` : ""}) without 'flow done' or 'flow block'${turn.tail ? `; its last output:\n${turn.tail}` : ""}`)
        return "blocked"
      }
      const reason = `the agent exited (code ${turn.code}) without 'flow done ${this.taskId}' or 'flow block ${this.taskId}'`
      this.s.bus.emit({ type: "retry", taskId: this.taskId, attempt: attempt + 1, reason })
      prompt = `${reason}. Finish the task, then run 'flow done ${this.taskId}', or run 'flow block ${this.taskId} "<reason>"' if you cannot.\n`
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
      const session = this.shared.sessions.get(this.taskId) ?? this.savedSession()
      const prompt = resumeWith ?? (session || this.agent.cli === "script" ? stepPrompt(task, step) : await this.taskPrompt())
      this.s.bus.emit({ type: "step-start", taskId: this.taskId, stepId: step.id, agent: this.agent.name, session })
      const turn = await this.turn(n > 1 && !resumeWith ? `${prompt}\nThe last attempt ended before 'flow step done ${step.id}'. Continue the step.\n` : prompt, step.instruction)
      resumeWith = undefined
      if (this.s.signal.aborted) return "stopped"
      if (this.agent.cli === "script") {
        if (turn.code !== 0) {
          await this.block(`script of step ${step.id} failed (exit ${turn.code}):\n${turn.tail}`)
          return "blocked"
        }
        await commitAll(this.ws!.path, `${this.taskId}: step ${step.id}`, AUTHOR)
        await this.stepStatus(step.id, "done")
        continue
      }
      const after = await this.read()
      if (after.status === "blocked") return "blocked"
      if (after.steps?.find((x) => x.id === step.id)?.status === "done") continue
      resumeWith = await this.awaitAnswers(step)
      if (this.s.signal.aborted) return "stopped"
      if (resumeWith) {
        tries.set(step.id, n - 1)
        continue
      }
      if (n > this.s.retries) {
        await this.block(`the agent exited (code ${turn.code}${turn.error ? `: ${turn.error}` : ""}) before 'flow step done ${step.id}'${turn.tail ? `; its last output:\n${turn.tail}` : ""}`)
        return "blocked"
      }
      this.s.bus.emit({ type: "retry", taskId: this.taskId, attempt: n + 1, reason: `step ${step.id} not done (exit ${turn.code})` })
    }
  }

  private async turn(prompt: string, script: string) {
    const result = await this.launch(prompt, script)
    if (!result.lostSession || this.s.signal.aborted) return result
    // The CLI does not have the session (Gemini never saves one whose first request failed): start a new
    // one with the whole task, since a resume prompt alone would make no sense to a fresh session.
    this.shared.sessions.delete(this.taskId)
    rmSync(this.sessionFile(), { force: true })
    return this.launch(await this.taskPrompt(), script)
  }

  private async launch(prompt: string, script: string) {
    const ws = this.ws!
    const result = await runTurn({
      agent: this.agent,
      prompt,
      script,
      cwd: ws.path,
      env: this.agentEnv(),
      sessionId: this.shared.sessions.get(this.taskId) ?? this.savedSession(),
      signal: this.s.signal,
      onEvent: (event) => {
        if (event.type === "session") this.saveSession(event.id)
        this.s.bus.emit({ type: "agent", taskId: this.taskId, agent: this.agent.name, event })
      },
    })
    this.s.bus.emit({ type: "agent-exit", taskId: this.taskId, agent: this.agent.name, code: result.code, seconds: result.seconds })
    return result
  }

  /**
   * Questions about this task still unanswered after its agent exited: the agent asked and left to wait.
   * Waits for people to answer all of them (or the run to stop) and returns the prompt that resumes the
   * session with the answers; undefined when there was nothing to wait for.
   */
  private async awaitAnswers(step: Step | undefined): Promise<string | undefined> {
    const db = this.s.db
    const asked = (await db.questions.forTask(this.taskId)).filter((q) => q.answer === null).map((q) => q.id)
    if (asked.length === 0) return undefined
    this.s.bus.emit({ type: "question-wait", taskId: this.taskId, questions: asked })
    const stopped = new Promise<void>((resolve) => this.s.signal.addEventListener("abort", () => resolve(), { once: true }))
    for (;;) {
      if (this.s.signal.aborted) return undefined
      const now = await Promise.all(asked.map((id) => db.questions.get(id)))
      const known = now.filter((q): q is Question => q !== undefined)
      if (known.every((q) => q.answer !== null)) {
        if (known.length === 0) return undefined // the database was reset meanwhile: nothing to hand over
        this.s.bus.emit({ type: "question-answered", taskId: this.taskId, questions: known.map((q) => q.id) })
        return answersPrompt(await this.read(), known, step)
      }
      await Promise.race([Bun.sleep(ANSWER_POLL_MS), stopped])
    }
  }

  /** Commits what the agent left, merges into the target (one merge per repo at a time), marks done. */
  private async finish(task: Task): Promise<void> {
    const ws = this.ws!
    await commitAll(ws.path, `${task.id}: ${task.title}`, AUTHOR)
    const result = await this.inRepo(() => this.merge(ws))
    if (!result.ok) {
      this.s.bus.emit({ type: "merge-failed", taskId: task.id, branch: ws.branch, target: ws.target, reason: result.reason })
      await this.block(`merge of ${ws.branch} into ${ws.target} failed: ${result.reason}. The target was left as it was; resolve it on ${ws.branch} (in ${ws.path}) and run 'flow done ${task.id}'`, true)
      return
    }
    this.s.bus.emit({ type: "merge", taskId: task.id, branch: ws.branch, target: ws.target, commit: result.commit })
    await this.setStatus("done")
    // The outcome is final: free the agent and let dependents start now; the worktree goes meanwhile,
    // and the network work (push, pull request) too: dependents need only the local merge.
    this.shared.background.add(this.inRepo(() => removeWorktree(ws.repo, ws.path, false)).catch(() => {}))
    const publish = this.s.publish
    if (publish.push || publish.pullRequest) this.shared.background.add(this.publish(task, ws))
  }

  /** Push and pull request, one repository's at a time; a failure is logged and noted, never fatal. */
  private publish(task: Task, ws: Workspace): Promise<void> {
    const { remote, push, pullRequest } = this.s.publish
    const work = async () => {
      if (pullRequest) {
        const body = [task.instructions?.trim(), task.acceptance_criteria?.length ? `Acceptance criteria:\n${task.acceptance_criteria.map((c) => `- ${c}`).join("\n")}` : "",
          `Task \`${task.id}\`, done by ${this.agent.name} (${this.agent.cli}) under \`flow run\`.`].filter(Boolean).join("\n\n")
        await this.report("pull-request", await openPullRequest({ repo: ws.repo, remote, base: pullRequest.base ?? ws.target, head: ws.branch,
          title: `${task.id}: ${task.title}`, body, draft: pullRequest.draft }))
      }
      if (push) await this.report("push", await pushBranch(ws.repo, remote, ws.target))
    }
    const queue = this.shared.publishQueues
    const result = (queue.get(ws.repo) ?? Promise.resolve()).then(work).catch((e) =>
      this.report(push ? "push" : "pull-request", { ok: false, detail: (e as Error).message }))
    queue.set(ws.repo, result)
    return result
  }

  private async report(what: "push" | "pull-request", result: PublishResult): Promise<void> {
    if (result.ok) {
      this.s.bus.emit({ type: "published", taskId: this.taskId, what, detail: result.detail })
      if (what === "pull-request") await this.write(`flow run: pull request ${this.taskId}`, (editor) => (editor.append({ taskId: this.taskId }, "ai_notes", `Pull request: ${result.detail}`), []))
      return
    }
    this.s.bus.emit({ type: "publish-failed", taskId: this.taskId, what, detail: result.detail })
    await this.write(`flow run: ${what} ${this.taskId}`, (editor) => (editor.append({ taskId: this.taskId }, "ai_notes", `${result.detail} (the local merge stands)`), [])).catch(() => {})
  }

  /** Runs `fn` after every earlier git operation on this task's repository has finished. */
  private inRepo<T>(fn: () => Promise<T>): Promise<T> {
    const repo = this.ws!.repo
    const result = (this.shared.repoQueues.get(repo) ?? Promise.resolve()).then(fn)
    this.shared.repoQueues.set(repo, result.catch(() => {}))
    return result
  }

  private async merge(ws: Workspace) {
    const checkouts = this.shared.checkouts
    const key = `${ws.repo}\0${ws.target}`
    if (!checkouts.has(key)) checkouts.set(key, (await listWorktrees(ws.repo)).find((w) => w.branch === ws.target)?.path)
    const checkout = checkouts.get(key) ? { path: checkouts.get(key)! } : undefined
    if (!checkout) {
      checkouts.delete(key) // it may be checked out later in the run
      return { ok: false as const, conflicts: [], reason: `no checkout of '${ws.target}' to merge into: check it out in ${ws.repo}` }
    }
    return mergeInto(checkout.path, ws.branch, `Merge ${ws.branch}: ${this.taskId}`, AUTHOR)
  }

  /** A failed validation (this task validates others) blocks the validated tasks too, with the reason. */
  private async afterBlocked(): Promise<void> {
    const { data } = await readTasks(this.s.project)
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
    await mutateTasks(shared.settings.project, `flow run --yes: ${id}`, (editor) => {
      editor.append({ taskId: id }, "ai_notes", "Approved automatically by 'flow run --yes'")
      return applyStatus(editor, id, "done", now()).changes
    }).then((changes) => changes.forEach((c) => shared.settings.bus.emit({ type: "status", taskId: c.id, from: c.from, to: c.to, reason: c.reason })))
  }

  private async setStatus(to: "in_progress" | "done" | "blocked"): Promise<void> {
    await this.write(`flow run: ${to} ${this.taskId}`, (editor) => applyStatus(editor, this.taskId, to, now()).changes)
  }

  /** Blocks the task with a note; after a failed merge, dependents promoted too early go back to todo. */
  private async block(note: string, demoteDependents = false): Promise<void> {
    await this.write(`flow run: block ${this.taskId}`, (editor) => {
      editor.append({ taskId: this.taskId }, "ai_notes", note)
      const changes = applyStatus(editor, this.taskId, "blocked", now()).changes
      if (demoteDependents) {
        for (const { task } of editor.tasks.values()) {
          if (task.status === "ready_for_agent" && task.depends_on?.includes(this.taskId)) changes.push(...applyStatus(editor, task.id, "todo", now()).changes)
        }
      }
      return changes
    })
  }

  private async stepStatus(stepId: string, to: "in_progress" | "done"): Promise<void> {
    await mutateTasks(this.s.project, `flow run: step ${stepId}`, (editor) => {
      editor.set({ taskId: this.taskId, stepId }, "status", to)
      editor.set({ taskId: this.taskId, stepId }, to === "done" ? "completed_at" : "started_at", now())
    })
  }

  private async write(command: string, edit: Parameters<typeof mutateTasks<Change[]>>[2]): Promise<void> {
    const changes = await mutateTasks(this.s.project, command, edit)
    for (const c of changes) this.s.bus.emit({ type: "status", taskId: c.id, from: c.from, to: c.to, reason: c.reason })
  }

  private async read(): Promise<Task> {
    const { data } = await readTasks(this.s.project)
    const entry = indexTasks(data).get(this.taskId)
    if (!entry) throw new FlowError(`task '${this.taskId}' is no longer in tasks.yaml`)
    return entry.task
  }

  private async taskPrompt(): Promise<string> {
    const { data } = await readTasks(this.s.project)
    return projectTaskPrompt(this.s.project, indexTasks(data), this.taskId, { workspace: { branch: this.ws!.branch }, db: this.s.db })
  }

  /** Agents find the project and their task through the environment, and `flow` on their PATH. */
  private agentEnv(): Record<string, string | undefined> {
    const bin = join(this.s.project.stateDir, "bin")
    return {
      FLOW_PROJECT: this.s.project.dir,
      FLOW_TASK_ID: this.taskId,
      FLOW_AGENT: this.agent.name,
      PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    }
  }

  // Sessions survive a stopped run, so an interrupted task resumes in the same agent session (rule 7).
  private sessionFile(): string {
    return join(this.s.project.stateDir, "sessions", `${this.taskId}.json`)
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
    this.shared.sessions.set(this.taskId, id)
    mkdirSync(join(this.s.project.stateDir, "sessions"), { recursive: true })
    writeFileSync(this.sessionFile(), JSON.stringify({ cli: this.agent.cli, agent: this.agent.name, session: id }))
  }
}
