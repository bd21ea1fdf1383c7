// Landing a task: its finished work merged into the target branch exactly once, then the task marked done.
// The one invariant (docs/RUN.md): a task is done only when its work is in its target branch. The order is
// fixed so that a crash at any instruction is recovered by the next run (lib/run/recovery.ts):
//
//   commit what is left → journal intent → git merge → journal outcome → tasks.yaml done → journal closed
//   → worktree removed
//
// A branch whose head is already in the target is never merged again; the journal says whether a task's
// work had been finished (so its agent is never run again). Where flow.yaml configures a check (`verify`),
// "git merge" is the repository's merge queue (lib/run/merge-queue.ts): the target moves only to a merge
// that passed it. A failed check or a conflict goes back to the agent first when the caller gives a `fixer`
// (lib/run/fix-prompts.ts), up to `fix_attempts` times, before the task is blocked.
import { existsSync, rmSync } from "node:fs"
import { abortMerge, commitAll, forgetMerge, isAncestor, listWorktrees, mergeInProgress, mergeInto, removeWorktree, revParse } from "./git"
import { indexTasks } from "../model/task-index"
import { mutateTasks, readTasks } from "../store/tasks"
import { applyStatus, type Change } from "../store/transitions"
import { fixEnv, fixPrompt } from "./fix-prompts"
import { type MergeEntry, MergeJournal } from "./merge-journal"
import type { Verdict } from "./merge-queue"
import { MergeQueues } from "./queues"
import type { RunSettings } from "./settings"
import { doneMarks } from "./script-agent"
import { untilValid } from "./tasks-wait"
import type { Workspace } from "./workspace"

export const AUTHOR = { name: "flow", email: "flow@localhost" }
export const isoNow = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z")

/**
 * A test hook, for the fault-injection tests only (test/run-crash.test.ts): FLOW_TEST_KILL_AT=<point> makes
 * the run SIGKILL itself at that point, as a crash would, after a merge that made a merge commit. Points:
 * `after-merge` (git merged, nothing recorded yet), `before-done` (outcome journaled, tasks.yaml not yet
 * written).
 */
export function killPoint(name: string): void {
  if (process.env.FLOW_TEST_KILL_AT === name) process.kill(process.pid, "SIGKILL")
}

export type FixOutcome = "fixed" | "gave-up" | "stopped" | "failed"
/** One round of fixing by the task's agent: its prompt, and the environment of the script agent's fix blocks. */
export type Fixer = { canFix: boolean; fix: (prompt: string, env: Record<string, string>) => Promise<FixOutcome> }

export class Landing {
  readonly journal: MergeJournal
  /** one git operation on a repository's shared state (worktrees, merges) at a time: git fails on its own locks */
  private repoQueues = new Map<string, Promise<unknown>>()
  /** where each repository's target branch is checked out (found once per run) */
  private checkouts = new Map<string, string | undefined>()

  private queues: MergeQueues

  constructor(private s: RunSettings) {
    this.journal = new MergeJournal(s.db)
    this.queues = new MergeQueues(s, (repo, fn) => this.inRepo(repo, fn), AUTHOR)
  }

  /** Runs `fn` after every earlier git operation on `repo` has finished. */
  inRepo<T>(repo: string, fn: () => Promise<T>): Promise<T> {
    const result = (this.repoQueues.get(repo) ?? Promise.resolve()).then(fn)
    this.repoQueues.set(
      repo,
      result.catch(() => {}),
    )
    return result
  }

