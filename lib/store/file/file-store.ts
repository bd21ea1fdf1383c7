// The file backend of the task store (lib/store/store.ts): tasks.yaml, read through the validation cache and
// changed under its lock by minimal text edits written atomically (lib/store/tasks.ts). The default, and what
// flow always did: nothing here may cost a command time.
//
// A fence is accepted and always holds: one run per project holds .flow/run.lock, so no other run can take a
// task over (docs/FLEET.md, "Claims and fencing").
import { existsSync, readFileSync } from "node:fs"
import { relative } from "node:path"
import { Exit, FlowError } from "../../cli/errors"
import type { Project } from "../../cli/project"
import type { Current, Fence, Loaded, TaskEdits, TaskStore } from "../store"
import { mutateTasks, readTasks, replaceTasks } from "../tasks"
import { contentKey, rememberValid } from "../valid-cache"

export class FileStore implements TaskStore {
  constructor(private readonly project: Project) {}

  readonly shared = false

  get where(): string {
    return this.project.tasksFile
  }

  async exists(): Promise<boolean> {
    return existsSync(this.project.tasksFile)
  }

  async read(): Promise<Loaded & { text: string }> {
    const { text, data } = await readTasks(this.project)
    return { data, text, version: contentKey(text) }
  }

  mutate<T>(command: string, edit: (edits: TaskEdits) => T, _fence?: Fence | readonly Fence[]): Promise<T> {
    return mutateTasks(this.project, command, edit)
  }

  replace<T>(command: string, build: (current: Current | undefined) => Promise<{ text?: string; result: T }>): Promise<T> {
    return replaceTasks(this.project, command, (current) => build(current && { ...current, version: contentKey(current.text) }))
  }

  async text(): Promise<string> {
    try {
      return readFileSync(this.project.tasksFile, "utf8")
    } catch {
      throw new FlowError(`${this.project.tasksFile} does not exist`, Exit.invalid, "run 'flow generate' to make it from plan.md")
    }
  }

  validated(text: string): void {
    rememberValid(this.project.stateDir, text)
  }

  shown(cwd: string): string {
    return relative(cwd, this.project.tasksFile) || this.project.tasksFile
  }
}
