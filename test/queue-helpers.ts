// What every merge queue test checks after its run, in files and in a fleet (docs/RUN.md, "Merge queue"): every
// commit of the target's first-parent history since the start passed the check, and every task is on it exactly
// once. The checks these tests configure are a verdict on the tree (what the history is checked with) plus, when
// FLOW_TASK_ID is set (a run's check), the timing and gates the test needs.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { git } from "./helpers"

/** The commits of `ref`'s first-parent history after `since` (the start), newest first. */
export async function firstParents(repo: string, ref: string, since: string): Promise<string[]> {
  return (await git(repo, ["rev-list", "--first-parent", `${since}..${ref}`])).trim().split("\n").filter(Boolean)
}

/** The commits of `ref`'s first-parent history since `since` on which `check` (a shell script, run in the commit's tree without FLOW_TASK_ID) fails. */
export async function uncheckedCommits(repo: string, ref: string, since: string, check: string): Promise<string[]> {
  const failed: string[] = []
  for (const commit of await firstParents(repo, ref, since)) {
    const dir = mkdtempSync(join(tmpdir(), "flow-history-"))
    try {
      const archive = Bun.spawnSync(["git", "archive", commit], { cwd: repo })
      Bun.spawnSync(["tar", "-x", "-C", dir], { stdin: archive.stdout })
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" }
      if (Bun.spawnSync(["sh", "-c", check], { cwd: dir, env }).exitCode !== 0) failed.push(commit)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return failed
}

/** How many times each task's merge is on `ref`'s first-parent history (flow's merge subjects end with ": <task id>"). */
export async function mergesPerTask(repo: string, ref: string): Promise<Record<string, number>> {
  const subjects = (await git(repo, ["log", "--first-parent", "--merges", "--format=%s", ref])).trim().split("\n").filter(Boolean)
  const counts: Record<string, number> = {}
  for (const s of subjects) {
    const id = /^Merge flow\/\S+: (\S+)$/.exec(s)?.[1]
    if (id) counts[id] = (counts[id] ?? 0) + 1
  }
  return counts
}

/**
 * The check of "a slow failing check ahead of a fast passing one" (issue 33): a tree holding b.txt fails. In a
 * run, b's own check takes 2 s to fail, any other fails or passes in 0.3 s, and each check says it started
 * (`$GATE/checking-<task>`), so that the tasks' scripts can line up behind it.
 */
export const SLOW_FAILURE_CHECK = `if [ -n "$FLOW_TASK_ID" ]; then touch "$GATE/checking-$FLOW_TASK_ID"; fi
if [ -f b.txt ]; then
  # b's check ends only once c's (built on top of b) has started, and a little after: under any load c is checked
  # on top of b, and its failure (b.txt) comes first. At most a minute: a queue that never builds c on b fails b anyway.
  if [ "$FLOW_TASK_ID" = b ]; then
    for i in $(seq 1200); do if [ -e "$GATE/checking-c" ]; then break; fi; sleep 0.05; done; sleep 0.5
  else sleep 0.3; fi
  echo "error: b.txt breaks the build"; exit 1
fi
if [ -n "$FLOW_TASK_ID" ]; then sleep 0.3; fi`

/**
 * Its tasks: a, then b once a is being checked, then c once b is: c is built and checked on top of b, and its
 * check fails (b.txt) before b's does. `sh`: a fenced shell block.
 */
export function slowFailureTasks(sh: (lines: string) => string): Record<string, unknown>[] {
  const after = (id: string) => `until [ -e "$GATE/checking-${id}" ]; do sleep 0.05; done`
  return [
    { id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") },
    { id: "b", title: "B", status: "todo", instructions: sh(`${after("a")}\necho b > b.txt`) },
    { id: "c", title: "C", status: "todo", instructions: sh(`${after("b")}\necho c > c.txt`) },
  ]
}
