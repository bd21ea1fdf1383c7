// What a git killed mid-operation (with its run's whole process group) leaves in a repository, cleared at
// a run's start (lib/run/recovery.ts) once nothing of a dead run is left running (the reaper and
// `awaitOrphanGit` ran): lock files, and registrations of worktrees `git worktree add` never finished.
// Only flow's own: its worktrees, its branches, its scratch worktrees; never the person's checkout.
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { worktreeHead } from "./checkout-move"
import { gitRunningIn } from "../cli/pid"
import { gitDirs } from "../git/git"

/**
 * Removes the lock files git left in flow's worktrees (`.flow/worktrees/*`): the index's, HEAD's, and their
 * branch's. Git, killed while it held one (with its run's process group, or an agent's git reaped), would
 * refuse every later command there. Called once nothing of a dead run is left running (the reaper and
 * `awaitOrphanGit` ran), and never in the person's own checkout. Returns those tasks.
 */
export function clearStaleLocks(stateDir: string): string[] {
  const root = join(stateDir, "worktrees")
  if (!existsSync(root)) return []
  const cleared: string[] = []
  for (const id of readdirSync(root)) {
    const path = join(root, id)
    const dirs = gitDirs(path)
    if (!dirs || dirs.gitdir === join(path, ".git")) continue // not a worktree (any more)
    const head = worktreeHead(path)
    const branch = head && "branch" in head ? [join(dirs.common, "refs", "heads", `${head.branch}.lock`)] : []
    const locks = [join(dirs.gitdir, "index.lock"), join(dirs.gitdir, "HEAD.lock"), ...branch]
    const stale = locks.filter((lock) => existsSync(lock))
    for (const lock of stale) rmSync(lock, { force: true })
    if (stale.length > 0) cleared.push(id)
  }
  return cleared
}

/**
 * Removes the lock a killed `git worktree add -b` left on a task's branch before it made anything else:
 * every later add of that branch fails ("cannot lock ref"). True when there was one.
 */
export function clearBranchLock(common: string, branch: string): boolean {
  const lock = join(common, "refs", "heads", `${branch}.lock`)
  if (!existsSync(lock)) return false
  rmSync(lock, { force: true })
  return true
}

/**
 * Removes the lock files a killed fetch or push of a shared project's run left on the remote-tracking refs of
 * `branches` (`refs/remotes/<remote>/<branch>.lock`): every later fetch of that branch fails ("Unable to create
 * ... .lock: File exists"), and its task with it. These refs are the person's too (their `git fetch` writes
 * them), so a lock goes only when no git runs in the repository (`repo`, its top folder, and `stateDir`, where
 * flow's worktrees are): a lock is held only while its git runs. Returns the refs whose lock went.
 */
export function clearRemoteRefLocks(repo: string, common: string, stateDir: string, remote: string, branches: Iterable<string>): string[] {
  const locks = [...new Set(branches)].map((b) => ({ ref: `refs/remotes/${remote}/${b}`, lock: join(common, "refs", "remotes", remote, `${b}.lock`) }))
  const present = locks.filter((l) => existsSync(l.lock))
  if (present.length === 0 || gitRunningIn(realpathSync(repo)) || (existsSync(stateDir) && gitRunningIn(realpathSync(stateDir)))) return []
  for (const l of present) rmSync(l.lock, { force: true })
  return present.map((l) => l.ref)
}

/**
 * Removes the registrations (`<common>/worktrees/<name>`) that a `git worktree add` of flow's, killed before
 * it wrote `commondir` or HEAD, left half made, and their folders: git cannot read them (an empty
 * `commondir` makes every `git worktree list` in the repository fail, the person's too), and `git worktree
 * prune` keeps them (they are locked "initializing"). Flow's own only: its `gitdir` points into the
 * project's `.flow/`, or (killed before that was written) its name is a task's worktree or a check's
 * scratch worktree of this project. Returns their names, and whether a registration of flow's whole but
 * without its folder (a `git worktree remove` killed between the two) wants a `git worktree prune`.
 */
export function clearHalfMade(common: string, stateDir: string, ids: Set<string>): { cleared: string[]; prune: boolean } {
  let names: string[] = []
  try {
    names = readdirSync(join(common, "worktrees"))
  } catch {
    return { cleared: [], prune: false }
  }
  let prune = false
  const state = existsSync(stateDir) ? realpathSync(stateDir) : resolve(stateDir)
  const cleared: string[] = []
  for (const name of names) {
    const admin = join(common, "worktrees", name)
    const read = (file: string) => {
      try {
        return readFileSync(join(admin, file), "utf8").trim()
      } catch {
        return undefined
      }
    }
    const gitdir = read("gitdir")
    // git writes a file by creating it, then its content: killed in between, it is there and empty.
    if (read("commondir") && read("HEAD")) {
      if (gitdir?.startsWith(`${state}/`) && !existsSync(dirname(gitdir)) && read("locked") === undefined) prune = true
      continue
    }
    const locked = read("locked")
    if (locked !== undefined && locked !== "initializing") continue // a person's lock: theirs
    const scratch = /^(.+)-\d+-[0-9a-z]+$/.exec(name)?.[1]
    const ours = gitdir ? gitdir.startsWith(`${state}/`) : ids.has(name) || (scratch !== undefined && ids.has(scratch))
    if (!ours) continue
    rmSync(admin, { recursive: true, force: true })
    if (gitdir) rmSync(resolve(gitdir, ".."), { recursive: true, force: true })
    else if (ids.has(name)) rmSync(join(stateDir, "worktrees", name), { recursive: true, force: true })
    cleared.push(name)
  }
  return { cleared, prune }
}
