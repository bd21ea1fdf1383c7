// Moving a target branch to a merge flow made off-tree, and, where a person has that branch checked out, the
// checkout with it, only when nothing of theirs can be lost (docs/RUN.md, "Landing"). The one invariant:
//
//   flow changes the person's checkout only by a journaled two-tree move that git refuses when it would
//   lose a change.
//
// The order: journal (ref, old, new) → `git read-tree -m -u old new` in the checkout (git refuses it, and
// changes nothing, when a local change, staged or not, or an untracked file is in the way) → the ref by
// compare-and-swap (`update-ref <ref> <new> <old>`) → journal end. A checkout in the middle of the person's
// merge, rebase, cherry-pick, revert or bisect, or with a git lock in the way, is not touched at all: the
// caller waits and tries again. Recovery at start (move-recovery.ts) finishes or undoes a move a kill cut off.
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { basename, dirname, isAbsolute, join, relative } from "node:path"
import { GIT_ENV, gitDirs, listWorktrees, looseRef, revParse } from "../git/git"
import { run } from "../cli/proc"
import type { MoveJournal } from "./merge-journal"
import { killPoint } from "../cli/kill-point"

export type MoveResult =
  | { ok: true }
  /** the target is not at `old` any more: the merge must be built again on what it is now */
  | { ok: false; why: "moved"; detail: string }
  /** something of the person's is in the way (a change, an operation, a lock): nothing moved; try again later */
  | { ok: false; why: "wait"; detail: string; lock?: boolean }

/** The branch a worktree's HEAD names, or the commit it is detached at (read from its files: no git call). */
export function worktreeHead(worktree: string): { branch: string } | { detached: string } | undefined {
  const dirs = gitDirs(worktree)
  if (!dirs) return undefined
  try {
    const head = readFileSync(join(dirs.gitdir, "HEAD"), "utf8").trim()
    const ref = /^ref: refs\/heads\/(.+)$/.exec(head)?.[1]
    return ref ? { branch: ref } : { detached: head }
  } catch {
    return undefined
  }
}

/** What the person is in the middle of in a checkout, by git's own state files; undefined when nothing. */
export function operationInProgress(gitdir: string): string | undefined {
  if (existsSync(join(gitdir, "rebase-merge")) || existsSync(join(gitdir, "rebase-apply", "rebasing"))) return "a rebase"
  if (existsSync(join(gitdir, "rebase-apply"))) return "a 'git am'"
  if (existsSync(join(gitdir, "MERGE_HEAD"))) return "a merge"
  if (existsSync(join(gitdir, "CHERRY_PICK_HEAD"))) return "a cherry-pick"
  if (existsSync(join(gitdir, "REVERT_HEAD"))) return "a revert"
  if (existsSync(join(gitdir, "BISECT_LOG"))) return "a bisect"
  return undefined
}

/** The branch a detached worktree is rebasing (git keeps it in rebase-merge/head-name), if any. */
function rebasing(gitdir: string): string | undefined {
  for (const dir of ["rebase-merge", "rebase-apply"]) {
    try {
      return readFileSync(join(gitdir, dir, "head-name"), "utf8")
        .trim()
        .replace(/^refs\/heads\//, "")
    } catch {}
  }
  return undefined
}

/** A lock file's path as the person would type it: relative to their checkout when inside it. */
export function shown(path: string, dir: string): string {
  const rel = relative(dir, path)
  return rel.startsWith("..") || isAbsolute(rel) ? path : rel
}

export const lockAdvice = (lock: string, dir: string) => `\`${shown(lock, dir)}\` exists: another git may be running in ${dir}; if none is, delete it`

/** The lock git left in the way, named from its own error ("Unable to create '<path>.lock': File exists"). */
function lockIn(stderr: string): string | undefined {
  return /Unable to create '([^']+\.lock)': File exists/.exec(stderr)?.[1]
}

/** The paths git named when it refused a two-tree read because of local changes or untracked files. */
function inTheWay(stderr: string): string[] {
  const paths = new Set<string>()
  for (const m of stderr.matchAll(/(?:Entry|Untracked working tree file) '([^']+)' (?:not uptodate|would be overwritten)/g)) paths.add(m[1])
  for (const m of stderr.matchAll(/^\t(.+)$/gm)) paths.add(m[1])
  return [...paths]
}

