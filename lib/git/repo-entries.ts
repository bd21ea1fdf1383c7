// flow.yaml's per-repository settings (verify, setup, teardown, copy, ports): one entry for every repository,
// or a list of entries each naming its repository with `repo`, the entry without `repo` covering the rest.
import { existsSync, realpathSync } from "node:fs"
import { repoRoot } from "./git"
import { insideProject } from "./workspace"

/**
 * The entry of each repository (by its top folder): the one whose `repo` is that repository, else the one
 * without `repo`, else none. Looked up once per repository.
 */
export function entryResolver<T extends { repo?: string }>(projectDir: string, entries: readonly T[], field: string): (repo: string) => Promise<T | undefined> {
  const cache = new Map<string, Promise<T | undefined>>()
  const resolveOne = async (repo: string) => {
    const real = realpathSync(repo)
    for (const e of entries) {
      if (e.repo === undefined) continue
      const dir = insideProject(projectDir, e.repo, `flow.yaml: ${field} repo`)
      const root = existsSync(dir) ? await repoRoot(dir) : undefined
      if (root && realpathSync(root) === real) return e
    }
    return entries.find((e) => e.repo === undefined)
  }
  return (repo) => {
    let found = cache.get(repo)
    if (!found) cache.set(repo, (found = resolveOne(repo)))
    return found
  }
}
