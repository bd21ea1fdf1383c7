// What of git's own files a worktree's commits write, found from the files themselves (no git process on the
// path of every agent start): the worktree's entry under the repository's worktrees (but where git finds the
// repository, and the entry's own config), the object store, its branch's ref and reflog. Everything else of
// the repository (the person's checkout, its config, hooks and every other ref) stays read-only in the sandbox.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"

/** `writable`: bound read-write. `pinned`: bound read-only over their writable folder. `readable`: the repository, to read. */
export type GitFiles = { writable: string[]; pinned: string[]; readable: string[] }

/** The git files a commit in `worktree` writes; a worktree that is not a linked one (its .git a folder) has them inside it. */
export function gitFiles(worktree: string): GitFiles {
  const dotGit = join(worktree, ".git")
  if (!existsSync(dotGit) || statSync(dotGit).isDirectory()) return { writable: [], pinned: [], readable: [] }
  const gitdir = resolve(worktree, /^gitdir: (.*)$/m.exec(readFileSync(dotGit, "utf8"))?.[1]?.trim() ?? ".git")
  const common = resolve(gitdir, readText(join(gitdir, "commondir"))?.trim() ?? ".")
  const writable = [gitdir, join(common, "objects")]
  // Where git finds the repository from the worktree: rewritten, they would point flow's own git commands in
  // the worktree (run outside the sandbox) at a repository, and so hooks and config, the agent made.
  // config.worktree: with extensions.worktreeConfig on (the person may turn it on later: the repository's
  // config is read-only here), git reads it from the entry; written, its hooks or fsmonitor would run in flow's
  // own git there. Made empty when missing, so a bind can pin it.
  const perWorktree = join(gitdir, "config.worktree")
  if (existsSync(gitdir) && !existsSync(perWorktree)) writeFileSync(perWorktree, "")
  const pinned = [dotGit, join(gitdir, "commondir"), join(gitdir, "gitdir"), perWorktree].filter((f) => existsSync(f))
  const ref = /^ref: (refs\/heads\/.+)$/m.exec(readText(join(gitdir, "HEAD")) ?? "")?.[1]?.trim()
  if (ref) {
    // git writes a ref as `<ref>.lock` beside it and renames that over it: its folder must take writes. Every
    // other entry of that folder is bound read-only over itself, so a rename onto it fails (EBUSY).
    const file = join(common, ref)
    const folder = dirname(file)
    writable.push(folder)
    for (const name of readdirSync(folder)) if (join(folder, name) !== file) pinned.push(join(folder, name))
    // The reflog takes appends in place.
    const log = join(common, "logs", ref)
    if (existsSync(log)) writable.push(log)
  }
  return { writable, pinned, readable: [dirname(common), common] }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}
