// "done, merge pending": a task marked done whose branch holds commits its target lacks (a person's
// `flow done` after resolving a conflict, or an agent of a dead run). The next `flow run` merges it
// (lib/run/recovery.ts). For `flow done`, `flow list` and `flow show`, so it must be cheap: git is asked
// only about done tasks whose worktree is still there (a landed task's worktree is removed), one
// `git for-each-ref --no-merged` per repository.
import { readdirSync } from "node:fs"
import { join } from "node:path"
import type { Project } from "../cli/project"
import type { Task } from "../model/task-index"

export type Pending = { branch: string; target: string }

/** The done tasks among `tasks` whose branch is not merged into its target, by id. */
export async function mergePending(project: Project, tasks: Iterable<Task>): Promise<Map<string, Pending>> {
  const out = new Map<string, Pending>()
  // One read of the worktrees' folder, not a stat per done task: `flow list` asks about every task.
  const done = [...tasks].filter((t) => t.status === "done")
  if (done.length === 0) return out
  const left = worktreeNames(join(project.stateDir, "worktrees"))
  const candidates = done.filter((t) => left.has(t.id))
  if (candidates.length === 0) return out
  try {
    // Loaded only now: list, show and done start fast when no worktree is left (the common case).
    const [{ loadConfig }, { unmergedBranches }, { Workspaces }] = await Promise.all([
      import("../config/config"),
      import("../git/git"),
      import("../git/workspace"),
    ])
    const config = loadConfig(project.dir)
    const workspaces = new Workspaces(project, { repo: config.repo, target: config.merge_target })
    const unmerged = new Map<string, Promise<Set<string>>>()
    for (const task of candidates) {
      const ws = await workspaces.forTask(task).catch(() => undefined)
      if (!ws) continue
      const key = `${ws.repo}\0${ws.target}`
      if (!unmerged.has(key)) unmerged.set(key, unmergedBranches(ws.repo, `refs/heads/${ws.target}`))
      if ((await unmerged.get(key)!).has(ws.branch)) out.set(task.id, { branch: ws.branch, target: ws.target })
    }
  } catch {
    // An unreadable flow.yaml or a repository git cannot read: the listing itself must still work.
  }
  return out
}

/** The names in the worktrees' folder; none when it does not exist (no run made one) or cannot be read. */
function worktreeNames(dir: string): Set<string> {
  try {
    return new Set(readdirSync(dir))
  } catch {
    return new Set()
  }
}

/** The sentence `flow done` and `flow show` say about a pending merge. */
export function pendingNote(id: string, p: Pending): string {
  return `${id}: ${p.branch} has commits not merged into ${p.target}: the next 'flow run' merges it`
}
