// All git work of flow. The hot path (worktrees, commits, merges) runs git directly through lib/cli/proc.ts:
// simple-git has no worktree API and costs 3 to 5 times more per command. simple-git serves where its
// parsed results save hand-written parsing (status).
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { simpleGit } from "simple-git"
import { FlowError } from "../cli/errors"
import { check, run } from "../cli/proc"
import { GIT_ENV } from "./git-env"

export { GIT_ENV, GIT_OWNER } from "./git-env"

/** git with a fixed identity fallback and no pager, prompts or hooks' interference with our parsing. */
function git(cwd: string, args: string[]) {
  return check(["git", ...args], { cwd, env: GIT_ENV })
}

/** The top folder of the repository holding `dir`, or undefined outside any repository. */
export async function repoRoot(dir: string): Promise<string | undefined> {
  const r = await run(["git", "rev-parse", "--show-toplevel"], { cwd: dir, env: GIT_ENV })
  return r.code === 0 ? r.stdout.trim() : undefined
}

export async function currentBranch(repo: string): Promise<string> {
  const name = (await git(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"]).catch(() => "")).trim()
  if (!name)
    throw new FlowError(
      `${repo} is not on a branch (detached HEAD)`,
      undefined,
      "check out the branch flow should merge into, or set merge_target in flow.yaml",
    )
  return name
}

export async function branchExists(repo: string, branch: string): Promise<boolean> {
  const r = await run(["git", "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { cwd: repo, env: GIT_ENV })
  return r.code === 0
}

/** `locked`: its reason ("initializing": a `git worktree add` that never finished); `prunable`: its .git is gone. */
export type Worktree = { path: string; branch?: string; head: string; locked?: string; prunable?: string }

export async function listWorktrees(repo: string): Promise<Worktree[]> {
  const out = await git(repo, ["worktree", "list", "--porcelain"])
  const list: Worktree[] = []
  for (const block of out.split("\n\n")) {
    const fields = new Map(
      block
        .split("\n")
        .filter(Boolean)
        .map((line) => {
          const space = line.indexOf(" ")
          return space < 0 ? [line, ""] : [line.slice(0, space), line.slice(space + 1)]
        }),
    )
    const path = fields.get("worktree")
    if (!path) continue
    const branch = fields.get("branch")?.replace(/^refs\/heads\//, "")
    list.push({ path, branch, head: fields.get("HEAD") ?? "", locked: fields.get("locked"), prunable: fields.get("prunable") })
  }
  return list
}

/**
 * A worktree at `path` on `branch`: reused when it already exists (an interrupted run resumes there),
 * else created from the existing branch, else a new branch from `base`. `serial` runs what must not overlap
 * the repository's other worktree operations (git fails on a registration another git is writing).
 */
export async function ensureWorktree(
  repo: string,
  path: string,
  branch: string,
  base: string,
  serial: <T>(fn: () => Promise<T>) => Promise<T> = (fn) => fn(),
): Promise<"reused" | "created"> {
  if (!existsSync(path)) {
    // The common case: the branch is made beside the others' worktree operations (a ref of its own: when it
    // exists from an earlier run this fails, and that branch is used), then one `git worktree add` of it in
    // their line: three of git's processes there instead of four, on the path of every task.
    await run(["git", "branch", "--", branch, base], { cwd: repo, env: GIT_ENV })
    const fresh = await serial(() => run(["git", "worktree", "add", "--", path, branch], { cwd: repo, env: GIT_ENV }))
    if (fresh.code === 0) return "created"
  }
  return serial(() => repairWorktree(repo, path, branch, base))
}

/** ensureWorktree's uncommon cases: a worktree there already (reused, or half made), or an add that failed. */
async function repairWorktree(repo: string, path: string, branch: string, base: string): Promise<"reused" | "created"> {
  if (existsSync(path)) {
    const existing = (await listWorktrees(repo)).find((w) => w.path === path)
    // A `git worktree add` killed during its checkout (Ctrl-C reaches git too) leaves the worktree locked
    // "initializing" with files missing: worked in, its commit would delete them. Nobody worked there: made again.
    if (existing?.locked === "initializing") {
      const r = await run(["git", "worktree", "remove", "--force", "--force", "--", path], { cwd: repo, env: GIT_ENV })
      // Killed while writing the worktree's `.git` (empty), git will not remove it ("not a .git file"):
      // the folder goes, then its registration.
      if (r.code !== 0) {
        rmSync(path, { recursive: true, force: true })
        await unlockWorktree(repo, path)
        await git(repo, ["worktree", "prune"])
      }
    } else if (existing) {
      if (existing.branch !== branch)
        throw new FlowError(`worktree ${path} is on branch '${existing.branch}', not '${branch}'`, undefined, `remove it with 'flow repo worktree remove'`)
      requireOwnCheckout(path)
      return "reused"
    }
  }
  // The add failed (a left-over registration of a deleted folder), or a half-made worktree was just removed.
  // A `git worktree add` killed before it made the folder leaves the registration locked ("initializing"),
  // which prune keeps and add refuses ("a missing but locked worktree"): nobody worked there.
  if (!existsSync(path)) await unlockWorktree(repo, path)
  await git(repo, ["worktree", "prune"])
  if (await branchExists(repo, branch)) await git(repo, ["worktree", "add", "--", path, branch])
  else await git(repo, ["worktree", "add", "-b", branch, "--", path, base])
  return "created"
}

/** Deletes `branch` in `repo`, whatever it holds (its work kept elsewhere first, or merged). */
export async function dropBranch(repo: string, branch: string): Promise<void> {
  await git(repo, ["update-ref", "-d", `refs/heads/${branch}`])
}

/** Files with uncommitted changes in a worktree (tracked changes and untracked files, but flow's copies). */
export async function dirtyFiles(path: string): Promise<string[]> {
  const exclude = flowExcludeFile(path)
  const status = await simpleGit({ baseDir: path, config: exclude ? [`core.excludesFile=${exclude}`] : [] }).status()
  return status.files.map((f) => f.path)
}

/**
 * The git folder of a worktree (`.git/worktrees/<name>` of its repository; `.git` of a main checkout), read
 * from its files; undefined when it has none.
 */
export function worktreeGitDir(path: string): string | undefined {
  const dotgit = join(path, ".git")
  try {
    if (statSync(dotgit).isDirectory()) return dotgit
    const named = /^gitdir: (.+)$/m.exec(readFileSync(dotgit, "utf8"))?.[1]?.trim()
    return named ? resolve(path, named) : undefined
  } catch {
    return undefined
  }
}

/**
 * The name, in a worktree's git folder, of flow's ignore file: the files flow copied into it (flow.yaml
 * `copy`) and the user's own global excludes. Given as core.excludesFile to every git of flow and of the
 * agent in that worktree, so no `git add -A` commits a copied `.env`. Git reads `info/exclude` from the
 * repository's common folder only (the person's checkout would ignore the files too), hence this file.
 */
export const FLOW_EXCLUDE = "flow-exclude"

/** flow's ignore file of a worktree, when it has one. */
export function flowExcludeFile(path: string): string | undefined {
  const dir = worktreeGitDir(path)
  const file = dir && join(dir, FLOW_EXCLUDE)
  return file && existsSync(file) ? file : undefined
}

/** `-c core.excludesFile=<flow's ignore file>` for a git in the worktree at `path`, when it has one; git passes it on to the gits it starts. */
function excludeArgs(path: string): string[] {
  const file = flowExcludeFile(path)
  return file ? ["-c", `core.excludesFile=${file}`] : []
}

/**
 * The environment that gives every git started in the worktree at `path` (by an agent, a setup) flow's
 * ignore file, after the git config entries `env` already passes (GIT_CONFIG_COUNT); {} without one.
 */
export function excludeEnv(path: string, env: Record<string, string | undefined>): Record<string, string> {
  const file = flowExcludeFile(path)
  if (!file) return {}
  const n = Number.parseInt(env.GIT_CONFIG_COUNT ?? "0", 10) || 0
  return { GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: "core.excludesFile", [`GIT_CONFIG_VALUE_${n}`]: file }
}

/** The user's global ignore file as git finds it (core.excludesFile, else $XDG_CONFIG_HOME/git/ignore), when there is one. */
export async function globalExcludesFile(repo: string, env: Record<string, string | undefined>): Promise<string | undefined> {
  const set = (await run(["git", "config", "--path", "--get", "core.excludesFile"], { cwd: repo, env: GIT_ENV })).stdout.trim()
  const file = set || join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config"), "git", "ignore")
  return existsSync(file) ? resolve(repo, file) : undefined
}

/** Which of `paths` (relative to the repository's top) git tracks in `repo`'s index. */
export async function trackedPaths(repo: string, paths: readonly string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set()
  const out = await git(repo, ["--literal-pathspecs", "ls-files", "-z", "--full-name", "--", ...paths])
  return new Set(out.split("\0").filter(Boolean))
}

export async function removeWorktree(repo: string, path: string, force = false): Promise<void> {
  // git's cleanliness check (a `git status` it starts) must not count flow's copies as the agent's work.
  const r = await run(["git", ...excludeArgs(path), "worktree", "remove", ...(force ? ["--force"] : []), "--", path], { cwd: repo, env: GIT_ENV })
  if (r.code === 0) return
  if (force && existsSync(path) && !hasOwnGit(path)) {
    // Half removed already (git refuses a folder without its .git): the rest goes, and git forgets it.
    rmSync(path, { recursive: true, force: true })
    await git(repo, ["worktree", "prune"])
    return
  }
  // git refuses a worktree with changes; say which, in our words.
  const dirty = existsSync(path) ? await dirtyFiles(path) : []
  if (dirty.length) {
    throw new FlowError(
      `the worktree ${path} has uncommitted changes: ${dirty.slice(0, 10).join(", ")}${dirty.length > 10 ? ", ..." : ""}`,
      undefined,
      "commit or discard them, or add --force to remove it anyway (they are lost)",
    )
  }
  throw new FlowError(`'git worktree remove ${path}' failed: ${(r.stderr || r.stdout).trim()}`)
}

/**
 * Whether a worktree folder still has its `.git`. Without it git takes the repository above for the
 * folder's own (a `.git` that points nowhere is an error, never that), so a commit there would take a
 * person's changes in the main checkout; a removal cut off half way leaves such folders.
 */
const hasOwnGit = (path: string) => existsSync(join(path, ".git"))

/** Refuses a worktree folder without its `.git` (hasOwnGit). */
export function requireOwnCheckout(path: string): void {
  if (hasOwnGit(path)) return
  throw new FlowError(
    `${path} is not a git worktree of its own any more (its .git is missing: a removal cut off half way?)`,
    undefined,
    `move what you need out of it, delete the folder, run 'git worktree prune', and run again`,
  )
}

/** Commits everything in the worktree; false when there was nothing to commit. */
export async function commitAll(path: string, message: string, author: { name: string; email: string }): Promise<boolean> {
  requireOwnCheckout(path)
  // Agents usually commit their own work: one `status` is all it costs then.
  const exclude = excludeArgs(path)
  if ((await git(path, [...exclude, "status", "--porcelain", "--untracked-files=all"])).trim() === "") return false
  await git(path, [...exclude, "add", "-A"])
  // No auto maintenance after each of flow's commits (a process each; the person's own git commands still
  // run it): a detached gc would also take locks that flow's next git in the repository trips on.
  await check(
    ["git", "-c", `user.name=${author.name}`, "-c", `user.email=${author.email}`, "-c", "maintenance.auto=false", "commit", "-q", "--no-verify", "-m", message],
    {
      cwd: path,
      env: GIT_ENV,
    },
  )
  return true
}

/** The folders of a working tree's git state: its own (index, HEAD, MERGE_HEAD) and the repository's common one (refs). */
export function gitDirs(worktree: string): { gitdir: string; common: string } | undefined {
  const gitdir = worktreeGitDir(worktree)
  if (!gitdir || gitdir === join(worktree, ".git")) return gitdir ? { gitdir, common: gitdir } : undefined
  try {
    return { gitdir, common: resolve(gitdir, readFileSync(join(gitdir, "commondir"), "utf8").trim()) }
  } catch {
    return undefined
  }
}

/** A branch's commit from its loose ref file (no git process); undefined when it is packed or unreadable. */
export function looseRef(common: string, ref: string): string | undefined {
  try {
    const sha = readFileSync(join(common, ref), "utf8").trim()
    return /^[0-9a-f]{40,64}$/.test(sha) ? sha : undefined
  } catch {
    return undefined
  }
}

/**
 * The commits of the branches `names` (`refs/heads/<name>`), read from their loose ref files when every one
 * is loose (a branch just committed to or moved is), else from one `git rev-parse`: on the path of every
 * landing, a file read instead of a process.
 */
export async function branchHeads(repo: string, ...names: string[]): Promise<(string | undefined)[]> {
  const common = gitDirs(repo)?.common
  const loose = common ? names.map((n) => looseRef(common, `refs/heads/${n}`)) : []
  return loose.length && loose.every(Boolean) ? loose : revParse(repo, ...names)
}

/** The commits `refs` name (one git call), each undefined when it does not exist. */
export async function revParse(repo: string, ...refs: string[]): Promise<(string | undefined)[]> {
  const r = await run(["git", "rev-parse", ...refs.map((ref) => `${ref}^{commit}`)], { cwd: repo, env: GIT_ENV })
  const out = r.stdout.split("\n")
  // On an unknown ref git prints it back as given (not a hash) and exits 128.
  return refs.map((_, i) => (/^[0-9a-f]{40,64}$/.test(out[i] ?? "") ? out[i] : undefined))
}

/** The local branches holding commits that `into` (a full ref: refs/heads/main) does not have (one git call for a whole repository). */
export async function unmergedBranches(repo: string, into: string): Promise<Set<string>> {
  const out = await git(repo, ["for-each-ref", `--no-merged=${into}`, "--format=%(refname:short)", "refs/heads/"])
  return new Set(out.split("\n").filter(Boolean))
}

// The merge queue's plumbing: merges are made as commits without touching any checkout, and the target
// moves only by a compare-and-swap of its ref, so nothing but a verified commit ever lands on it.

/** The tree of a commit. */
export async function treeOf(repo: string, commit: string): Promise<string> {
  return (await git(repo, ["rev-parse", `${commit}^{tree}`])).trim()
}

/** True when every commit of `rev` is already in `into` (a merge would add nothing). */
export async function isAncestor(repo: string, rev: string, into: string): Promise<boolean> {
  const r = await run(["git", "merge-base", "--is-ancestor", rev, into], { cwd: repo, env: GIT_ENV })
  if (r.code === 0 || r.code === 1) return r.code === 0
  throw new FlowError(`'git merge-base --is-ancestor ${rev} ${into}' failed in ${repo}: ${r.stderr.trim()}`)
}

/**
 * The merge on `tip`'s first-parent line whose subject is `subject` (flow's merge of a task's branch), if any; with
 * `batches`, in a batch's second-parent chain too (docs/RUN.md, "Batches": a batch's tasks' merges are there).
 */
export async function mergeOnFirstParents(repo: string, tip: string, subject: string, batches = false): Promise<string | undefined> {
  const out = await git(repo, ["log", ...(batches ? [] : ["--first-parent"]), "--merges", "--max-count=10000", "--format=%H %s", tip])
  return out
    .split("\n")
    .find((l) => l.slice(l.indexOf(" ") + 1) === subject)
    ?.split(" ")[0]
}

/** `dropped`: paths of flow's own files (keepOut) the branch changed, left as they are in `base` */
export type MergeCommit = { ok: true; commit: string; tree: string; dropped: string[] } | { ok: false; conflicts: string[]; reason: string }

/**
 * A merge commit of `branch` onto the commit `base` (first parent), made with `git merge-tree` in the object
 * store alone: no checkout, no index, so any number can be made at once while others work. Changes the
 * branch made under `keepOut` (flow's own tasks.yaml, flow.yaml, .flow/) are left out: flow's state is never
 * part of anyone's merge (docs/RUN.md, "Landing").
 */
export async function makeMergeCommit(
  repo: string,
  base: string,
  branch: string,
  message: string,
  author: { name: string; email: string },
  keepOut: string[] = [],
): Promise<MergeCommit> {
  // A commit as the queue gives it (journaled) needs no lookup.
  const [head] = /^[0-9a-f]{40,64}$/.test(branch) ? [branch] : await revParse(repo, branch)
  if (!head) return { ok: false, conflicts: [], reason: `branch '${branch}' does not exist` }
  const r = await run(["git", "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head], { cwd: repo, env: GIT_ENV })
  // Exit 1 with no conflict listed is git refusing the merge (a commit this clone lacks): an error, not a conflict.
  const conflicts = r.code === 1 ? r.stdout.split("\n").slice(1).filter(Boolean) : []
  if (conflicts.length > 0) {
    const own = conflicts.filter((f) => keepOut.some((k) => f === k || f.startsWith(`${k}/`)))
    if (own.length === 0 || own.length < conflicts.length) return { ok: false, conflicts, reason: `merge conflict in ${conflicts.join(", ")}` }
    // Only flow's own files conflict: they are left out anyway, so the merge is the target's version of them.
  } else if (r.code !== 0) return { ok: false, conflicts: [], reason: (r.stderr || r.stdout).trim().split("\n").slice(0, 6).join("\n") }
  const tree = r.stdout.split("\n")[0].trim()
  const env = { ...GIT_ENV, GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email, GIT_COMMITTER_NAME: author.name, GIT_COMMITTER_EMAIL: author.email }
  const commitOf = async (t: string) => (await check(["git", "commit-tree", t, "-p", base, "-p", head, "-m", message], { cwd: repo, env })).trim()
  if (!keepOut.length) return { ok: true, commit: await commitOf(tree), tree, dropped: [] }
  // The commit is made while git says whether flow's files changed (they almost never do): on the path of
  // every landing, the two need not wait for each other. A commit made for nothing is an unreachable object.
  const [changed, commit] = await Promise.all([git(repo, ["diff", "--name-only", "--no-renames", base, tree, "--", ...keepOut]), commitOf(tree)])
  const dropped = changed.split("\n").filter(Boolean)
  if (dropped.length === 0) return { ok: true, commit, tree, dropped }
  const kept = await treeWithPathsOf(repo, tree, base, dropped)
  return { ok: true, commit: await commitOf(kept), tree: kept, dropped }
}

/**
 * A batch's merge (docs/RUN.md, "Batches"): `tip`'s tree (the last of a chain of merges built on `base`) as one
 * commit on `base` (first parent) whose second parent is `tip`, so that the target's first-parent history holds
 * only the checked batch, and every task's own merge once, in its second-parent chain.
 */
export async function makeBatchCommit(repo: string, base: string, tip: string, message: string, author: { name: string; email: string }): Promise<string> {
  const env = { ...GIT_ENV, GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email, GIT_COMMITTER_NAME: author.name, GIT_COMMITTER_EMAIL: author.email }
  return (await check(["git", "commit-tree", `${tip}^{tree}`, "-p", base, "-p", tip, "-m", message], { cwd: repo, env })).trim()
}

/** `tree` with `paths` as they are in the commit `from` (gone where `from` lacks them), through a scratch index. */
async function treeWithPathsOf(repo: string, tree: string, from: string, paths: string[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "flow-index-"))
  const env = { ...GIT_ENV, GIT_INDEX_FILE: join(dir, "index") }
  try {
    await check(["git", "read-tree", tree], { cwd: repo, env })
    const kept = new Map<string, string>()
    for (const entry of (await check(["git", "ls-tree", "-r", "-z", from, "--", ...paths], { cwd: repo, env })).split("\0").filter(Boolean))
      kept.set(entry.slice(entry.indexOf("\t") + 1), entry)
    const info = paths.map((p) => kept.get(p) ?? `0 ${"0".repeat(40)}\t${p}`).join("\0")
    await check(["git", "update-index", "-z", "--index-info"], { cwd: repo, env, stdin: `${info}\0` })
    return (await check(["git", "write-tree"], { cwd: repo, env })).trim()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The commits of `rev` not in `base`, oldest first, as "<short> <subject>" lines. */
export async function commitsBetween(repo: string, base: string, rev: string, max = 20): Promise<string[]> {
  const out = await git(repo, ["log", "--first-parent", "--reverse", `--max-count=${max}`, "--format=%h %s", `${base}..${rev}`])
  return out.split("\n").filter(Boolean)
}

/** A detached worktree at `commit` (the check's scratch copy of a merge). */
export async function addScratchWorktree(repo: string, path: string, commit: string): Promise<void> {
  const r = await run(["git", "worktree", "add", "--detach", "--", path, commit], { cwd: repo, env: GIT_ENV })
  if (r.code === 0) return
  await git(repo, ["worktree", "prune"])
  await git(repo, ["worktree", "add", "--force", "--detach", "--", path, commit])
}

/** Unlocks a worktree registration (a killed `git worktree add` leaves it locked "initializing"). */
export async function unlockWorktree(repo: string, path: string): Promise<void> {
  await run(["git", "worktree", "unlock", "--", path], { cwd: repo, env: GIT_ENV })
}

/** Forgets worktrees whose folders are gone. */
export async function pruneWorktrees(repo: string): Promise<void> {
  await git(repo, ["worktree", "prune"])
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
