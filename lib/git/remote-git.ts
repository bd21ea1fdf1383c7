// The git of a shared project's runs across machines (docs/FLEET.md, "Git across machines"): every machine
// works in its own clone, and what the machines share is the remote (flow.yaml `remote:`, default origin).
// A task's worktree starts from the remote (its target, or the task's branch an earlier attempt pushed), its
// branch is pushed after every commit flow makes, never over a newer attempt's (a compare-and-swap on the
// remote's ref), and merges reach the target only by a compare-and-swap push from the head of the merge queue
// (lib/landing/queue-target.ts).
import { existsSync } from "node:fs"
import { FlowError } from "../cli/errors"
import { type RunResult, run } from "../cli/proc"
import { branchExists, commitAll, ensureWorktree, GIT_ENV, isAncestor, revParse } from "./git"
import { lastLines } from "./publish"

/** Where the remote's `branch` is kept in a clone after a fetch or a push. */
export const tracking = (remote: string, branch: string) => `refs/remotes/${remote}/${branch}`

/** The URL of `remote` in `repo` (the merge queue's key: two clones of one remote share it), or a FlowError saying how to add it. */
export async function remoteUrl(repo: string, remote: string): Promise<string> {
  const r = await run(["git", "remote", "get-url", "--", remote], { cwd: repo, env: GIT_ENV })
  if (r.code === 0 && r.stdout.trim()) return r.stdout.trim()
  throw missingRemote(repo, remote)
}

/** The error of a shared project's repository without its shared remote. */
export function missingRemote(repo: string, remote: string): FlowError {
  return new FlowError(
    `${repo} has no git remote '${remote}': a shared project's machines share their work through it`,
    undefined,
    `add it with 'git -C ${repo} remote add ${remote} <url>' (every machine's clone of the repository needs it), or name another in flow.yaml's remote:`,
  )
}

/** git's words for a ref another git of this clone was writing at that moment: worth another try, not an error. */
const REF_RACE = /cannot lock ref|Unable to create '[^']+\.lock': File exists/

/**
 * Runs a git command that writes remote-tracking refs. Two of this clone's gits writing one ref at once (a
 * task's worktree fetching the target while a landing records its push there, or two runs of one clone) make
 * the later one fail ("cannot lock ref ...: is at X but expected Y"): it is run again, up to 5 times.
 */
async function refWrite(argv: string[], repo: string): Promise<RunResult> {
  for (let attempt = 1; ; attempt++) {
    const r = await run(argv, { cwd: repo, env: GIT_ENV })
    if (r.code === 0 || attempt === 5 || !REF_RACE.test(r.stderr)) return r
    await Bun.sleep(20 * attempt + Math.random() * 50)
  }
}

/**
 * Fetches the remote's `branch` into its tracking ref: its commit, or undefined when the remote has no such
 * branch (then the tracking ref, left by an earlier fetch, goes: it must not pass for the remote's). A fetch
 * that fails otherwise (the network, a remote refusing) is a FlowError.
 */
