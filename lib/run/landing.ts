// Landing a task: its finished work merged into the target branch exactly once, then the task marked done.
// The one invariant (docs/RUN.md): a task is done only when its work is in its target branch. The order is
// fixed so that a crash at any instruction is recovered by the next run (lib/run/recovery.ts):
//
//   commit what is left → journal intent → git merge → journal outcome → tasks.yaml done → journal closed
//   → worktree removed
//
// A branch whose head is already in the target is never merged again; the journal says whether a task's
// work had been finished (so its agent is never run again).
import { existsSync, rmSync } from "node:fs"
import { commitAll, listWorktrees, mergeInto, removeWorktree, revParse, type MergeResult } from "../git"
import { mutateTasks } from "../tasks"
import { applyStatus, type Change } from "../transitions"
import { MergeJournal } from "./merge-journal"
import type { RunSettings } from "./orchestrator"
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
function killPoint(name: string): void {
  if (process.env.FLOW_TEST_KILL_AT === name) process.kill(process.pid, "SIGKILL")
}

export type Landed = { ok: true; commit?: string } | { ok: false; reason: string }

export class Landing {
  readonly journal: MergeJournal
  /** one git operation on a repository's shared state (worktrees, merges) at a time: git fails on its own locks */
  private repoQueues = new Map<string, Promise<unknown>>()
  /** where each repository's target branch is checked out (found once per run) */
  private checkouts = new Map<string, string | undefined>()

  constructor(private s: RunSettings) {
    this.journal = new MergeJournal(s.db)
  }

  /** Runs `fn` after every earlier git operation on `repo` has finished. */
  inRepo<T>(repo: string, fn: () => Promise<T>): Promise<T> {
    const result = (this.repoQueues.get(repo) ?? Promise.resolve()).then(fn)
    this.repoQueues.set(repo, result.catch(() => {}))
    return result
  }

  /**
   * Lands a task whose work is finished: merged (unless already in the target), then done; or blocked with a
   * note when the merge fails. `background` collects the worktree's removal. True when it is done.
   */
  async land(taskId: string, title: string, ws: Workspace, background: Set<Promise<unknown>>): Promise<boolean> {
    if (existsSync(ws.path)) await commitAll(ws.path, `${taskId}: ${title}`, AUTHOR)
    const result = await this.inRepo(ws.repo, () => this.merge(taskId, ws))
    if (!result.ok) {
      this.s.bus.emit({ type: "merge-failed", taskId, branch: ws.branch, target: ws.target, reason: result.reason })
      await blockTask(this.s, taskId, `merge of ${ws.branch} into ${ws.target} failed: ${result.reason}. The target was left as it was; resolve it on ${ws.branch} (in ${ws.path}) and run 'flow done ${taskId}': the next 'flow run' merges it`, true)
      await this.journal.close(taskId)
      return false
    }
    if (result.commit) this.s.bus.emit({ type: "merge", taskId, branch: ws.branch, target: ws.target, commit: result.commit })
    if (result.commit) killPoint("before-done")
    await writeStatus(this.s, `flow run: done ${taskId}`, (editor) => applyStatus(editor, taskId, "done", isoNow()).changes)
    await this.journal.close(taskId)
    for (const mark of doneMarks(this.s.project.stateDir, taskId)) rmSync(mark, { force: true })
    background.add(this.inRepo(ws.repo, () => existsSync(ws.path) ? removeWorktree(ws.repo, ws.path, false) : Promise.resolve()).catch(() => {}))
    return true
  }

  /**
   * Merges the branch into the target, journaled before and after. A branch whose head is in the target
   * already (merged by a run that died before writing done) is never merged twice: git answers "Already up
   * to date" and makes no commit, which is told apart by the target's head not moving.
   */
  private async merge(taskId: string, ws: Workspace): Promise<Landed> {
    const checkout = await this.checkout(ws)
    if (!checkout) return { ok: false, reason: `no checkout of '${ws.target}' to merge into: check it out in ${ws.repo}` }
    const [head, before] = await revParse(checkout, ws.branch, "HEAD")
    if (!head || !before) return { ok: false, reason: `branch '${head ? ws.target : ws.branch}' not found in ${ws.repo}` }
    const id = await this.journal.begin({ taskId, repo: ws.repo, branch: ws.branch, branchHead: head, target: ws.target, targetBefore: before })
    const r: MergeResult = await mergeInto(checkout, ws.branch, `Merge ${ws.branch}: ${taskId}`, AUTHOR)
    const merged = r.ok && r.commit !== before
    if (merged) killPoint("after-merge")
    await this.journal.outcome(id, r.ok ? "merged" : "failed", r.ok ? { commit: merged ? r.commit : undefined, reason: merged ? undefined : "already in the target" } : { reason: r.reason })
    return !r.ok ? { ok: false, reason: r.reason } : { ok: true, commit: merged ? r.commit : undefined }
  }

  private async checkout(ws: Workspace): Promise<string | undefined> {
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
