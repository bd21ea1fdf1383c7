// Recovery at the start of every run, before any agent starts (docs/RUN.md, "Recovery at start"). Whatever
// killed the last run, and whatever people or orphaned agents did since, the invariant is restored: a task
// is done only when its work is in its target branch, merged exactly once.
//
// - A move of a person's checkout that a kill cut off is finished or undone (lib/landing/checkout-move.ts): no
//   checkout is left with its branch at one commit and its index at another.
// - A task in progress whose work was finished (an open merge journal entry, or the script agent's success
//   mark) is landed without its agent: its branch is merged unless its head is in the target already.
// - A done task whose branch holds commits the target lacks (`flow done` after a conflict was resolved, or
//   by an agent of a dead run) is merged now; a conflict blocks it with a note, as in a run.
// - A done task whose work is merged and whose worktree is still there is cleaned up.
// - The scratch worktrees of a killed run's checks are removed, their registrations unlocked and pruned.
// Cost when nothing is to recover: one indexed query of the journal, one `existsSync` per task, a read of
// each repository's worktree registrations (files), one `git for-each-ref --no-merged` per repository
// holding done tasks, and one `git worktree list` per merge queue a run has used.
import { existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { recoverMoves } from "../landing/move-recovery"
import { clearBranchLock, clearHalfMade, clearRemoteRefLocks, clearStaleLocks } from "../landing/git-leftovers"
import { commitAll, gitDirs, pruneWorktrees, removeWorktree, revParse, unmergedBranches } from "../git/git"
import { teardownWorktree } from "../worktree/teardown"
import { AgentGroups } from "./reaper"
import { fetchBranch, tracking } from "../git/remote-git"
import type { Indexed, Task } from "../model/task-index"
import { FlowError } from "../cli/errors"
import { AUTHOR, blockTask, type Landing } from "./landing"
import { doneMark, doneMarks } from "../agents/script-agent"
import type { WorkerShared } from "./worker/worker-task"
import type { Workspace } from "../git/workspace"
import type { Claim } from "../store/store"

/** How recovery takes a task on a shared graph before landing it, and gives it back after. */
type RecoveryClaim = { take(taskId: string): Promise<Claim | undefined>; release(taskId: string): Promise<void> }

/**
 * `claim`: on a shared graph, how recovery takes a task before landing it (another run may hold it) and gives
 * it back after; a done task's branch is then not compared with this clone's target, which may lag the
 * shared remote's (docs/FLEET.md, "Git across machines").
 */
export async function recover(shared: WorkerShared, index: Map<string, Indexed>, claim?: RecoveryClaim): Promise<void> {
  const s = shared.settings
  const open = await shared.landing.journal.open()
  await clearLeftovers(shared, index)
  const recovery = new TaskRecovery(shared, open, claim)
  for (const { task } of index.values()) {
    // A task that cannot be recovered does not stop the others, or the run: one in progress is blocked with
    // why, a done one (its work merged or not) is named, and stays done.
    await recovery.recoverTask(task).catch(async (e) => {
      const why = `recovering it failed: ${e instanceof FlowError ? `${e.message}${e.hint ? `: ${e.hint}` : ""}` : String(e)}`
      if (task.status === "done") s.bus.emit({ type: "notice", taskId: task.id, text: why })
      else await blockTask(s, task.id, `flow run: ${why}`)
    })
  }
}

/** What killed gits left (lock files, half-made worktree registrations), cut-off moves of checkouts, and the checks' scratch worktrees. */
async function clearLeftovers(shared: WorkerShared, index: Map<string, Indexed>): Promise<void> {
  const s = shared.settings
  const { landing, workspaces } = shared
  for (const taskId of clearStaleLocks(s.project.stateDir))
    s.bus.emit({ type: "notice", taskId, text: "removed the lock files a killed git left in its worktree" })
  // common git folder → a repository using it, and the targets and task branches there
  const repos = new Map<string, { repo: string; branches: Set<string> }>()
  for (const { task } of index.values()) {
    const ws = await workspaces.forTask(task).catch(() => undefined)
    const common = ws && gitDirs(ws.repo)?.common
    if (!common) continue
    if (!repos.has(common)) repos.set(common, { repo: ws.repo, branches: new Set() })
    repos.get(common)!.branches.add(ws.target).add(ws.branch)
    if (task.status !== "done" && clearBranchLock(common, ws.branch))
      s.bus.emit({ type: "notice", taskId: task.id, text: `removed ${ws.branch}'s lock file, left by a killed git` })
  }
  for (const [common, { repo, branches }] of repos) {
    if (s.store.shared)
      for (const ref of clearRemoteRefLocks(repo, common, s.project.stateDir, s.publish.remote, branches))
        s.bus.emit({ type: "notice", text: `removed ${ref}'s lock file, left by a killed git` })
    const { cleared, prune } = clearHalfMade(common, s.project.stateDir, new Set(index.keys()))
    for (const name of cleared) s.bus.emit({ type: "notice", text: `removed the registration of worktree ${name}, half made by a killed git` })
    if (prune) await landing.inRepo(repo, () => pruneWorktrees(repo))
  }
  for (const text of await recoverMoves(landing.moves)) s.bus.emit({ type: "notice", text })
  await landing.clearLeft()
}

/** Each task's recovery: a done task's work merged and its worktree gone, a finished one landed, a stale journal entry closed. */
class TaskRecovery {
  private readonly s: WorkerShared["settings"]
  /** repo and target → its unmerged branches */
  private readonly unmerged = new Map<string, Promise<Set<string>>>()
  /** On a shared project the target that counts is the remote's (fetched once per repository and target). */
  private readonly remote: string | undefined

  constructor(
    private readonly shared: WorkerShared,
    private readonly open: ReadonlyMap<string, unknown>,
    private readonly claim: RecoveryClaim | undefined,
  ) {
    this.s = shared.settings
    this.remote = this.s.store.shared ? this.s.publish.remote : undefined
  }

  private unmergedOf(ws: Workspace): Promise<Set<string>> {
    const remote = this.remote
    return remote === undefined
      ? unmergedBranches(ws.repo, `refs/heads/${ws.target}`)
      : fetchBranch(ws.repo, remote, ws.target).then(() => unmergedBranches(ws.repo, tracking(remote, ws.target)))
  }

  private branchUnmerged(ws: Workspace): Promise<boolean> {
    const key = `${ws.repo}\0${ws.target}`
    if (!this.unmerged.has(key)) this.unmerged.set(key, this.unmergedOf(ws))
    return this.unmerged.get(key)!.then((set) => set.has(ws.branch))
  }

  /** a task that cannot run is not recovered */
  private workspace(task: Task): Promise<Workspace | undefined> {
    return this.shared.workspaces.forTask(task).catch(() => undefined)
  }

  async recoverTask(task: Task): Promise<void> {
    if (task.status === "done") await this.done(task)
    else if (task.status === "in_progress" || task.status === "assigned") await this.finished(task)
    else if (this.open.has(task.id)) {
      await this.shared.landing.journal.close(task.id) // a person reset or blocked it since: the entry is history
    }
  }

  private async done(task: Task): Promise<void> {
    const { s, shared, open } = this
    const { landing } = shared
    const worktree = join(s.project.stateDir, "worktrees", task.id)
    if (task.subtasks?.length && task.worktree === undefined && !existsSync(worktree)) return // a parent done with its children
    const ws = await this.workspace(task)
    if (!ws) return
    if (existsSync(ws.path) && !open.has(task.id) && (await landedAsIs(landing, ws, task.id))) {
      // Landed by a run, branch untouched since: what is left of the worktree is the leftover of its removal
      // (cut off half way, files or its .git gone). Committing that would merge deletions: it only goes.
      s.bus.emit({ type: "notice", taskId: task.id, text: "done and merged: removing its worktree" })
      for (const mark of doneMarks(s.project.stateDir, task.id)) rmSync(mark, { force: true }) // the run may have died before it did
      if (!(await teardownWorktree(s, task.id, ws, new AgentGroups(s.db).tracker(task.id)))) return
      await landing
        .inRepo(ws.repo, () => removeWorktree(ws.repo, ws.path, true))
        .catch((e) => s.bus.emit({ type: "notice", taskId: task.id, text: `its worktree ${ws.path} stays: ${(e as Error).message}` }))
      return
    }
    if (this.claim) return // done on a shared graph is merged on the shared remote: this clone's target may lag it
    if (existsSync(ws.path)) await landing.inRepo(ws.repo, () => commitAll(ws.path, `${task.id}: ${task.title}`, AUTHOR))
    if (!existsSync(ws.path) && !open.has(task.id) && !(await this.branchUnmerged(ws))) return
    const pending = existsSync(ws.path) ? (await this.unmergedOf(ws)).has(ws.branch) : await this.branchUnmerged(ws)
    s.bus.emit({
      type: "notice",
      taskId: task.id,
      text: pending ? `done, but ${ws.branch} is not merged into ${ws.target}: merging it now` : `done and merged: removing its worktree`,
    })
    await landing.land(task.id, task.title, ws, shared.background)
  }

  /** A task in progress whose work was finished (an open journal entry, the script agent's mark): landed without its agent. */
  private async finished(task: Task): Promise<void> {
    const { s, shared, claim } = this
    const { landing } = shared
    const finished = this.open.has(task.id) || (!task.steps?.length && existsSync(doneMark(s.project.stateDir, task.id)))
    if (!finished) return
    const ws = await this.workspace(task)
    if (!ws) return
    const held = claim ? await claim.take(task.id) : undefined
    if (claim && !held) return // another run holds it: that run finishes it
    if (held && (await landing.supersededHere(task.id, ws))) {
      // What this machine finished is older than what another machine's attempt pushed: that one goes on.
      await claim!.release(task.id)
      return
    }
    s.bus.emit({
      type: "notice",
      taskId: task.id,
      text: `its work was finished by the last run, which stopped before the end: landing it without running the agent again`,
    })
    try {
      await landing.land(task.id, task.title, ws, shared.background, { finished: true, claim: held })
    } finally {
      if (held) await claim!.release(task.id)
    }
  }
}

/** Whether a run landed the task (its latest merge, closed) and its branch has not moved since. */
async function landedAsIs(landing: Landing, ws: Workspace, taskId: string): Promise<boolean> {
  const last = await landing.journal.latest(taskId)
  if (last?.outcome !== "merged" || last.closedAt === null) return false
  const [head] = await revParse(ws.repo, ws.branch)
  return head === last.branchHead
}