export async function fetchBranch(repo: string, remote: string, branch: string): Promise<string | undefined> {
  const ref = tracking(remote, branch)
  const r = await refWrite(["git", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", remote, `+refs/heads/${branch}:${ref}`], repo)
  if (r.code === 0) return (await revParse(repo, ref))[0]
  if (/couldn't find remote ref/i.test(r.stderr)) {
    await refWrite(["git", "update-ref", "-d", ref], repo)
    return undefined
  }
  const url = await remoteUrl(repo, remote) // a missing remote is said as such
  throw new FlowError(`'git fetch ${remote} ${branch}' failed in ${repo} (${url}): ${lastLines(r.stderr || r.stdout)}`)
}

/**
 * The commit of the task's branch on the remote when a newer attempt (on another machine) pushed work this
 * clone's worktree lacks: the remote's branch moved since this clone last pushed or fetched it, to a commit
 * the worktree's head does not hold. Undefined when the worktree is the newest: the remote has nothing it
 * lacks, or has not moved since this clone's own push (an agent's rebase, not pushed yet, is the newer one).
 */
export async function newerOnRemote(ws: { repo: string; path: string; branch: string }, remote: string): Promise<string | undefined> {
  const [seen] = await revParse(ws.repo, tracking(remote, ws.branch))
  const pushed = await fetchBranch(ws.repo, remote, ws.branch)
  const [head] = await revParse(ws.path, "HEAD")
  if (!pushed || !head || pushed === head || pushed === seen || (await isAncestor(ws.repo, pushed, head))) return undefined
  return pushed
}

/** Where the work of a worktree that a newer attempt superseded is kept (never lost): `git log <ref>` shows it. */
/** Why an attempt's work was set aside: a newer attempt on another machine, or a person's `flow reset`. */
export type AsideReason = "superseded" | "reset"

export const setAsideRef = (branch: string, head: string, why: AsideReason = "superseded") => `refs/flow/${why}/${branch}/${head.slice(0, 12)}`

/**
 * Keeps the task's branch (its worktree's head, with what it had not committed as one more commit, when it has
 * a worktree) under setAsideRef; the caller then removes the worktree and this clone's branch (dropBranch), so
 * the task's next worktree starts afresh: from the remote's branch, or from the target. Returns the ref.
 */
export async function keepAside(
  ws: { repo: string; path: string; branch: string },
  author: { name: string; email: string },
  why: AsideReason = "superseded",
): Promise<string> {
  const worktree = existsSync(ws.path)
  if (worktree) await commitAll(ws.path, `${ws.branch}: uncommitted work of ${why === "reset" ? "an attempt a person reset" : "a superseded attempt"}`, author)
  const [head] = worktree ? await revParse(ws.path, "HEAD") : await revParse(ws.repo, `refs/heads/${ws.branch}`)
  if (!head) throw new FlowError(`${worktree ? `the worktree ${ws.path}` : `the branch ${ws.branch}`} has no commit to keep`)
  const ref = setAsideRef(ws.branch, head, why)
  const r = await run(["git", "update-ref", ref, head], { cwd: ws.repo, env: GIT_ENV })
  if (r.code !== 0) throw new FlowError(`could not keep ${ws.path}'s work as ${ref}: ${lastLines(r.stderr || r.stdout)}`)
  return ref
}

/**
 * A task's worktree on a shared project. A worktree of this machine's earlier attempt is kept as it is (the
 * caller keeps it aside and removes it first when newerOnRemote says a newer attempt superseded it); else
 * the branch starts from the remote: the task's branch when an earlier attempt (on any machine) pushed it and
 * it holds all of this clone's branch ("taken-over": the work so far, not the agent's session), else the
 * remote target as it is now (fetched: a dependent starts from what its dependencies merged there).
 */
export async function remoteWorktree(
  ws: { repo: string; path: string; branch: string; target: string },
  remote: string,
  serial: <T>(fn: () => Promise<T>) => Promise<T>,
): Promise<"reused" | "created" | "taken-over"> {
  const { repo, path, branch, target } = ws
  if (existsSync(path)) return ensureWorktree(repo, path, branch, target, serial)
  // Fetches take their turn with each other and with the worktrees' changes: two fetches of one ref fail on its
  // lock when the remote moved between them, and a fetch checks what it got against every worktree's HEAD,
  // which one that 'git worktree add' is making has not got yet ("bad object worktrees/<id>/HEAD").
  const base = await serial(() => fetchBranch(repo, remote, target))
  if (!base)
    throw new FlowError(`the remote '${remote}' of ${repo} has no branch '${target}'`, undefined, `push it first: 'git -C ${repo} push ${remote} ${target}'`)
  const pushed = await serial(() => fetchBranch(repo, remote, branch))
  const [local] = (await branchExists(repo, branch)) ? await revParse(repo, `refs/heads/${branch}`) : [undefined]
  if (pushed && local !== pushed && (!local || (await isAncestor(repo, local, pushed)))) {
    // This clone's branch (no worktree holds it) is behind what an attempt pushed: it follows, a plain ref move.
    if (local) await run(["git", "update-ref", `refs/heads/${branch}`, pushed, local], { cwd: repo, env: GIT_ENV })
    const how = await ensureWorktree(repo, path, branch, tracking(remote, branch), serial)
    return how === "created" ? "taken-over" : how
  }
  return ensureWorktree(repo, path, branch, tracking(remote, target), serial)
}

export type BranchPush = { ok: true } | { ok: false; detail: string }

/**
 * Pushes the task's branch to the remote, as a compare-and-swap: the remote's branch must still be what this
 * clone last pushed or started from (its tracking ref; absent: the remote must not have the branch), so an
 * attempt taken over never overwrites the newer attempt's work. A rewritten branch (an agent's rebase) is
 * pushed over this clone's own earlier push.
 */
export async function pushTaskBranch(repo: string, remote: string, branch: string): Promise<BranchPush> {
  const ref = tracking(remote, branch)
  const [head, lease] = await revParse(repo, `refs/heads/${branch}`, ref)
  if (!head) return { ok: false, detail: `branch '${branch}' not found in ${repo}` }
  if (head === lease) return { ok: true }
  const r = await run(
    ["git", "push", "--quiet", "--no-verify", `--force-with-lease=refs/heads/${branch}:${lease ?? ""}`, "--", remote, `${head}:refs/heads/${branch}`],
    { cwd: repo, env: GIT_ENV },
  )
  if (r.code !== 0) return { ok: false, detail: `push of ${branch} to ${remote} refused or failed: ${lastLines(r.stderr || r.stdout)}` }
  // git updates the tracking ref itself only where the remote's fetch refspec covers it.
  await refWrite(["git", "update-ref", ref, head], repo)
  return { ok: true }
}

export type TargetPush = { ok: true } | { ok: false; rejected: boolean; detail: string }

/**
 * Pushes `commit` as the remote's `target` by compare-and-swap: git refuses it (rejected) unless the remote's
 * target is still `expected` (`--force-with-lease=refs/heads/<target>:<expected>`), so a push someone made
 * meanwhile is never overwritten, and a stale machine's push lands nothing.
 */
export async function pushTarget(repo: string, remote: string, commit: string, target: string, expected: string): Promise<TargetPush> {
  const r = await run(
    [
      "git",
      "push",
      "--quiet",
      "--no-verify",
      "--porcelain",
      `--force-with-lease=refs/heads/${target}:${expected}`,
      "--",
      remote,
      `${commit}:refs/heads/${target}`,
    ],
    { cwd: repo, env: GIT_ENV },
  )
  if (r.code === 0) {
    await refWrite(["git", "update-ref", tracking(remote, target), commit], repo)
    return { ok: true }
  }
  const rejected = /\[rejected\]|\[remote rejected\].*(fetch first|non-fast-forward|stale)|non-fast-forward|fetch first|stale info/.test(r.stdout + r.stderr)
  return { ok: false, rejected, detail: `push of ${target} to ${remote} failed: ${lastLines(r.stderr || r.stdout)}` }
}

/** Pushes commits to refs of the remote (a queue's merges, for every machine to fetch), replacing what they held. */
export async function pushRefs(repo: string, remote: string, refs: readonly { commit: string; ref: string }[]): Promise<void> {
  if (refs.length === 0) return
  const r = await run(["git", "push", "--quiet", "--no-verify", "--", remote, ...refs.map((x) => `+${x.commit}:${x.ref}`)], { cwd: repo, env: GIT_ENV })
  if (r.code !== 0)
    throw new FlowError(`pushing ${refs.length} merge${refs.length === 1 ? "" : "s"} to ${remote} failed in ${repo}: ${lastLines(r.stderr || r.stdout)}`)
}

/** Deletes refs of the remote; one that is gone already is no failure, nor is a remote that cannot be reached (what is left is swept later). */
export async function deleteRemoteRefs(repo: string, remote: string, refs: readonly string[]): Promise<void> {
  if (refs.length === 0) return
  await run(["git", "push", "--quiet", "--no-verify", "--", remote, ...refs.map((ref) => `:${ref}`)], { cwd: repo, env: GIT_ENV })
}

/** The remote's refs under `prefix` (one `git ls-remote`). */
export async function remoteRefs(repo: string, remote: string, prefix: string): Promise<string[]> {
  const r = await run(["git", "ls-remote", "--", remote, `${prefix}*`], { cwd: repo, env: GIT_ENV })
  if (r.code !== 0) return []
  return r.stdout
    .split("\n")
    .map((l) => l.split("\t")[1])
    .filter((ref): ref is string => Boolean(ref))
}

/** Whether `commit` is in this clone's object store. */
export async function hasCommit(repo: string, commit: string): Promise<boolean> {
  return (await missingCommits(repo, [commit])).size === 0
}

/** Of `commits`, those this clone's object store lacks (one `git cat-file --batch-check`). */
export async function missingCommits(repo: string, commits: readonly string[]): Promise<Set<string>> {
  if (commits.length === 0) return new Set()
  const r = await run(["git", "cat-file", "--batch-check=%(objectname) %(objecttype)"], { cwd: repo, env: GIT_ENV, stdin: `${commits.join("\n")}\n` })
  const present = new Set(
    r.stdout
      .split("\n")
      .filter((l) => l.endsWith(" commit"))
      .map((l) => l.split(" ")[0]),
  )
  return new Set(commits.filter((c) => !present.has(c)))
}

/** Fetches refs of the remote into the object store alone (no ref written here), for the commits they hold. */
export async function fetchRefs(repo: string, remote: string, refs: readonly string[]): Promise<void> {
  if (refs.length === 0) return
  const r = await run(["git", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", remote, ...refs], { cwd: repo, env: GIT_ENV })
  if (r.code !== 0) throw new FlowError(`'git fetch ${remote} ${refs.join(" ")}' failed in ${repo}: ${lastLines(r.stderr || r.stdout)}`)
}

/** What the first turn of an attempt that took over another machine's pushed branch is told (its session stayed there). */
export function takenOverNote(branch: string): string {
  return (
    `Note: ${branch} already holds work from an earlier attempt at this task (on another machine, whose agent session is lost). ` +
    "Look at what is there first ('git log', 'git diff' against where the branch started) and continue from it rather than starting over."
  )
}