/** A word as a POSIX shell reads it back: as it is when it can be, else in single quotes. */
const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)

export const list = (paths: string[]) => `${paths.slice(0, 5).join(", ")}${paths.length > 5 ? ` and ${paths.length - 5} more` : ""}`

/** What to tell the person when git refused the checkout's move. */
function refusal(stderr: string, checkout: string): { detail: string; lock?: boolean } {
  const lock = lockIn(stderr)
  if (lock) return { detail: lockAdvice(lock, checkout), lock: true }
  const paths = inTheWay(stderr)
  if (paths.length) return { detail: changesInTheWay(paths, checkout) }
  return { detail: `git refused to update ${checkout}: ${stderr.trim().split("\n")[0]}` }
}

/** What to tell the person whose uncommitted changes to `paths` stand in the way of the checkout's move. */
function changesInTheWay(paths: string[], checkout: string): string {
  const it = paths.length === 1 ? "it" : "them"
  // A bare `git stash` takes every change, flow's own tasks.yaml writes with them (its `stash pop` then
  // fails on the run's later writes): the command names the paths git named, and only those.
  const stash = ["git", "-C", checkout, "stash", "push", "--", ...paths].map(shellWord).join(" ")
  return `your uncommitted change${paths.length === 1 ? "" : "s"} to ${list(paths)} in ${checkout} ${paths.length === 1 ? "is" : "are"} in the way; commit ${it}, or stash just ${it} with \`${stash}\` (not a bare \`git stash\`, which takes flow's own uncommitted writes too), and flow lands by itself`
}

/**
 * The paths git last refused a checkout's move for, by checkout: while the landing waits and tries again,
 * those are asked about first with reads that take no lock. The two-tree read takes the checkout's
 * index.lock even when it refuses, and a person's own git at that instant (the `git stash push` flow
 * advised) would fail on it; so the read runs again only once those changes are gone or no longer in the way.
 */
const refused = new Map<string, string[]>()

/** The paths of `refused` still changed in `checkout` and changed between `old` and `next`; [] when none is. */
async function stillInTheWay(repo: string, checkout: string, old: string, next: string): Promise<string[]> {
  const paths = refused.get(checkout)
  if (!paths) return []
  const status = await run(["git", "status", "--porcelain", "-z", "--untracked-files=all", "--", ...paths], { cwd: checkout, env: GIT_ENV })
  const diff = await run(["git", "diff", "--name-only", "-z", old, next, "--", ...paths], { cwd: repo, env: GIT_ENV })
  if (status.code !== 0 || diff.code !== 0) return []
  const changed = new Set(status.stdout.split("\0").flatMap((e) => (e.length > 3 ? [e.slice(3)] : [])))
  const moving = new Set(diff.stdout.split("\0").filter(Boolean))
  const left = paths.filter((p) => changed.has(p) && moving.has(p))
  if (left.length === 0) refused.delete(checkout)
  return left
}

/** A working tree of a repository: where it is, its own git folder, the branch its HEAD names (none: detached). */
type Checkout = { path: string; gitdir?: string; branch?: string }

/**
 * The repository's working trees read from git's own files (no git process: a move must not wait for one,
 * nor fail on a registration another git is writing at this instant, which `git worktree list` refuses):
 * the main one beside the common folder, each linked one from `worktrees/<name>/gitdir`. A registration
 * half written (no gitdir or HEAD yet) is skipped: it has nothing checked out. Undefined where git's rules
 * are other than that (a bare repository, or `core.worktree` set: a submodule): `git worktree list` then.
 */
function checkoutsOf(common: string): Checkout[] | undefined {
  let config = ""
  try {
    config = readFileSync(join(common, "config"), "utf8")
  } catch {}
  if (/^\s*(bare\s*=\s*true|worktree\s*=)/im.test(config) || basename(common) !== ".git") return undefined
  const headOf = (gitdir: string) => /^ref: refs\/heads\/(.+)$/.exec(readFileSync(join(gitdir, "HEAD"), "utf8").trim())?.[1]
  const out: Checkout[] = [{ path: dirname(common), gitdir: common, branch: headOf(common) }]
  let names: string[] = []
  try {
    names = readdirSync(join(common, "worktrees"))
  } catch {}
  for (const name of names) {
    const gitdir = join(common, "worktrees", name)
    try {
      const path = dirname(readFileSync(join(gitdir, "gitdir"), "utf8").trim())
      out.push({ path, gitdir, branch: headOf(gitdir) })
    } catch {} // half written, or being removed
  }
  return out
}