  /**
   * Lands a task whose work is finished: merged (unless already in the target), then done; or blocked with a
   * note when the merge fails and the agent (`fixer`) could not fix it. `background` collects the worktree's
   * removal. True when it is done.
   */
  async land(taskId: string, title: string, ws: Workspace, background: Set<Promise<unknown>>, fixer?: Fixer): Promise<boolean> {
    let result: Verdict
    for (let attempt = 1; ; attempt++) {
      if (existsSync(ws.path)) await commitAll(ws.path, `${taskId}: ${title}`, AUTHOR)
      result = await this.merge(taskId, ws)
      if (result.ok || result.kind === "stopped") break
      if ((result.kind !== "check" && result.kind !== "conflict") || !fixer?.canFix || attempt > this.s.fixAttempts) {
        result = { ...result, reason: attempt > 1 ? `${result.reason} (sent back to the agent ${attempt - 1} time${attempt === 2 ? "" : "s"})` : result.reason }
        break
      }
      await this.journal.close(taskId) // what the agent does now is new work
      this.s.bus.emit({ type: "fix", taskId, attempt, of: this.s.fixAttempts, kind: result.kind, reason: result.reason })
      const prompt = await fixPrompt(taskId, ws, result, (id) => this.describe(id))
      const outcome = await fixer.fix(prompt, fixEnv(ws, result))
      if (outcome === "stopped") return false
      if (outcome === "gave-up") {
        result = { ...result, reason: `${result.reason}; the agent gave up` }
        break
      }
    }
    if (!result.ok) {
      if (result.kind === "stopped") return false // the run stops: the journal entry stays open, the next run lands it
      this.s.bus.emit({ type: "merge-failed", taskId, branch: ws.branch, target: ws.target, reason: result.reason })
      const output = result.kind === "check" && result.output ? `\nThe check's output:\n${result.output}` : ""
      await blockTask(
        this.s,
        taskId,
        `merge of ${ws.branch} into ${ws.target} failed: ${result.reason}. The target was left as it was; ${result.kind === "check" ? "fix it" : "resolve it"} on ${ws.branch} (in ${ws.path}) and run 'flow done ${taskId}': the next 'flow run' merges it${output}`,
        true,
      )
      await this.journal.close(taskId)
      return false
    }
    if (!result.alreadyMerged) this.s.bus.emit({ type: "merge", taskId, branch: ws.branch, target: ws.target, commit: result.commit })
    if (!result.alreadyMerged) killPoint("before-done")
    await writeStatus(this.s, `flow run: done ${taskId}`, (editor) => applyStatus(editor, taskId, "done", isoNow()).changes)
    await this.journal.close(taskId)
    for (const mark of doneMarks(this.s.project.stateDir, taskId)) rmSync(mark, { force: true })
    background.add(this.inRepo(ws.repo, () => (existsSync(ws.path) ? removeWorktree(ws.repo, ws.path, false) : Promise.resolve())).catch(() => {}))
    return true
  }

  /**
   * Merges the branch into the target unless its head is there already; journaled before and after. With a
   * check configured the merge goes through the queue (no lock held while it waits); else `git merge` in
   * the target's checkout, one per repository at a time.
   */
  private async merge(taskId: string, ws: Workspace): Promise<Verdict> {
    const queue = await this.queues.for(ws)
    if (!queue) return this.inRepo(ws.repo, () => this.mergeInCheckout(taskId, ws))
    const [head, before] = await revParse(ws.repo, ws.branch, ws.target)
    if (!head || !before) return { ok: false, kind: "refused", reason: `branch '${head ? ws.target : ws.branch}' not found in ${ws.repo}` }
    const open = (await this.journal.open()).get(taskId)
    const id =
      open && open.outcome === null
        ? open.id
        : await this.journal.begin({ taskId, repo: ws.repo, branch: ws.branch, branchHead: head, target: ws.target, targetBefore: before })
    const v = await queue.submit(taskId, ws.branch, `Merge ${ws.branch}: ${taskId}`)
    if (v.ok && !v.alreadyMerged) killPoint("after-merge")
    if (v.ok || v.kind !== "stopped") await this.journal.outcome(id, v.ok ? "merged" : "failed", v.ok ? { commit: v.commit } : { reason: v.reason })
    return v
  }

