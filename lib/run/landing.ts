// Landing a task: its finished work merged into the target branch exactly once, then the task marked done.
// The one invariant (docs/RUN.md, "Landing"): a task is done only when its branch's head is in its target
// branch. The order is fixed so that a crash at any instruction is recovered by the next run
// (lib/run/recovery.ts):
//
//   worktree checked (on its branch) → commit what is left → journal intent → merge made off-tree → check
//   (where configured) → target moved by compare-and-swap (the person's checkout with it, journaled, only
//   when git finds nothing of theirs in the way) → journal outcome → tasks.yaml done → journal closed →
//   worktree removed
//
// flow never runs `git merge`, `stash`, `reset` or `checkout` in the person's checkout. A branch whose head
// is already in the target is never merged again; the journal says whether a task's work had been finished
// (so its agent is never run again). A failed check or a conflict goes back to the agent first when the
// caller gives a `fixer` (lib/prompts/fix-prompts.ts), up to `fix_attempts` times, before the task is blocked.
import { existsSync, rmSync } from "node:fs"
import { worktreeHead } from "../landing/checkout-move"
import { branchHeads, commitAll, dropBranch, ensureWorktree, GIT_ENV, isAncestor, removeWorktree, revParse } from "../git/git"
import { run } from "../cli/proc"
import { killPoint } from "../cli/kill-point"
import { isoSeconds } from "../cli/clock"
import { indexTasks } from "../model/task-index"
import type { Claim, Fence, TaskEdits } from "../store/store"
import { fetchBranch, keepAside, newerOnRemote, pushTaskBranch, remoteWorktree, tracking } from "../git/remote-git"
import { applyStatus, type Change } from "../store/transitions"
import { fixEnv, fixPrompt } from "../prompts/fix-prompts"
import { MergeJournal } from "../landing/merge-journal"
import { teardownWorktree } from "../worktree/teardown"
import { AgentGroups } from "./reaper"
import type { Verdict } from "../landing/queue-types"
import { MergeQueues } from "./queues"
import { mergeMessage, recordEvidence } from "./evidence"
import { coalescedWrite } from "./worker/status-writes"
import { RepoLanes } from "../landing/repo-lanes"
import type { RunSettings } from "./settings"
import { doneMarks } from "../agents/script-agent"
import { requireRoom } from "../store/disk-full"
import { timed } from "../cli/trace"
import type { Workspace } from "../git/workspace"

export const AUTHOR = { name: "flow", email: "flow@localhost" }

export type FixOutcome = "fixed" | "gave-up" | "stopped" | "failed"
/**
 * One round of fixing by the task's agent: its prompt, and the environment of the script agent's fix blocks.
 * `tools`: the agent has flow's MCP server, so its prompt names flow's tools.
 */
export type Fixer = { canFix: boolean; tools?: boolean; fix: (prompt: string, env: Record<string, string>) => Promise<FixOutcome> }

export class Landing {
  readonly journal: MergeJournal
  /** one git operation on a repository's shared state (worktrees) at a time: git fails on its own locks */
  private lanes = new RepoLanes()

  private queues: MergeQueues
  /** records the process groups a worktree's teardown starts, for the reaper */
  private groups: AgentGroups

  constructor(private s: RunSettings) {
    this.journal = new MergeJournal(s.db)
    this.groups = new AgentGroups(s.db)
    this.queues = new MergeQueues(s, (repo, fn, later) => this.inRepo(repo, fn, later), AUTHOR)
  }

  /** Resolves once no git operation on a repository runs or waits (a run's end waits for the clean-ups). */
  async idle(): Promise<void> {
    await this.queues.idle() // the checks' teardowns, then their removals (on the lanes)
    return this.lanes.idle()
  }

  /** Runs `fn` after every earlier git operation on `repo` has finished; `later`: a clean-up, after the rest. */
  inRepo<T>(repo: string, fn: () => Promise<T>, later = false): Promise<T> {
    return this.lanes.run(repo, fn, later)
  }

