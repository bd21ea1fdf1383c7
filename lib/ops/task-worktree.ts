// A task's worktree and branch, handled by a person's command outside a run: `flow repo worktree remove` and
// `flow reset`. Neither acts under an agent of a live run (its work would be pulled from under it), a removal
// runs flow.yaml's teardown first as a run does, and a reset keeps the earlier attempt's branch as a ref so
// that the retry starts from the target as it is now (docs/STATUS-RULES.md, "flow reset").
import { existsSync } from "node:fs"
import { basename, dirname, resolve } from "node:path"
import { FlowError } from "../cli/errors"
import type { Project } from "../cli/project"
import { branchExists, dirtyFiles, dropBranch, listWorktrees, removeWorktree } from "../git/git"
import { keepAside } from "../git/remote-git"
import { Workspaces } from "../git/workspace"
import { runCheck } from "../worktree/command"
import type { Task } from "../model/task-index"
import { loadConfig } from "../config/config"
import { sandboxOf } from "../config/sandbox-config"
import { confineCommands } from "../sandbox/commands"
import { AUTHOR } from "../run/landing"
import { teardownEnv, teardownOf } from "../worktree/teardown"
import { liveWorkOn } from "../run/worked-by"

/** Where a command says what it does: lines for stdout and stderr. */
export type Say = { out: (line: string) => void; warn: (line: string) => void }

/** The task whose run worktree `path` is (a run's are `.flow/worktrees/<id>`), else undefined. */
export function taskOfWorktree(project: Project, path: string): string | undefined {
  return resolve(dirname(path)) === resolve(project.stateDir, "worktrees") ? basename(path) : undefined
}

/** Throws when an agent of a live run is at work on `taskId`: `doing` is what the command would have done. */
export async function refuseUnderLiveAgent(project: Project, taskId: string, doing: string, hint: string): Promise<void> {
  const live = await liveWorkOn(project, taskId)
  if (!live) return
  const where = `pid ${live.run.pid}${live.run.machine ? ` on ${live.run.machine}` : ""}`
  throw new FlowError(
    `${live.agent} of a live 'flow run' (${where}, since ${live.run.since}) is at work on task '${taskId}': ${doing} would pull its worktree from under it`,
    undefined,
    hint,
  )
}

/** Removes a worktree as a run does: flow.yaml's teardown first (unless git would refuse the removal anyway). */
export async function removeTaskWorktree(project: Project, repo: string, path: string, force: boolean, say: Say): Promise<void> {
  const config = loadConfig(project.dir)
  const teardown = await teardownOf(project.dir, config, repo)
  if (teardown && (force || (await dirtyFiles(path)).length === 0)) {
    const env = teardownEnv(project.dir, project.stateDir, basename(path), path)
    say.out(`teardown '${teardown.label}'`)
    const r = await runCheck(teardown, path, env, new AbortController().signal, {
      onLine: (line) => say.out(`  ${line}`),
      confine: confineCommands(sandboxOf({}, config.sandbox)),
    })
    if (!r.ok) say.warn(`${r.output.split("\n")[0]}; the worktree is removed anyway`)
  }
  await removeWorktree(repo, path, force)
}

/** What `setAsideAttempt` did: the branch that went, the ref that keeps it, the branch the retry starts from. */
export type SetAside = { branch: string; ref: string; target: string }

/**
 * Keeps the task's branch from an earlier attempt (with what its worktree had not committed) as a ref under
 * refs/flow/reset/, then removes its worktree and the branch: the next run makes the branch again from the
 * target. Undefined when there is no such branch, or no repository to look in (the run says why when it starts).
 */
export async function setAsideAttempt(project: Project, task: Task, say: Say): Promise<SetAside | undefined> {
  const config = loadConfig(project.dir)
  const ws = await new Workspaces(project, { repo: config.repo, target: config.merge_target }).forTask(task).catch(() => undefined)
  if (!ws || !(await branchExists(ws.repo, ws.branch))) return undefined
  // Deleted under a checkout of the person's, the branch would leave it on no commit at all.
  const elsewhere = (await listWorktrees(ws.repo)).find((w) => w.branch === ws.branch && resolve(w.path) !== resolve(ws.path))
  if (elsewhere)
    throw new FlowError(
      `${ws.branch}, the branch of task '${task.id}', is checked out in ${elsewhere.path}: a retry from ${ws.target} would delete it there`,
      undefined,
      `switch that checkout to another branch (git -C ${elsewhere.path} switch ${ws.target}), then 'flow reset ${task.id}' again`,
    )
  const ref = await keepAside(ws, AUTHOR, "reset")
  // Its work is in the ref now, uncommitted changes included: the removal may discard them.
  if (existsSync(ws.path)) await removeTaskWorktree(project, ws.repo, ws.path, true, say)
  await dropBranch(ws.repo, ws.branch)
  return { branch: ws.branch, ref, target: ws.target }
}
