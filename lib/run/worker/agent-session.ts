// A task's agent session: which one the next turn resumes, and what it is told (the whole task's prompt for a
// fresh session, the new part alone for a resumed one, the answers people gave, recorded as delivered).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { adapterFor } from "../../agents"
import type { Question } from "../../model/json-shapes"
import { indexTasks, type Step } from "../../model/task-index"
import { isDiskFull } from "../../store/disk-full"
import { projectTaskPrompt } from "../../prompts/project-prompt"
import { answersPrompt } from "../../prompts/prompt"
import { sleepUnlessStopped } from "../../cli/stop-sleep"
import { untilValid } from "../tasks-wait"
import type { WorkerTask } from "./worker-task"

/** How often a task whose agent exited to wait looks for the answers (one indexed read of the state db). */
const ANSWER_POLL_MS = 200

// Sessions survive a stopped run, so an interrupted task resumes in the same agent session (rule 7).
function sessionFile(t: WorkerTask): string {
  return join(t.s.project.stateDir, "sessions", `${t.taskId}.json`)
}

/** The task's session to resume on this agent's CLI: this run's, else the one saved by an earlier run. */
export function session(t: WorkerTask): string | undefined {
  const current = t.shared.sessions.get(t.taskId)
  return current ? (current.cli === t.agent.cli ? current.id : undefined) : savedSession(t)
}

function savedSession(t: WorkerTask): string | undefined {
  try {
    const saved = JSON.parse(readFileSync(sessionFile(t), "utf8")) as { cli: string; session: string }
    return saved.cli === t.agent.cli ? saved.session : undefined
  } catch {
    return undefined
  }
}

export function saveSession(t: WorkerTask, id: string): void {
  t.shared.sessions.set(t.taskId, { cli: t.agent.cli, id })
  try {
    mkdirSync(join(t.s.project.stateDir, "sessions"), { recursive: true })
    writeFileSync(sessionFile(t), JSON.stringify({ cli: t.agent.cli, agent: t.agent.name, session: id }))
  } catch (e) {
    // Called from the agent's output stream, which must go on: on a full disk the session is kept in
    // memory for this run; only a later run could not resume it.
    if (!isDiskFull(e)) throw e
  }
}

/** Forgets the task's session, in this run and on disk: the next turn starts a new one. */
export function forgetSession(t: WorkerTask): void {
  t.shared.sessions.delete(t.taskId)
  rmSync(sessionFile(t), { force: true })
}

/** Whether the agent's next turn continues its session: a CLI that can resume, and a session to resume. */
export function resumable(t: WorkerTask): boolean {
  if (t.agent.cli === "script") return false
  return session(t) !== undefined && adapterFor(t.agent.cli, { command: t.agent.command }).canResume
}

/** What the next turn is told: the new part alone in a resumed session, else the whole task first. */
export async function continuation(t: WorkerTask, text: string): Promise<string> {
  return resumable(t) ? text : `${await taskPrompt(t)}\n\n${text}`
}

/** The whole task's prompt; the answers it lists are given to the agent with it. */
export async function taskPrompt(t: WorkerTask): Promise<string> {
  const { data } = await untilValid(t.s.signal, () => t.s.store.read())
  const ready = await t.s.db.questions.undelivered(t.taskId)
  const prompt = await projectTaskPrompt(t.s.project, indexTasks(data), t.taskId, {
    workspace: { branch: t.ws!.branch },
    db: t.s.db,
    prepared: t.prep?.prepared,
    tools: t.agent.mcp,
  })
  await handedOver(t, ready)
  return prompt
}

/** Records that the agent is given these answers, in the prompt being sent. */
async function handedOver(t: WorkerTask, answered: readonly Question[]): Promise<void> {
  const ids = answered.map((q) => q.id)
  if (ids.length > 0) await t.s.db.questions.delivered(t.taskId, ids, "flow run")
}

/**
 * What people answered that this task's agent has not been told, once its agent exited: questions still
 * unanswered (the agent asked and left to wait) are waited for (or the run's stop); answers given while it
 * worked, which it never read (`flow ask` without --wait), are taken as they are. Returns the prompt that
 * resumes the session with them, recorded as delivered; undefined when there was nothing to hand over.
 */
export async function awaitAnswers(t: WorkerTask, step: Step | undefined): Promise<string | undefined> {
  const db = t.s.db
  const asked = (await db.questions.forTask(t.taskId)).filter((q) => q.answer === null).map((q) => q.id)
  if (asked.length > 0) {
    t.s.bus.emit({ type: "question-wait", taskId: t.taskId, questions: asked })
    for (;;) {
      if (t.s.signal.aborted) return undefined
      const now = (await Promise.all(asked.map((id) => db.questions.get(id)))).filter((q): q is Question => q !== undefined)
      if (now.every((q) => q.answer !== null)) break
      await sleepUnlessStopped(ANSWER_POLL_MS, t.s.signal)
    }
  }
  const answers = await db.questions.undelivered(t.taskId)
  if (answers.length === 0) return undefined // nothing asked, or the database was reset meanwhile
  t.s.bus.emit({ type: "question-answered", taskId: t.taskId, questions: answers.map((q) => q.id) })
  await handedOver(t, answers)
  return answersPrompt(await t.read(), answers, step, t.agent.mcp)
}
