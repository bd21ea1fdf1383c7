// The end of a task's work: a finished task landed (its agent fixing what the merge queue sends back), then
// pushed and offered as a pull request in the background; a blocked validation task's validated tasks blocked.
import { rmSync } from "node:fs"
import { indexTasks, type Task } from "../../model/task-index"
import { applyStatus } from "../../store/transitions"
import { openPullRequest, pushBranch, type PublishResult } from "../../git/publish"
import type { Workspace } from "../../git/workspace"
import { agentTurn } from "./agent-turn"
import { continuation } from "./agent-session"
import { isoSeconds as now } from "../../cli/clock"
import { blockTask, worktreeGone, type Fixer, type FixOutcome } from "../landing"
import { doneMarks, shellBlocks } from "../../agents/script-agent"
import { runWhole } from "./task-steps"
import { untilValid } from "../tasks-wait"
import type { WorkerTask } from "./worker-task"

/** Lands the task (lib/run/landing.ts); once done, its push and pull request go on in the background. */
export async function finish(t: WorkerTask, task: Task): Promise<void> {
  const ws = t.ws!
  const gone = await worktreeGone(ws)
  if (gone) {
    t.s.bus.emit({ type: "merge-failed", taskId: task.id, branch: ws.branch, target: ws.target, reason: gone })
    return blockTask(t.s, task.id, `nothing was merged: ${gone}`, true, t.claim)
  }
  // While the task waits in the merge queue its agent is free for the next task (docs/RUN.md, "Scheduling").
  t.shared.slots?.release(t.agent.name, t.taskId)
  if (!(await t.shared.landing.land(task.id, task.title, ws, t.shared.background, { fixer: fixer(t, task), finished: true, claim: t.claim }))) return
  // The outcome is final: free the agent and let dependents start now; the network work (push, pull
  // request) goes on meanwhile: dependents need only the local merge.
  const publish = t.s.publish
  if (publish.push || publish.pullRequest) t.shared.background.add(publishTask(t, task, ws))
}

/**
 * How this task's agent fixes a failed check or a conflict on its branch (docs/RUN.md, "Sent back to the
 * agent"). The script agent runs the task's ```sh fix blocks, with FLOW_FIX and the output in its
 * environment (none: it is not sent back). An agent CLI gets its session resumed with the prompt (a fresh
 * session gets the whole task's prompt first), the task back in progress, and works until `flow done`
 * (fixed) or `flow block` (gave up), retried like any turn.
 */
function fixer(t: WorkerTask, task: Task): Fixer {
  const blocks = shellBlocks(task.instructions ?? "", "fix")
  return {
    canFix: t.agent.cli !== "script" || blocks.length > 0,
    tools: t.agent.mcp,
    fix: async (prompt, env) => {
      // The same agent (its session) fixes it: it takes a slot again, before any new task, once it is free.
      const slots = t.shared.slots
      if (slots && !(await slots.retake(t.agent.name, t.taskId, t.s.signal))) return "stopped"
      try {
        return await fixRound(t, blocks, prompt, env)
      } finally {
        slots?.release(t.agent.name, t.taskId)
      }
    },
  }
}

/** One fix round by the task's agent: "fixed", "failed" (script), "gave-up" or "stopped". */
async function fixRound(t: WorkerTask, blocks: string[], prompt: string, env: Record<string, string>): Promise<FixOutcome> {
  // The finished mark no longer holds: a run killed during the fix reruns it rather than landing as is.
  for (const mark of doneMarks(t.s.project.stateDir, t.taskId)) rmSync(mark, { force: true })
  if (t.agent.cli === "script") {
    const turn = await agentTurn(t, prompt, blocks.map((b) => `\`\`\`sh\n${b}\`\`\`\n`).join("\n"), undefined, env)
    if (t.s.signal.aborted) return "stopped"
    return turn.code === 0 ? "fixed" : "failed"
  }
  await t.setStatus("in_progress")
  const outcome = await runWhole(t, await continuation(t, prompt), env)
  // A budget that stops new work leaves the fix for the next run, as a stop does: not the agent giving up.
  return outcome === "finished" ? "fixed" : outcome === "stopped" || outcome === "paused" ? "stopped" : "gave-up"
}

/** Push and pull request, one repository's at a time; a failure is logged and noted, never fatal. */
function publishTask(t: WorkerTask, task: Task, ws: Workspace): Promise<void> {
  const { remote, push, pullRequest } = t.s.publish
  const work = async () => {
    if (pullRequest) {
      const body = [
        task.instructions?.trim(),
        task.acceptance_criteria?.length ? `Acceptance criteria:\n${task.acceptance_criteria.map((c) => `- ${c}`).join("\n")}` : "",
        `Task \`${task.id}\`, done by ${t.agent.name} (${t.agent.cli}) under \`flow run\`.`,
      ]
        .filter(Boolean)
        .join("\n\n")
      await report(
        t,
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
    if (push) await report(t, "push", await pushBranch(ws.repo, remote, ws.target))
  }
  const queue = t.shared.publishQueues
  const result = (queue.get(ws.repo) ?? Promise.resolve())
    .then(work)
    .catch((e) => report(t, push ? "push" : "pull-request", { ok: false, detail: (e as Error).message }))
  queue.set(ws.repo, result)
  return result
}

async function report(t: WorkerTask, what: "push" | "pull-request", result: PublishResult): Promise<void> {
  if (result.ok) {
    t.s.bus.emit({ type: "published", taskId: t.taskId, what, detail: result.detail })
    if (what === "pull-request")
      await t.write(`flow run: pull request ${t.taskId}`, (editor) => (editor.append({ taskId: t.taskId }, "ai_notes", `Pull request: ${result.detail}`), []))
    return
  }
  t.s.bus.emit({ type: "publish-failed", taskId: t.taskId, what, detail: result.detail })
  await t
    .write(`flow run: ${what} ${t.taskId}`, (editor) => (editor.append({ taskId: t.taskId }, "ai_notes", `${result.detail} (the local merge stands)`), []))
    .catch(() => {})
}

/** A failed validation (this task validates others) blocks the validated tasks too, with the reason. */
export async function afterBlocked(t: WorkerTask): Promise<void> {
  const { data } = await untilValid(t.s.signal, () => t.s.store.read())
  const index = indexTasks(data)
  const me = index.get(t.taskId)?.task
  const reason = me?.ai_notes?.at(-1) ?? "no reason given"
  const validated = [...index.values()].filter((e) => e.task.validation_task_id === t.taskId && e.task.status !== "blocked")
  if (validated.length === 0) return
  await t.write(`flow run: validation ${t.taskId}`, (editor) =>
    validated.flatMap(({ task }) => {
      editor.append({ taskId: task.id }, "ai_notes", `Validation by ${t.taskId} failed: ${reason}`)
      return applyStatus(editor, task.id, "blocked", now()).changes
    }),
  )
}
