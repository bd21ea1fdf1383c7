// The tasks.yaml store: fast validated reads, and the one function every write goes through.
import { existsSync, readFileSync } from "node:fs"
import { basename } from "node:path"
import { writeFileAtomic, writeFileAtomicAsync } from "./atomic-write"
import { Exit, FlowError } from "../cli/errors"
import { type Hint, hint, run } from "../cli/hint"
import { formatFinding, summarize } from "../validation/findings"
import { withLock } from "./lock"
import type { Project } from "../cli/project"
import type { TaskFile } from "../model/task-index"
import type { TasksEditor } from "./task-edit"
import { isKnownValid, rememberValid } from "./valid-cache"

export type Loaded = { text: string; data: TaskFile }

/** A tasks.yaml that does not validate (exit 3): the report with its excerpt, and `line`, the same in one line. */
export class InvalidTasks extends FlowError {
  constructor(
    message: string,
    hint: Hint,
    /** what and where, for a log line: `tasks.yaml is invalid (1 error, 0 warnings); the first: <message>, at <file>:<line>:<column>` */
    readonly line: string,
  ) {
    super(message, Exit.invalid, hint)
  }
}

/** Reads and checks tasks.yaml; an invalid or missing file is a FlowError with exit 3. */
export async function readTasks(project: Project): Promise<Loaded> {
  const text = readText(project.tasksFile)
  if (isKnownValid(project.stateDir, text)) return { text, data: Bun.YAML.parse(text) as TaskFile }
  const { validateText } = await import("../validation/validate")
  const { findings } = await validateText(text)
  const errors = findings.filter((f) => f.severity === "error")
  if (errors.length > 0) {
    const name = basename(project.tasksFile)
    const first = errors[0]
    const at = `, at ${project.tasksFile}${first.line ? `:${first.line}:${first.column ?? 1}` : ""}`
    throw new InvalidTasks(
      `${name} is invalid (${summarize(findings)}); the first:\n${formatFinding(first, project.tasksFile, text).trimEnd()}`,
      hint`${run("validate")} to see every problem, fix them, and try again`,
      `${name} is invalid (${summarize(findings)}); the first: ${first.message}${at}`,
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
