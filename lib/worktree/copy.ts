// flow.yaml `copy`: files of the person's checkout (`.env`, `config/*.local.json`) copied into a task's
// worktree. Nothing is followed outside the repository: a symbolic link is never copied nor gone through,
// on either side (a link in the checkout, or a folder of the worktree that is a link), and the patterns
// themselves hold no `..` (lib/config/config.ts). A file already in the worktree (git's, or the agent's
// edit) is left as it is.
import { constants, copyFileSync, lstatSync, mkdirSync, readdirSync } from "node:fs"
import { join } from "node:path"

/** What a copy into a worktree did. */
export type CopyOutcome = {
  /** paths (relative to the repository) now in the worktree that came from the checkout */
  copied: string[]
  /** paths not copied, each with why: "config/x.json (a symbolic link)" */
  refused: string[]
}

const GLOB = /[*?[\]{}]/

/**
 * The files of `root` that `pattern` names, relative to it, in a stable order; `refused` gets the matches
 * that are symbolic links (or lie under one). `skip` prunes folders (absolute paths: the state folder,
 * whose worktrees are other tasks'); `.git` is never entered.
 */
export function matchFiles(root: string, pattern: string, skip: (dir: string) => boolean, refused: string[]): string[] {
  const clean = pattern.replace(/^(\.\/)+/, "")
  const parts = clean.split("/").filter(Boolean)
  const fixed = parts.findIndex((p) => GLOB.test(p))
  if (fixed < 0) {
    const kind = walkKind(root, parts)
    if (kind === "link") refused.push(`${parts.join("/")} (a symbolic link)`)
    return kind === "file" ? [parts.join("/")] : []
  }
  const prefix = parts.slice(0, fixed)
  if (prefix.length > 0) {
    const kind = walkKind(root, prefix)
    if (kind === "link") refused.push(`${prefix.join("/")} (a symbolic link)`)
    if (kind !== "dir") return []
  }
  const glob = new Bun.Glob(clean)
  const depth = parts.slice(fixed).includes("**") ? Number.POSITIVE_INFINITY : parts.length - fixed
  const out: string[] = []
  const walk = (rel: string, level: number) => {
    let entries: import("node:fs").Dirent[]
    try {
      entries = readdirSync(join(root, rel), { withFileTypes: true })
    } catch {
      return // unreadable: nothing of it is copied
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = rel ? `${rel}/${e.name}` : e.name
      if (e.isSymbolicLink()) {
        if (glob.match(path)) refused.push(`${path} (a symbolic link)`)
      } else if (e.isDirectory()) {
        if (e.name !== ".git" && level + 1 < depth && !skip(join(root, path))) walk(path, level + 1)
      } else if (e.isFile() && glob.match(path)) out.push(path)
    }
  }
  walk(prefix.join("/"), 0)
  return out
}

/** What `parts` (a path under `root`) is, looking at each component without following links. */
function walkKind(root: string, parts: readonly string[]): "file" | "dir" | "link" | "missing" | "other" {
  let path = root
  for (const [i, part] of parts.entries()) {
    path = join(path, part)
    const stat = lstatSync(path, { throwIfNoEntry: false })
    if (!stat) return "missing"
    if (stat.isSymbolicLink()) return "link"
    if (i < parts.length - 1 && !stat.isDirectory()) return "missing"
    if (i === parts.length - 1) return stat.isFile() ? "file" : stat.isDirectory() ? "dir" : "other"
  }
  return "dir"
}

/**
 * Copies each of `paths` (files of `source`, relative) into `worktree` where the worktree has no file there
 * yet; a destination under a symbolic link of the worktree is refused. `before`: what an earlier preparation
 * of this worktree copied (still counted as copied when it is there).
 */
export function copyFiles(source: string, worktree: string, paths: readonly string[], before: readonly string[]): CopyOutcome {
  const copied: string[] = []
  const refused: string[] = []
  for (const rel of paths) {
    if (rel.includes("\n")) {
      refused.push(`${JSON.stringify(rel)} (a line break in its name)`)
      continue
    }
    const parts = rel.split("/")
    const kind = walkKind(worktree, parts)
    if (kind === "link") {
      refused.push(`${rel} (a symbolic link in the worktree)`)
      continue
    }
    if (kind !== "missing") {
      if (before.includes(rel)) copied.push(rel)
      continue
    }
    const parent = parts.slice(0, -1)
    const above = parent.findIndex((_, i) => lstatSync(join(worktree, ...parent.slice(0, i + 1)), { throwIfNoEntry: false })?.isSymbolicLink())
    if (above >= 0) {
      refused.push(`${rel} (${parent.slice(0, above + 1).join("/")} is a symbolic link in the worktree)`)
      continue
    }
    mkdirSync(join(worktree, ...parent), { recursive: true })
    try {
      // EXCL: an agent's file made meanwhile is never overwritten.
      copyFileSync(join(source, rel), join(worktree, rel), constants.COPYFILE_EXCL)
      copied.push(rel)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    }
  }
  return { copied, refused }
}

/** A path as a gitignore pattern that names it alone: anchored, its special characters escaped. */
export function ignorePattern(rel: string): string {
  return `/${rel.replace(/[\\*?[\]!#]/g, "\\$&").replace(/ $/, "\\ ")}`
}
