// After a task's local merge: push the target branch, and open a pull request of the task's branch
// through GitHub's `gh`, when flow.yaml asks for them. Both talk to the network, so they run off the
// critical path (dependents start from the local merge) and a failure is reported, never fatal: the
// merge is real and stays.
import { type RunResult, run } from "../cli/proc"

export type PublishResult = { ok: true; detail: string } | { ok: false; detail: string }

const GIT_ENV = { GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" }
// gh must never stop to ask: no prompts, no pager, no update check on stderr.
const GH_ENV = { GH_PROMPT_DISABLED: "1", GH_NO_UPDATE_NOTIFIER: "1", GH_PAGER: "cat", NO_COLOR: "1" }

/** Pushes `branch` to the remote; a remote that moved on is refused by git (never forced). */
export async function pushBranch(repo: string, remote: string, branch: string): Promise<PublishResult> {
  const r = await run(["git", "push", "--quiet", "--", remote, `refs/heads/${branch}:refs/heads/${branch}`], { cwd: repo, env: GIT_ENV })
  if (r.code === 0) return { ok: true, detail: `pushed ${branch} to ${remote}` }
  return { ok: false, detail: `push of ${branch} to ${remote} failed: ${lastLines(r.stderr || r.stdout)}` }
}

export type PullRequest = { repo: string; remote: string; base: string; head: string; title: string; body: string; draft: boolean }

/** Pushes the head branch, then `gh pr create`; the result's detail is the pull request's URL. */
export async function openPullRequest(pr: PullRequest): Promise<PublishResult> {
  const pushed = await pushBranch(pr.repo, pr.remote, pr.head)
  if (!pushed.ok) return pushed
  const argv = ["gh", "pr", "create", "--base", pr.base, "--head", pr.head, "--title", pr.title, "--body", pr.body, ...(pr.draft ? ["--draft"] : [])]
  let r: RunResult
  try {
    r = await run(argv, { cwd: pr.repo, env: GH_ENV })
  } catch {
    return { ok: false, detail: "pull request not opened: 'gh' (GitHub CLI) was not found on PATH; install it and run 'gh auth login'" }
  }
  if (r.code !== 0) return { ok: false, detail: `pull request of ${pr.head} into ${pr.base} not opened: ${lastLines(r.stderr || r.stdout)}` }
  const url = r.stdout
    .trim()
    .split("\n")
    .findLast((line) => /^https?:\/\//.test(line.trim()))
    ?.trim()
  return { ok: true, detail: url ?? `pull request of ${pr.head} into ${pr.base} opened` }
}

/** The last lines of a tool's output, with any credentials in URLs masked: a token must never reach a log. */
export function lastLines(text: string, n = 3): string {
  return redact(text.trim().split("\n").slice(-n).join(" / ")) || "no output"
}

export function redact(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, "$1***@")
}