  /**
   * Lands a task whose work is finished: merged (unless already in the target), then done; or blocked with a
   * note when the merge fails and the agent (`fixer`) could not fix it. `background` collects the worktree's
   * removal. With `finished` (its agent said done), a branch with nothing to merge is said, and noted on the
   * task or blocked as flow.yaml `empty_done` says (not for a validation task). `claim`: the run's claim of the
   * task on a shared project, asked right before the merge is pushed (nothing lands once it does not hold).
   * True when it is done.
   */
  async land(
    taskId: string,
    title: string,
    ws: Workspace,
    background: Set<Promise<unknown>>,
    opts: { fixer?: Fixer; finished?: boolean; claim?: Claim } = {},
  ): Promise<boolean> {
    const { claim } = opts
    const problem = await worktreeProblem(taskId, ws)
    if (problem) {
      this.s.bus.emit({ type: "merge-failed", taskId, branch: ws.branch, target: ws.target, reason: problem })
      await blockTask(this.s, taskId, `nothing was merged: ${problem}`, true, claim)
      await this.journal.close(taskId)
      return false
    }
    const result = await this.mergeOrFix(taskId, title, ws, opts)
    if (result === undefined) return false
    if (!result.ok) {
      if (result.kind === "stopped") return false // the run stops: the journal entry stays open, the next run lands it
      await this.mergeFailed(taskId, ws, result, claim)
      return false
    }
    if (!result.alreadyMerged) this.s.bus.emit({ type: "merge", taskId, branch: ws.branch, target: ws.target, commit: result.commit })
    if (!result.alreadyMerged) killPoint("before-done")
    // Done with nothing merged is said, never silent: a refused tool call or a confused model looks like this.
    // A validation task (another's validation_task_id) checks and changes nothing by design.
    const empty =
      opts.finished && result.empty && !(await this.validates(taskId))
        ? `finished with no changes on ${ws.branch}: nothing to merge into ${ws.target}`
        : undefined
    if (empty) this.s.bus.emit({ type: "notice", taskId, text: empty })
    if (empty && this.s.emptyDone === "block") {
      await blockTask(
        this.s,
        taskId,
        `${empty} (flow.yaml empty_done: block). Do its work on ${ws.branch} (in ${ws.path}) and run 'flow done ${taskId}', or run 'flow done ${taskId}' if nothing was to change`,
        true,
        claim,
      )
      await this.journal.close(taskId)
      return false
    }
    await this.markDone(taskId, ws, empty, background, claim)
    return true
  }

  /**
   * Commits and merges the branch; a failed check or a conflict goes back to the agent (`fixer`) while it may
   * fix it, and the merge is tried again. Undefined: the run stopped while the agent was at it.
   */
  private async mergeOrFix(
    taskId: string,
    title: string,
    ws: Workspace,
    opts: { fixer?: Fixer; claim?: Claim },
  ): Promise<(Verdict & { empty?: boolean }) | undefined> {
    const { fixer } = opts
    let result: Verdict & { empty?: boolean }
    for (let attempt = 1; ; attempt++) {
      const since = performance.now()
      if (existsSync(ws.path)) await timed(taskId, "commit", () => commitAll(ws.path, `${taskId}: ${title}`, AUTHOR))
      await this.pushBranch(taskId, ws)
      result = await timed(taskId, "land", () => this.merge(taskId, ws, since, opts.claim))
      if (result.ok || result.kind === "stopped") break
      if ((result.kind !== "check" && result.kind !== "conflict" && result.kind !== "review") || !fixer?.canFix || attempt > this.s.fixAttempts) {
        result = { ...result, reason: attempt > 1 ? `${result.reason} (sent back to the agent ${attempt - 1} time${attempt === 2 ? "" : "s"})` : result.reason }
        break
      }
      await this.journal.close(taskId) // what the agent does now is new work
      this.s.bus.emit({ type: "fix", taskId, attempt, of: this.s.fixAttempts, kind: result.kind, reason: result.reason })
      const prompt = await fixPrompt(taskId, ws, result, (id) => this.describe(id), fixer.tools)
      const outcome = await fixer.fix(prompt, fixEnv(ws, result))
      if (outcome === "stopped") return undefined
      if (outcome === "gave-up") {
        result = { ...result, reason: `${result.reason}; the agent gave up` }
        break
      }
    }
    return result
  }

