// The environment of every git flow starts, apart from lib/git/git.ts: that module loads simple-git (and
// debug, node:child_process, node:events), and a read command that only runs one `git diff` (flow show's
// evidence, lib/git/diff-stats.ts) must not pay for it at start-up (docs/PERFORMANCE.md, "Start-up").

/**
 * Set on every git flow starts, naming flow's pid: a git that outlived a killed flow (a merge half done) is
 * found by it and waited for before the next run touches the repository (lib/run/reaper.ts).
 */
export const GIT_OWNER = "FLOW_GIT_OWNER"
// GIT_OPTIONAL_LOCKS=0: flow's reads of a person's checkout (status, diff) never take index.lock to refresh
// the index, so the person's own git command at that instant does not fail on "index.lock: File exists".
export const GIT_ENV = { GIT_TERMINAL_PROMPT: "0", GIT_PAGER: "cat", LC_ALL: "C", GIT_OPTIONAL_LOCKS: "0", [GIT_OWNER]: String(process.pid) }
