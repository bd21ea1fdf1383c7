// The tasks.yaml store: fast validated reads, and the one function every write goes through.
import { existsSync, readFileSync } from "node:fs"
import { basename } from "node:path"
import { writeFileAtomic, writeFileAtomicAsync } from "./atomic-write"
import { Exit, FlowError } from "../cli/errors"
import { hint, run } from "../cli/hint"
import { formatFinding, summarize } from "./findings"
import { withLock } from "./lock"
import type { Project } from "../cli/project"
import type { TaskFile } from "../model/task-index"
import type { TasksEditor } from "./task-edit"
import { isKnownValid, rememberValid } from "./valid-cache"

export type Loaded = { text: string; data: TaskFile }

/** Reads and checks tasks.yaml; an invalid or missing file is a FlowError with exit 3. */
export async function readTasks(project: Project): Promise<Loaded> {
  const text = readText(project.tasksFile)
  if (isKnownValid(project.stateDir, text)) return { text, data: Bun.YAML.parse(text) as TaskFile }
  const { validateText } = await import("./validate")
  const { findings } = await validateText(text)
  const errors = findings.filter((f) => f.severity === "error")
  if (errors.length > 0) {
    const name = basename(project.tasksFile)
    throw new FlowError(
      `${name} is invalid (${summarize(findings)}); the first:\n${formatFinding(errors[0], project.tasksFile, text).trimEnd()}`,
      Exit.invalid,
      hint`${run("validate")} to see every problem, fix them, and try again`,
    )
  }
  rememberValid(project.stateDir, text)
  return { text, data: Bun.YAML.parse(text) as TaskFile }
}

/**
 * The only way tasks.yaml is changed: under the file's lock, re-read, apply `edit`, and replace the file
 * atomically. Nothing is written when `edit` throws or changes nothing.
 */
export async function mutateTasks<T>(project: Project, command: string, edit: (editor: TasksEditor) => T): Promise<T> {
  const { TasksEditor } = await import("./task-edit")
  return withLock(
    project.tasksFile,
    async (held) => {
      const { text, data } = await readTasks(project)
      const editor = new TasksEditor(text, data)
      const out = edit(editor)
      const next = editor.result()
      if (next !== text) {
        // A lock deleted by hand while this process was stopped lets another writer in: never overwrite its change.
        await writeFileAtomicAsync(project.tasksFile, next, { beforeRename: held.assertHeld })
        // The edits are typed values on a valid file, and result() proved they read back as intended.
        rememberValid(project.stateDir, next)
      }
      return out
    },
    { command, timeoutMs: project.lockTimeoutMs },
  )
}

/**
 * Replaces tasks.yaml as a whole (`flow generate`): under the file's lock, `build` gets the current file
 * (validated; undefined when there is none) and returns the new text, or undefined to leave the file as it
 * is. The new text is written atomically; `build` must have validated it.
 */
export async function replaceTasks<T>(
  project: Project,
  command: string,
  build: (current: Loaded | undefined) => Promise<{ text?: string; result: T }>,
): Promise<T> {
  return withLock(
    project.tasksFile,
    async (held) => {
      const current = existsSync(project.tasksFile) ? await readTasks(project) : undefined
      const { text, result } = await build(current)
      if (text !== undefined && text !== current?.text) {
        writeFileAtomic(project.tasksFile, text, { beforeRename: held.assertHeld })
        rememberValid(project.stateDir, text)
      }
      return result
    },
    { command, timeoutMs: project.lockTimeoutMs },
  )
}

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") {
      throw new FlowError(`${file} does not exist`, Exit.invalid, "run 'flow generate' to make it from plan.md, or write it by hand")
    }
    throw new FlowError(`cannot read ${file}: ${(e as Error).message}`, Exit.invalid, undefined, { cause: e })
  }
}
