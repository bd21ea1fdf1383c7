// What a branch changes, as numbers: the files of `git diff --numstat` from where it forked off its target,
// the evidence a person reads before a task lands (docs/REVIEW.md, "Evidence").
import { check } from "../cli/proc"
import { GIT_ENV } from "./git-env"

/** One file a branch changes: lines added and removed, both null for a binary file (git says "-"). */
export type FileStat = { path: string; insertions: number | null; deletions: number | null }

/** The diff's files and totals. */
export type DiffStats = { files: FileStat[]; insertions: number; deletions: number }

/**
 * What `head` changes against its merge base with `target` (three-dot: the target's own commits since are not
 * the branch's), without the paths in `leaveOut` (flow's own files, which a merge leaves out too). Renames are
 * a deletion and an addition, as the merge sees them.
 */
export async function diffStats(repo: string, target: string, head: string, leaveOut: readonly string[] = []): Promise<DiffStats> {
  const excluded = leaveOut.map((p) => `:(exclude,top)${p}`)
  const out = await check(["git", "diff", "--numstat", "-z", "--no-renames", `${target}...${head}`, "--", ".", ...excluded], { cwd: repo, env: GIT_ENV })
  const files: FileStat[] = []
  // -z: each record is "added<TAB>deleted<TAB>path" ended by NUL, so a path with a tab or newline stays whole.
  for (const record of out.split("\0")) {
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(record)
    if (!m) continue
    files.push({ path: m[3], insertions: m[1] === "-" ? null : Number(m[1]), deletions: m[2] === "-" ? null : Number(m[2]) })
  }
  const sum = (k: "insertions" | "deletions") => files.reduce((n, f) => n + (f[k] ?? 0), 0)
  return { files, insertions: sum("insertions"), deletions: sum("deletions") }
}