  /**
   * `git merge` in the target's checkout. A branch whose head is in the target already (merged by a run
   * that died before writing done) is never merged twice: git answers "Already up to date" and makes no
   * commit, which is told apart by the target's head not moving.
   */
  private async mergeInCheckout(taskId: string, ws: Workspace): Promise<Verdict> {
    const checkout = await this.checkout(ws)
    if (!checkout) return { ok: false, kind: "refused", reason: `no checkout of '${ws.target}' to merge into: check it out in ${ws.repo}` }
    const [head, before] = await revParse(checkout, ws.branch, "HEAD")
    if (!head || !before) return { ok: false, kind: "refused", reason: `branch '${head ? ws.target : ws.branch}' not found in ${ws.repo}` }
    const id = await this.journal.begin({ taskId, repo: ws.repo, branch: ws.branch, branchHead: head, target: ws.target, targetBefore: before })
    const r = await mergeInto(checkout, ws.branch, `Merge ${ws.branch}: ${taskId}`, AUTHOR)
    // Ctrl-C in a terminal reaches git too (same process group): a merge it cut off is no failure of the
    // task's. mergeInto undid it; the entry stays open without outcome, and the next run merges again.
    if (!r.ok && this.s.signal.aborted) return { ok: false, kind: "stopped", reason: "the run was stopped" }
    const merged = r.ok && r.commit !== before
    if (merged) killPoint("after-merge")
    await this.journal.outcome(
      id,
      r.ok ? "merged" : "failed",
      r.ok ? { commit: merged ? r.commit : undefined, reason: merged ? undefined : "already in the target" } : { reason: r.reason },
    )
    if (r.ok) return { ok: true, commit: r.commit, alreadyMerged: !merged }
    return r.conflicts.length ? { ok: false, kind: "conflict", conflicts: r.conflicts, reason: r.reason } : { ok: false, kind: "refused", reason: r.reason }
  }

  /**
   * Aborts the merges of ours a kill left half done in a checkout (its MERGE_HEAD is the branch head of a
   * journal entry with no outcome), so that landing merges them afresh, or only clears MERGE_HEAD where the
   * merge commit was made; a merge of anyone else is left as it is. Returns those tasks, and which it was.
   */
  async abortInterrupted(entries: Iterable<MergeEntry>): Promise<{ taskId: string; made: boolean }[]> {
    const undone: { taskId: string; made: boolean }[] = []
    for (const e of entries) {
      if (e.outcome !== null) continue
      const checkout = await this.checkout(e)
      if (!checkout || (await mergeInProgress(checkout)) !== e.branchHead) continue
      // A git that outlived its run commits the merge, then dies of SIGPIPE at its first line of output
      // (nobody reads its pipe any more), before it removes MERGE_HEAD: then only the leftovers go.
      const made = await isAncestor(checkout, e.branchHead, "HEAD")
      await this.inRepo(e.repo, () => (made ? forgetMerge(checkout) : abortMerge(checkout)))
      undone.push({ taskId: e.taskId, made })
    }
    return undone
  }

  /** A task of tasks.yaml as it is now (the conflict prompt names the tasks behind the target's commits). */
  private async describe(id: string) {
    return indexTasks((await readTasks(this.s.project)).data).get(id)?.task
  }

  private async checkout(ws: { repo: string; target: string }): Promise<string | undefined> {
    const key = `${ws.repo}\0${ws.target}`
    if (!this.checkouts.get(key)) this.checkouts.set(key, (await listWorktrees(ws.repo)).find((w) => w.branch === ws.target)?.path)
    return this.checkouts.get(key)
  }
}

/** One write of tasks.yaml whose status changes go on the event bus. */
export async function writeStatus(s: RunSettings, command: string, edit: Parameters<typeof mutateTasks<Change[]>>[2]): Promise<void> {
  const changes = await untilValid(s.signal, () => mutateTasks(s.project, command, edit))
  for (const c of changes) s.bus.emit({ type: "status", taskId: c.id, from: c.from, to: c.to, reason: c.reason })
}

/** Blocks the task with a note; after a failed merge, dependents promoted too early go back to todo. */
export function blockTask(s: RunSettings, taskId: string, note: string, demoteDependents = false): Promise<void> {
  return writeStatus(s, `flow run: block ${taskId}`, (editor) => {
    editor.append({ taskId }, "ai_notes", note)
    const changes = applyStatus(editor, taskId, "blocked", isoNow()).changes
    if (demoteDependents) {
      for (const { task } of editor.tasks.values()) {
        if (task.status === "ready_for_agent" && task.depends_on?.includes(taskId)) changes.push(...applyStatus(editor, task.id, "todo", isoNow()).changes)
      }
    }
    return changes
  })
}
