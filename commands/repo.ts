import { existsSync } from "node:fs"
import { basename, relative, resolve } from "node:path"
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import { listWorktrees, repoRoot } from "../lib/git/git"
import { refuseUnderLiveAgent, removeTaskWorktree, taskOfWorktree } from "../lib/ops/task-worktree"
import { findProject, folderArgument, type Project } from "../lib/cli/project"
import { closest } from "../lib/cli/suggest"
import { indexTasks } from "../lib/model/task-index"
import { loadConfig, repoEntries } from "../lib/config/config"
import { openStore } from "../lib/store/open"
import { insideProject } from "../lib/git/workspace"

export const meta = {
  usage: "flow repo worktree list [<repo>] | flow repo worktree remove <repo> <branch> [--force]",
  description: `The git worktrees of a repository. <repo> names a repository flow knows, as flow.yaml's 'repo' or
'verify' or a task's 'repo' writes it (repos/app) or by its folder's name (app); else it is a folder relative
to the project; '.' (the default of list) is the repository holding the project. 'remove' removes the
worktree that has <branch> checked out (the branch itself is kept), after flow.yaml's teardown; one with
uncommitted changes is refused unless --force, which discards them.`,
  options: {
    force: { type: "boolean", help: "remove even with uncommitted changes (they are lost)" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [group, action, repoArg, branch, extra] = positionals
  if (group !== "worktree") throw usage(group ? `unknown subcommand 'repo ${group}'` : "missing subcommand", `usage: ${meta.usage}`)
  const project = findProject(ctx)
  const repoDir = await repoFolder(project, repoArg ?? ".")
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
  // A clean worktree goes without --force too, and an agent may have committed all it did so far.
  const taskId = taskOfWorktree(project, target.path)
  if (taskId)
    await refuseUnderLiveAgent(
      project,
      taskId,
      "removing it",
      `stop that run first (q or Ctrl-C where it runs; the next 'flow run' resumes the task here), or stop it and run 'flow reset ${taskId}' to start the task over from the target`,
    )
  await removeTaskWorktree(project, repo, target.path, Boolean(values.force), {
    out: (line) => ctx.stdout(`${line}\n`),
    warn: (line) => ctx.stderr(`warning: ${line}\n`),
  })
  ctx.stdout(`Removed the worktree of ${branch} (${relative(ctx.cwd, target.path) || target.path}); the branch is kept.\n`)
}

/**
 * The folder `<repo>` names (SPEC 4: a repository name): a repository flow knows by its path as written or its
 * folder's name, else a folder of the project. Unknown: a usage error with the closest name and the known ones.
 */
async function repoFolder(project: Project, arg: string): Promise<string> {
  if (arg === ".") return project.dir
  const known = await knownRepos(project)
  const bare = relative(project.dir, resolve(project.dir, arg))
  const byName = known.filter((r) => r === bare || basename(r) === arg)
  if (byName.length > 1 && !byName.includes(bare))
    throw usage(`'${arg}' names ${byName.length} repositories: ${byName.join(", ")}`, "name it by its path, as flow.yaml or the task writes it")
  const path = insideProject(project.dir, byName.includes(bare) ? bare : (byName[0] ?? arg), "<repo>")
  if (byName.length > 0 || existsSync(path) || known.length === 0)
    return folderArgument(arg, path, "<repo> is a repository flow knows (flow.yaml's 'repo', a task's 'repo'), a folder relative to the project, or '.'")
  const near = closest(arg, [...known, ...known.map((r) => basename(r))])
  const suggestion = near === undefined ? "" : `did you mean '${known.find((r) => r === near || basename(r) === near)}'? `
  throw usage(`no repository or folder '${arg}' in this project`, `${suggestion}the repositories flow knows: ${known.join(", ")}`)
}

/** The repositories flow.yaml and the tasks name, as paths relative to the project, each once, sorted. */
async function knownRepos(project: Project): Promise<string[]> {
  const config = loadConfig(project.dir)
  const named = [config.repo, ...(["verify", "setup", "teardown", "copy", "ports"] as const).flatMap((f) => repoEntries(config, f).map((v) => v.repo))]
  const store = await openStore(project)
  if (await store.exists()) for (const { task } of indexTasks((await store.read()).data).values()) named.push(task.repo)
  const paths = named.filter((r): r is string => r !== undefined).map((r) => relative(project.dir, resolve(project.dir, r)))
  return [...new Set(paths)].filter((r) => r !== "" && !r.startsWith("..")).sort()
}
