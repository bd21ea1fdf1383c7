// The project's check (flow.yaml `verify`), run on a merge in a scratch worktree before the target moves
// (lib/worktree/command.ts runs it, as it runs the worktrees' setup and teardown).
import type { VerifyConfig } from "../config/config"
import { entryResolver } from "../git/repo-entries"
import { toCheck, type Check } from "../worktree/command"

const DEFAULT_TIMEOUT = "20m"

/** The check of each repository: an entry naming it, else the entry without `repo`, else none. */
export function checkResolver(projectDir: string, entries: VerifyConfig[]): (repo: string) => Promise<Check | undefined> {
  const entryOf = entryResolver(projectDir, entries, "verify")
  return async (repo) => {
    const entry = await entryOf(repo)
    return entry && toCheck(entry, "verify", DEFAULT_TIMEOUT)
  }
}