/**
 * Moves refs/heads/<target> from `old` to `next`, and the person's checkout of it (if any) with it, only when
 * nothing can be lost (module comment). Never runs anything in a checkout but the two-tree read.
 */
export async function moveTarget(repo: string, target: string, old: string, next: string, message: string, journal: MoveJournal): Promise<MoveResult> {
  const ref = `refs/heads/${target}`
  const dirs = gitDirs(repo)
  if (!dirs) return { ok: false, why: "wait", detail: `${repo} is not a git repository any more` }
  let worktrees: Checkout[]
  try {
    worktrees = checkoutsOf(dirs.common) ?? (await listWorktrees(repo)).map((w) => ({ ...w, gitdir: gitDirs(w.path)?.gitdir }))
  } catch (e) {
    // Another git making a worktree at this instant (a person's) leaves its registration half written, and
    // git refuses to list any: a moment's wait, said only if it lasts.
    return { ok: false, why: "wait", detail: `git could not list the worktrees of ${repo}: ${(e as Error).message.split("\n").at(-1)}`, lock: true }
  }
  for (const w of worktrees) {
    if (w.branch === undefined && w.gitdir && rebasing(w.gitdir) === target)
      return { ok: false, why: "wait", detail: `${target} is being rebased in ${w.path}; flow lands when the rebase is finished or aborted` }
  }
  const found = worktrees.find((w) => w.branch === target)
  const checkout = found?.path
  const cd = found?.gitdir ? { gitdir: found.gitdir } : undefined
  if (checkout && cd) {
    const op = operationInProgress(cd.gitdir)
    if (op) return { ok: false, why: "wait", detail: `${checkout} is in the middle of ${op}; flow lands when it is concluded or aborted` }
  }
  const locks = [join(dirs.common, `${ref}.lock`), ...(cd ? [join(cd.gitdir, "index.lock"), join(cd.gitdir, "HEAD.lock")] : [])]
  const lock = locks.find((l) => existsSync(l))
  if (lock) return { ok: false, why: "wait", detail: lockAdvice(lock, checkout ?? repo), lock: true }
  const now = looseRef(dirs.common, ref) ?? (await revParse(repo, ref))[0]
  if (now !== old) return { ok: false, why: "moved", detail: `${target} is at ${now?.slice(0, 7) ?? "nothing"}, not ${old.slice(0, 7)}` }

  const waiting = checkout ? await stillInTheWay(repo, checkout, old, next) : []
  if (checkout && waiting.length) return { ok: false, why: "wait", detail: changesInTheWay(waiting, checkout) }
  const id = checkout ? await journal.begin({ repo, checkout, ref, old, new: next }) : undefined
  if (checkout) {
    const read = await run(["git", "read-tree", "-m", "-u", old, next], { cwd: checkout, env: GIT_ENV })
    if (read.code !== 0) {
      await journal.end(id!, "given-up")
      const paths = inTheWay(read.stderr)
      if (paths.length && !lockIn(read.stderr)) refused.set(checkout, paths)
      return { ok: false, why: "wait", ...refusal(read.stderr, checkout) }
    }
    refused.delete(checkout)
    killPoint("after-read-tree")
  }
  const r = await run(["git", "update-ref", "-m", message, ref, next, old], { cwd: repo, env: GIT_ENV })
  if (r.code === 0) {
    if (id !== undefined) await journal.end(id, "moved")
    return { ok: true }
  }
  // The ref did not move: the checkout goes back to where it was (the same two-tree read, reversed).
  if (checkout) await run(["git", "read-tree", "-m", "-u", next, old], { cwd: checkout, env: GIT_ENV })
  if (id !== undefined) await journal.end(id, "given-up")
  const [after] = await revParse(repo, ref)
  if (after !== old) return { ok: false, why: "moved", detail: `${target} moved meanwhile` }
  const held = lockIn(r.stderr)
  return held
    ? { ok: false, why: "wait", detail: lockAdvice(held, checkout ?? repo), lock: true }
    : { ok: false, why: "wait", detail: `git could not move ${target}: ${r.stderr.trim().split("\n")[0]}` }
}
