// From a finished branch to the target: land it (through the merge queue, or today's merge without a
// check), and when its check fails or it conflicts, send it back to the agent that wrote it with what went
// wrong, up to a number of attempts. A person is asked (the task blocked) only when the agent gives up or
// the attempts run out. docs/RUN.md, "Sent back to the agent".
import { commitsBetween } from "../git"
import type { Task } from "../task-index"
import type { EventBus } from "./events"
import type { Verdict } from "./merge-queue"

export type FixOutcome = "fixed" | "gave-up" | "stopped" | "failed"
/** Why a failure is not sent back: the script agent has no ```sh fix block, or it is not the agent's to fix. */
export type Landed = { ok: true; commit: string; alreadyMerged: boolean } | { ok: false; verdict: Exclude<Verdict, { ok: true }>; gaveUp: boolean; attempts: number }

export type Landing = {
  task: Task
  branch: string
  target: string
  repo: string
  /** how many times the agent may be sent back */
  attempts: number
  /** false: a failure blocks at once (a script agent without a fix block) */
  canFix: boolean
  bus: EventBus
  /** commits what the agent left, before each try */
  commit: () => Promise<void>
  land: () => Promise<Verdict>
  /** one round of fixing by the agent: `prompt` for an agent CLI, `env` for the script agent's fix blocks */
  fix: (prompt: string, env: Record<string, string>) => Promise<FixOutcome>
  /** the title and instructions of a task that wrote commits the branch conflicts with */
  describeTask: (id: string) => Promise<Task | undefined>
}

export async function landWithFixes(l: Landing): Promise<Landed> {
  for (let attempt = 1; ; attempt++) {
    await l.commit()
    const verdict = await l.land()
    if (verdict.ok) return verdict
    const fixable = verdict.kind === "check" || verdict.kind === "conflict"
    if (!fixable || !l.canFix || attempt > l.attempts) return { ok: false, verdict, gaveUp: false, attempts: attempt - 1 }
    l.bus.emit({ type: "fix", taskId: l.task.id, attempt, of: l.attempts, kind: verdict.kind, reason: verdict.reason })
    const prompt = verdict.kind === "check" ? checkPrompt(l, verdict) : await conflictPrompt(l, verdict)
    const env: Record<string, string> = {
      FLOW_FIX: verdict.kind,
      FLOW_TARGET: l.target,
      FLOW_FIX_REASON: verdict.reason,
      FLOW_FIX_OUTPUT: verdict.kind === "check" ? verdict.output : verdict.conflicts.join("\n"),
    }
    const outcome = await l.fix(prompt, env)
    if (outcome === "stopped") return { ok: false, verdict: { ok: false, kind: "stopped", reason: "the run was stopped" }, gaveUp: false, attempts: attempt }
    if (outcome === "gave-up") return { ok: false, verdict, gaveUp: true, attempts: attempt }
    // "failed": the agent's round ended without a fix; the next try says so again (or the attempts run out).
  }
}

const finishLine = (id: string) =>
  `Then commit on your branch and run 'flow done ${id}'. If you cannot fix it, run 'flow block ${id} "<why>"' and a person will take over.`

function checkPrompt(l: Landing, v: Extract<Verdict, { kind: "check" }>): string {
  return [
    `Your finished work on branch ${l.branch} was not merged: the merge of ${l.branch} into ${l.target} fails the project's check (${v.reason}).`,
    `flow ran the check on that merge, that is on ${l.target} as it is now plus your branch. Its output, trimmed to what matters:`,
    "", "```", v.output, "```", "",
    `Fix it on your branch ${l.branch}, in this worktree. If the failure comes from work that reached ${l.target} after you started, merge ${l.target} into your branch first (git merge ${l.target}).`,
    finishLine(l.task.id), "",
  ].join("\n")
}

/** The conflicting files, the target's commits the branch lacks, and the tasks that wrote them. */
async function conflictPrompt(l: Landing, v: Extract<Verdict, { kind: "conflict" }>): Promise<string> {
  const commits = await commitsBetween(l.repo, l.branch, l.target).catch(() => [])
  const ids = [...new Set(commits.map((c) => /^\S+ Merge \S+: ([a-z0-9-]+)$/.exec(c)?.[1]).filter((x): x is string => x !== undefined))]
  const tasks = (await Promise.all(ids.map((id) => l.describeTask(id)))).filter((t): t is Task => t !== undefined).map((t) => {
    const text = (t.instructions ?? "").trim()
    return `- ${t.id}: ${t.title}${text ? `\n  ${(text.length > 800 ? `${text.slice(0, 800)}...` : text).split("\n").join("\n  ")}` : ""}`
  })
  return [
    `Your finished work on branch ${l.branch} conflicts with ${l.target}, which moved on since your branch started: ${v.reason}.`,
    ...(commits.length ? ["", `The commits on ${l.target} your branch does not have:`, ...commits.map((c) => `- ${c}`)] : []),
    ...(tasks.length ? ["", "They come from these tasks:", ...tasks] : []),
    "",
    `Merge ${l.target} into your branch (git merge ${l.target}) in this worktree and resolve the conflicts so that both your task and theirs still do what they were meant to.`,
    finishLine(l.task.id), "",
  ].join("\n")
}
