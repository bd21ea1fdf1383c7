// Where a task's agent works: the task's repository, its branch and its worktree under .flow/worktrees.
// Names come only from validated ids and checked paths: nothing from tasks.yaml escapes the workspace.
import { existsSync, realpathSync } from "node:fs"
import { isAbsolute, join, relative, resolve } from "node:path"
import { FlowError } from "../cli/errors"
import { currentBranch, repoRoot } from "./git"
import type { Project } from "../cli/project"
import type { Task } from "../model/task-index"
import { branchNameProblem } from "../validation/branch-name"
import { targetWorktree } from "../validation/validate"

export type Workspace = { repo: string; branch: string; path: string; target: string }

export class Workspaces {
  private targets = new Map<string, Promise<string>>()
  private projectRepo?: Promise<string | undefined>

  constructor(
    private project: Project,
    private defaults: { repo?: string; target?: string },
  ) {}

  async forTask(task: Task): Promise<Workspace> {
    const repo = await this.repoOf(task)
    const branch = branchOf(task)
    const target = await this.targetOf(repo)
    if (branch === target) {
      const f = targetWorktree(`task '${task.id}'`, branch, [], task.id)
      throw new FlowError(f.message, undefined, f.hint)
    }
    return { repo, branch, path: join(this.project.stateDir, "worktrees", task.id), target }
  }

  /** The task's repo field, else flow.yaml's repo, else the repository holding the project folder. */
  async repoOf(task: Task): Promise<string> {
    const named = task.repo ?? this.defaults.repo
    if (named === undefined) {
      this.projectRepo ??= repoRoot(this.project.dir)
      const root = await this.projectRepo
      if (!root)
        throw new FlowError(
          `${this.project.dir} is not inside a git repository`,
          undefined,
          "run 'git init' and commit, or set 'repo' in flow.yaml or on the task",
        )
      return root
    }
    const dir = insideProject(this.project.dir, named, task.repo !== undefined ? `task '${task.id}': repo` : "flow.yaml: repo")
    const root = existsSync(dir) ? await repoRoot(dir) : undefined
    if (!root) throw new FlowError(`${named} (${dir}) is not a git repository`, undefined, "create it with 'git init' and a first commit")
    return root
  }

  /** The branch finished work is merged into: flow.yaml's merge_target, else the repo's current branch. */
  targetOf(repo: string): Promise<string> {
    let target = this.targets.get(repo)
    if (!target) {
      target = this.defaults.target ? Promise.resolve(this.defaults.target) : currentBranch(repo)
      this.targets.set(repo, target)
    }
    return target
  }
}

/** A path from tasks.yaml or flow.yaml, resolved inside the project folder, or a FlowError. */
export function insideProject(projectDir: string, path: string, what: string): string {
  const base = realpathSync(projectDir)
  const dir = resolve(base, path)
  const rel = relative(base, existsSync(dir) ? realpathSync(dir) : dir)
  if (isAbsolute(path) || rel.startsWith("..") || isAbsolute(rel)) {
    throw new FlowError(`${what} '${path}' points outside the project folder`, undefined, "use a path relative to the project folder, such as repos/app")
  }
  return dir
}

/** The task's `worktree` field (a branch name, checked as `flow validate` checks it) or `flow/<id>`. */
export function branchOf(task: Task): string {
  // Ids are checked kebab-case by the schema, so `flow/<id>` is always a valid branch name.
  if (task.worktree === undefined) return `flow/${task.id}`
  const problem = branchNameProblem(task.worktree)
  if (problem)
    throw new FlowError(
      `task '${task.id}': worktree '${task.worktree}' is not a valid branch name: ${problem}`,
      undefined,
      "use letters, digits, '-', '_', '.' and '/' (for example 'feature/login')",
    )
  return task.worktree
}