  /** A merge that failed for good: the task is blocked with why and what to do, the target left as it was. */
  private async mergeFailed(taskId: string, ws: Workspace, result: Extract<Verdict, { ok: false }>, claim: Claim | undefined): Promise<void> {
    this.s.bus.emit({ type: "merge-failed", taskId, branch: ws.branch, target: ws.target, reason: result.reason })
    const output = result.kind === "check" && result.output ? `\nThe check's output:\n${result.output}` : ""
    await blockTask(
      this.s,
      taskId,
      `merge of ${ws.branch} into ${ws.target} failed: ${result.reason}. The target was left as it was; ${result.kind === "conflict" ? "resolve it" : "fix it"} on ${ws.branch} (in ${ws.path}) and run 'flow done ${taskId}': the next 'flow run' merges it${output}`,
      true,
      claim,
    )
    await this.journal.close(taskId)
  }

  /** The merged task made done (with the note of an empty branch), its journal entry closed, its worktree removed later. */
  private async markDone(taskId: string, ws: Workspace, empty: string | undefined, background: Set<Promise<unknown>>, claim: Claim | undefined): Promise<void> {
    // Forced: the work is merged now, and a task lands only after its last step; a step a person set back
    // meanwhile must not leave merged work not done.
    await timed(taskId, "done", () =>
      writeStatus(
        this.s,
        `flow run: done ${taskId}`,
        (editor) => {
          if (empty) editor.append({ taskId }, "ai_notes", empty)
          return applyStatus(editor, taskId, "done", isoSeconds(), { force: true }).changes
        },
        claim,
      ),
    )
    await this.journal.close(taskId)
    for (const mark of doneMarks(this.s.project.stateDir, taskId)) rmSync(mark, { force: true })
    // flow.yaml's teardown first (outside the repository's git queue: it may take a while), then the removal.
    background.add(
      timed(taskId, "cleanup", () =>
        teardownWorktree(this.s, taskId, ws, this.groups.tracker(taskId)).then((go) =>
          go ? this.inRepo(ws.repo, () => (existsSync(ws.path) ? removeWorktree(ws.repo, ws.path, false) : Promise.resolve()), true) : undefined,
        ),
      ).catch(() => {}),
    )
  }

  /**
   * Merges the branch into the target unless its head is there already; journaled before and after. Every
   * merge goes through the repository's queue (docs/RUN.md, "Merge queue"): made off-tree, checked where a check
   * is configured, and the target moved by compare-and-swap; in files this clone's (with the person's checkout
   * of it, when nothing of theirs is in the way), on a shared project the shared remote's. `since`: when the
   * landing began (the queue's service levels count from there); `claim`: the run's claim of the task on a
   * shared graph, which the queue asks before it lands anything of it.
   */
  private async merge(taskId: string, ws: Workspace, since: number, claim?: Claim): Promise<Verdict & { empty?: boolean }> {
    const queue = await this.queues.for(ws)
    const shared = this.s.store.shared
    const [head, local] = await branchHeads(ws.repo, ws.branch, ws.target)
    // On a shared project the target that counts is the remote's, as fetched now (in turn with the worktrees).
    const before = shared ? await this.inRepo(ws.repo, () => fetchBranch(ws.repo, this.s.publish.remote, ws.target)) : local
    if (!head || !before) return { ok: false, kind: "refused", reason: `branch '${head ? ws.target : ws.branch}' not found in ${ws.repo}` }
    const open = (await this.journal.open()).get(taskId)
    const reused = open && open.outcome === null ? open : undefined
    const id = reused
      ? reused.id
      : await this.journal.begin({ taskId, repo: ws.repo, branch: ws.branch, branchHead: head, target: ws.target, targetBefore: before })
    const handOver = {
      taskId,
      repo: ws.repo,
      branch: ws.branch,
      head,
      target: ws.target,
      targetCommit: before,
      keepOut: [...queue.keepOut],
      check: queue.check,
    }
    const evidence = await recordEvidence(this.s.db, handOver)
    const message = mergeMessage(`Merge ${ws.branch}: ${taskId}`, taskId, evidence)
    const v = await queue.submit({ taskId, branch: ws.branch, head, message, fence: claim, since })
    if (v.ok || v.kind !== "stopped")
      await this.journal.outcome(
        id,
        v.ok ? "merged" : "failed",
        v.ok ? { commit: v.alreadyMerged ? undefined : v.commit, reason: v.alreadyMerged ? "already in the target" : undefined } : { reason: v.reason },
      )
    // In the target already: empty when it was so at the first intent too (else a killed run merged it since).
    if (v.ok && v.alreadyMerged) return { ...v, empty: await isAncestor(ws.repo, open?.branchHead ?? head, open?.targetBefore ?? before) }
    return v
  }

