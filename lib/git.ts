// All git work of flow. The hot path (worktrees, commits, merges) runs git directly through lib/proc.ts:
// simple-git has no worktree API and costs 3 to 5 times more per command. simple-git serves where its
// parsed results save hand-written parsing (status).
import { existsSync } from "node:fs"
import { simpleGit } from "simple-git"
import { FlowError } from "./errors"
import { check, run } from "./proc"

/** git with a fixed identity fallback and no pager, prompts or hooks' interference with our parsing. */
function git(cwd: string, args: string[]) {
  return check(["git", ...args], { cwd, env: GIT_ENV })
}

const GIT_ENV = { GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", LC_ALL: "C" }

/** The top folder of the repository holding `dir`, or undefined outside any repository. */
export async function repoRoot(dir: string): Promise<string | undefined> {
  const r = await run(["git", "rev-parse", "--show-toplevel"], { cwd: dir, env: GIT_ENV })
  return r.code === 0 ? r.stdout.trim() : undefined
}

export async function currentBranch(repo: string): Promise<string> {
  const name = (await git(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"]).catch(() => "")).trim()
  if (!name) throw new FlowError(`${repo} is not on a branch (detached HEAD)`, undefined, "check out the branch flow should merge into, or set merge_target in flow.yaml")
  return name
}

export async function branchExists(repo: string, branch: string): Promise<boolean> {
  const r = await run(["git", "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { cwd: repo, env: GIT_ENV })
  return r.code === 0
}

export type Worktree = { path: string; branch?: string; head: string }

export async function listWorktrees(repo: string): Promise<Worktree[]> {
  const out = await git(repo, ["worktree", "list", "--porcelain"])
  const list: Worktree[] = []
  for (const block of out.split("\n\n")) {
    const fields = new Map(block.split("\n").filter(Boolean).map((line) => {
      const space = line.indexOf(" ")
      return space < 0 ? [line, ""] : [line.slice(0, space), line.slice(space + 1)]
    }))
    const path = fields.get("worktree")
    if (!path) continue
    const branch = fields.get("branch")?.replace(/^refs\/heads\//, "")
    list.push({ path, branch, head: fields.get("HEAD") ?? "" })
  }
  return list
}

/**
 * A worktree at `path` on `branch`: reused when it already exists (an interrupted run resumes there),
 * else created from the existing branch, else a new branch from `base`.
 */
export async function ensureWorktree(repo: string, path: string, branch: string, base: string): Promise<"reused" | "created"> {
  if (existsSync(path)) {
    const existing = (await listWorktrees(repo)).find((w) => w.path === path)
    if (existing) {
      if (existing.branch !== branch) throw new FlowError(`worktree ${path} is on branch '${existing.branch}', not '${branch}'`, undefined, `remove it with 'flow repo worktree remove'`)
      return "reused"
    }
  }
  // The common case is one `git worktree add`; the rest only when it fails (a left-over registration
  // of a deleted folder, or a branch that exists from an earlier run).
  const fresh = await run(["git", "worktree", "add", "-b", branch, "--", path, base], { cwd: repo, env: GIT_ENV })
  if (fresh.code === 0) return "created"
  await git(repo, ["worktree", "prune"])
  if (await branchExists(repo, branch)) await git(repo, ["worktree", "add", "--", path, branch])
  else await git(repo, ["worktree", "add", "-b", branch, "--", path, base])
  return "created"
}

/** Files with uncommitted changes in a worktree (tracked changes and untracked files). */
export async function dirtyFiles(path: string): Promise<string[]> {
  const status = await simpleGit({ baseDir: path }).status()
  return status.files.map((f) => f.path)
}

export async function removeWorktree(repo: string, path: string, force = false): Promise<void> {
  const r = await run(["git", "worktree", "remove", ...(force ? ["--force"] : []), "--", path], { cwd: repo, env: GIT_ENV })
  if (r.code === 0) return
  // git refuses a worktree with changes; say which, in our words.
  const dirty = existsSync(path) ? await dirtyFiles(path) : []
  if (dirty.length) {
    throw new FlowError(`the worktree ${path} has uncommitted changes: ${dirty.slice(0, 10).join(", ")}${dirty.length > 10 ? ", ..." : ""}`,
      undefined, "commit or discard them, or add --force to remove it anyway (they are lost)")
  }
  throw new FlowError(`'git worktree remove ${path}' failed: ${(r.stderr || r.stdout).trim()}`)
}

/** Commits everything in the worktree; false when there was nothing to commit. */
export async function commitAll(path: string, message: string, author: { name: string; email: string }): Promise<boolean> {
  // Agents usually commit their own work: one `status` is all it costs then.
  if ((await git(path, ["status", "--porcelain", "--untracked-files=all"])).trim() === "") return false
  await git(path, ["add", "-A"])
  await check(["git", "-c", `user.name=${author.name}`, "-c", `user.email=${author.email}`, "commit", "-q", "--no-verify", "-m", message], { cwd: path, env: GIT_ENV })
  return true
}

export type MergeResult = { ok: true; commit: string } | { ok: false; conflicts: string[]; reason: string }

/**
 * Merges `branch` into the branch checked out at `checkout` (a no-fast-forward merge commit). On a conflict
 * or when local changes would be overwritten, the merge is aborted and the target is left as it was.
 */
export async function mergeInto(checkout: string, branch: string, message: string, author: { name: string; email: string }): Promise<MergeResult> {
  const r = await run(["git", "-c", `user.name=${author.name}`, "-c", `user.email=${author.email}`, "merge", "--no-ff", "--no-edit", "-m", message, "--", branch], { cwd: checkout, env: GIT_ENV })
  if (r.code === 0) return { ok: true, commit: (await git(checkout, ["rev-parse", "HEAD"])).trim() }
  const conflicts = (await run(["git", "diff", "--name-only", "--diff-filter=U"], { cwd: checkout, env: GIT_ENV })).stdout.split("\n").filter(Boolean)
  const merging = await run(["git", "rev-parse", "--verify", "--quiet", "MERGE_HEAD"], { cwd: checkout, env: GIT_ENV })
  if (merging.code === 0) await git(checkout, ["merge", "--abort"])
  const reason = conflicts.length ? `merge conflict in ${conflicts.join(", ")}` : (r.stderr.trim() || r.stdout.trim()).split("\n").slice(0, 6).join("\n")
  return { ok: false, conflicts, reason }
}

/** Whether a `git` executable is on this PATH (flow create says what to run instead when there is none). */
export function gitOnPath(path: string | undefined): boolean {
  return Bun.which("git", { PATH: path ?? "" }) !== null
}

/**
 * Makes `dir` a repository on `main` with one commit of everything in it. The commit carries the user's
 * identity when git has one; else flow's, so that a first run never stops at "Please tell me who you are".
 */
export async function initRepo(dir: string, message: string): Promise<void> {
  await git(dir, ["init", "-q", "-b", "main"])
  await git(dir, ["add", "-A"])
  const known = (await run(["git", "config", "user.email"], { cwd: dir, env: GIT_ENV })).stdout.trim() !== ""
  const identity = known ? [] : ["-c", "user.name=flow", "-c", "user.email=flow@localhost"]
  await git(dir, [...identity, "commit", "-q", "--no-verify", "-m", message])
}
