// Whether a task's `worktree:` value may be a branch name, checked in-process (no git subprocess per task) by
// `flow validate` and by every command that reads the file. The rules, written down in docs/STATUS-RULES.md:
// git's own (`git check-ref-format --branch`), flow's narrower character set (the name also becomes a folder
// name and appears in commands people copy), and no name that shadows another ref when git resolves it.

/** Names that git resolves before refs/heads/<name>, or that are refs of their own: never a branch name. */
const RESERVED = new Set(["HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_HEAD", "AUTO_MERGE", "@"])
/**
 * First components that make a branch shadow a fully qualified ref (`refs/heads/x` would become
 * refs/heads/refs/heads/x) or a remote-tracking branch: `git rev-parse origin/main` prefers a local branch
 * named `origin/main` over the remote's. The remote names are the conventional ones; others cannot be known
 * without the repository.
 */
const SHADOWING = new Set(["refs", "heads", "remotes", "tags", "origin", "upstream"])

/** Why `name` is not an acceptable branch name, or undefined when it is. */
export function branchNameProblem(name: string): string | undefined {
  if (name === "") return "it is empty"
  if (name.length > 200) return "it is longer than 200 characters"
  if (RESERVED.has(name)) return `'${name}' is a name git reserves`
  if (name.startsWith("-")) return "it starts with '-' (git would read it as an option)"
  if (!/^[A-Za-z0-9._/-]+$/.test(name)) return "it may only hold letters, digits, '-', '_', '.' and '/'"
  if (!/^[A-Za-z0-9]/.test(name)) return "it must start with a letter or digit"
  if (name.endsWith("/") || name.includes("//")) return "it has an empty part between slashes"
  if (name.endsWith(".")) return "it ends with '.'"
  if (name.includes("..")) return "it contains '..'"
  for (const part of name.split("/")) {
    if (part.startsWith(".")) return `its part '${part}' starts with '.'`
    if (part.endsWith(".lock")) return `its part '${part}' ends with '.lock'`
  }
  const first = name.split("/")[0]
  if (name.includes("/") && SHADOWING.has(first)) {
    return first === "origin" || first === "upstream"
      ? `it would shadow the remote-tracking branch '${name}'`
      : `it would shadow a fully qualified ref ('${first}/...' is how git names refs, not branches)`
  }
  return undefined
}