  /**
   * The task's worktree: as it is, or made. On a shared project started from the remote (lib/git/remote-git.ts):
   * "taken-over" when its branch is the one an earlier attempt pushed, and a worktree of this machine that a
   * newer attempt superseded is set aside first (supersededHere).
   */
  async worktree(taskId: string, ws: Workspace): Promise<"reused" | "created" | "taken-over"> {
    const serial = <T>(fn: () => Promise<T>) => this.inRepo(ws.repo, fn)
    if (!this.s.store.shared) return ensureWorktree(ws.repo, ws.path, ws.branch, ws.target, serial)
    await this.supersededHere(taskId, ws)
    return remoteWorktree(ws, this.s.publish.remote, serial)
  }

  /**
   * On a shared project, whether this machine's worktree of the task was superseded: a newer attempt on another
   * machine pushed work it lacks. Its work is then kept under a ref (lib/git/remote-git.ts keepAside), never
   * landed, and its worktree, branch and the script agent's done marks go: what lands is the newest attempt's.
   */
  async supersededHere(taskId: string, ws: Workspace): Promise<boolean> {
    if (!this.s.store.shared || !existsSync(ws.path)) return false
    const newer = await this.inRepo(ws.repo, () => newerOnRemote(ws, this.s.publish.remote)) // a fetch: in turn with the worktrees
    if (!newer) return false
    const ref = await this.inRepo(ws.repo, () => keepAside(ws, AUTHOR))
    await teardownWorktree(this.s, taskId, ws, this.groups.tracker(taskId))
    await this.inRepo(ws.repo, async () => {
      await removeWorktree(ws.repo, ws.path, true)
      await dropBranch(ws.repo, ws.branch)
    })
    for (const mark of doneMarks(this.s.project.stateDir, taskId)) rmSync(mark, { force: true })
    this.s.bus.emit({
      type: "notice",
      taskId,
      text: `a newer attempt on another machine pushed ${ws.branch} (${newer.slice(0, 12)}): this machine's older work on it is kept as ${ref}, and the task goes on from the remote's`,
    })
    return true
  }

  /**
   * On a shared project, whether the task's branch (as fetched) was merged into the remote's target (fetched
   * with it): a merge there has its head as a second parent. A branch with no work of its own is in the target
   * too, as its ancestor, and was not landed.
   */
  async landedOnRemote(ws: Workspace): Promise<boolean> {
    if (!this.s.store.shared) return false
    const [head] = await revParse(ws.repo, ws.branch)
    if (!head) return false
    const merges = await run(["git", "rev-list", "--merges", "--parents", "--ancestry-path", `${head}..${tracking(this.s.publish.remote, ws.target)}`], {
      cwd: ws.repo,
      env: GIT_ENV,
    })
    return merges.code === 0 && merges.stdout.split("\n").some((line) => line.split(" ").slice(2).includes(head))
  }

  /**
   * On a shared project, pushes the task's branch to the remote after a commit of flow's (never over a newer
   * attempt's push: lib/git/remote-git.ts). A failure is said; the task goes on (its landing is what counts).
   */
  async pushBranch(taskId: string, ws: Workspace): Promise<void> {
    if (!this.s.store.shared) return
    const pushed = await timed(taskId, "push-branch", () => pushTaskBranch(ws.repo, this.s.publish.remote, ws.branch))
    if (!pushed.ok) this.s.bus.emit({ type: "notice", taskId, text: pushed.detail })
  }

