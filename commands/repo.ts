import { statSync } from "node:fs"
import { relative } from "node:path"
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import { listWorktrees, removeWorktree, repoRoot } from "../lib/run/git"
import { findProject } from "../lib/cli/project"
import { insideProject } from "../lib/run/workspace"

export const meta = {
  usage: "flow repo worktree list [<repo>] | flow repo worktree remove <repo> <branch> [--force]",
  description: `The git worktrees of a repository: <repo> is a folder relative to the project (as in a task's
'repo' field), or '.' for the repository holding the project. 'remove' removes the worktree that has
<branch> checked out (the branch itself is kept); one with uncommitted changes is refused unless --force,
which discards them.`,
  options: {
    force: { type: "boolean", help: "remove even with uncommitted changes (they are lost)" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [group, action, repoArg, branch, extra] = positionals
  if (group !== "worktree") throw usage(group ? `unknown subcommand 'repo ${group}'` : "missing subcommand", `usage: ${meta.usage}`)
  const project = findProject(ctx)
  const repoDir = insideProject(project.dir, repoArg ?? ".", "<repo>")
  // git cannot even start in a folder that is not there: say so rather than let the spawn fail.
  if (!statSync(repoDir, { throwIfNoEntry: false })?.isDirectory()) {
    throw usage(`the folder ${repoArg ?? "."} (${repoDir}) does not exist`, "<repo> is a folder relative to the project, as in a task's 'repo' field, or '.'")
  }
  const repo = await repoRoot(repoDir)
  if (!repo) throw new FlowError(`${repoArg ?? "."} (${repoDir}) is not in a git repository`, undefined, "name a folder that holds a git repository")
  const worktrees = (await listWorktrees(repo)).slice(1) // the first is the repository's own checkout
  if (action === "list") {
    if (branch !== undefined) throw usage(`unexpected argument '${branch}'`, `usage: ${meta.usage}`)
    if (worktrees.length === 0) return ctx.stdout("No worktrees.\n")
    for (const w of worktrees) ctx.stdout(`${w.branch ?? "(detached)"}  ${relative(ctx.cwd, w.path) || "."}\n`)
    return
  }
  if (action !== "remove") throw usage(action ? `unknown subcommand 'repo worktree ${action}'` : "missing 'list' or 'remove'", `usage: ${meta.usage}`)
  if (!repoArg || !branch) throw usage(`missing <${repoArg ? "branch" : "repo"}>`, `usage: ${meta.usage}`)
  if (extra !== undefined) throw usage(`unexpected argument '${extra}'`, `usage: ${meta.usage}`)
  const target = worktrees.find((w) => w.branch === branch)
  if (!target) {
    const known = worktrees.map((w) => w.branch).filter(Boolean)
    throw new FlowError(
      `no worktree of ${repoArg} has branch '${branch}' checked out`,
      undefined,
      known.length ? `worktrees: ${known.join(", ")}` : "this repository has no worktrees besides its own checkout",
    )
  }
  await removeWorktree(repo, target.path, Boolean(values.force))
  ctx.stdout(`Removed the worktree of ${branch} (${relative(ctx.cwd, target.path) || target.path}); the branch is kept.\n`)
}