  /**
   * On a shared project, takes part in the queue of the workspace's target from now on (its lead, the checks of
   * every machine's candidates), before this run has anything of its own to land there.
   */
  async serve(ws: Workspace): Promise<void> {
    if (this.s.store.shared) (await this.queues.for(ws)).wake()
  }

  /** Clears the scratch worktrees of a killed run's checks and the landing waits it recorded (recovery, at a run's start). */
  clearLeft(): Promise<void> {
    return this.queues.clearLeft()
  }

  /** The journal of moves of checked-out targets (recovery finishes what a kill cut off). */
  get moves() {
    return this.queues.moves
  }

  /** Whether another task names this one its validation_task_id. */
  private async validates(id: string): Promise<boolean> {
    return [...indexTasks((await this.s.store.read()).data).values()].some((e) => e.task.validation_task_id === id)
  }

  /** A task of tasks.yaml as it is now (the conflict prompt names the tasks behind the target's commits). */
  private async describe(id: string) {
    return indexTasks((await this.s.store.read()).data).get(id)?.task
  }
}

/**
 * Why the task's work cannot be taken from its worktree, if it cannot: the worktree is there but not on the
 * task's branch (an agent detached HEAD or switched branches: its commits are elsewhere, and landing the
 * branch would report work done that never landed). Says where the commits are.
 */
async function worktreeProblem(taskId: string, ws: Workspace): Promise<string | undefined> {
  if (!existsSync(ws.path)) return undefined
  const head = worktreeHead(ws.path)
  if (!head || ("branch" in head && head.branch === ws.branch)) return undefined
  const last = (await run(["git", "reflog", "-1", "--format=%h %gs"], { cwd: ws.path, env: GIT_ENV })).stdout.trim()
  const where = "branch" in head ? `is on branch '${head.branch}'` : `has a detached HEAD at ${head.detached.slice(0, 12)}`
  return (
    `its worktree ${ws.path} ${where}, not on ${ws.branch}${last ? ` (its last move: ${last})` : ""}. ` +
    `To land that work, put it on ${ws.branch} there (for example 'git -C ${ws.path} switch -C ${ws.branch}') and run 'flow done ${taskId}': the next 'flow run' merges it`
  )
}

/** Why a task whose agent finished cannot be landed because its worktree is gone, with where its branch is. */
export async function worktreeGone(ws: Workspace): Promise<string | undefined> {
  if (existsSync(ws.path)) return undefined
  const [head] = await revParse(ws.repo, ws.branch)
  return `its worktree ${ws.path} was deleted before its work was merged; ${ws.branch} is at ${head?.slice(0, 12) ?? "nothing"}. Check what is on it, then run 'flow done' on the task to merge it or 'flow reset' to start it again`
}

/**
 * An edit of tasks.yaml (coalesced with others asked for meanwhile) whose status changes go on the event bus;
 * `fence`: the run's claim of the task on a shared graph (refused once it moved on).
 */
export async function writeStatus(s: RunSettings, command: string, edit: (editor: TaskEdits) => Change[], fence?: Fence): Promise<void> {
  const changes = await coalescedWrite(s, command, edit, fence)
  for (const c of changes) s.bus.emit({ type: "status", taskId: c.id, from: c.from, to: c.to, reason: c.reason })
}

/**
 * Blocks the task with a note; after a failed merge, dependents promoted too early go back to todo. Never on
 * a full disk: what failed may have failed for want of room, so a DiskFull is thrown and the run waits for
 * space and tries again (docs/RUN.md, "A full disk").
 */
export async function blockTask(s: RunSettings, taskId: string, note: string, demoteDependents = false, fence?: Fence): Promise<void> {
  requireRoom([s.project.dir, s.project.stateDir], `${taskId} was not blocked`)
  return writeStatus(
    s,
    `flow run: block ${taskId}`,
    (editor) => {
      editor.append({ taskId }, "ai_notes", note)
      const changes = applyStatus(editor, taskId, "blocked", isoSeconds()).changes
      if (demoteDependents) {
        for (const { task } of editor.tasks.values()) {
          if (task.status === "ready_for_agent" && task.depends_on?.includes(taskId))
            changes.push(...applyStatus(editor, task.id, "todo", isoSeconds()).changes)
        }
      }
      return changes
    },
    fence,
  )
}
