// Watches what the inspector shows: tasks.yaml, plan.md and the state database (questions). chokidar, not
// fs.watch on the file: tasks.yaml is replaced by an atomic rename on every write, after which a watch on
// the old file sees nothing. The folders are watched, filtered down to those few names.
import { watch } from "chokidar"
import { basename, join, resolve } from "node:path"
import type { Project } from "../cli/project"

/** Calls `onChange` once per burst of changes (an atomic write is several events); returns the stopper. */
export function watchProject(project: Project, onChange: () => void, settleMs = 15): () => Promise<void> {
  const dir = resolve(project.dir)
  const stateDir = resolve(project.stateDir)
  const wanted = new Set([resolve(project.tasksFile), join(dir, "plan.md"), join(dir, "GUIDELINES.md")])
  const relevant = (path: string) => {
    const p = resolve(path)
    if (p === dir || p === stateDir || wanted.has(p)) return true
    // state.db and its -wal: a question asked or answered is a commit to one of them.
    return resolve(p, "..") === stateDir && basename(p).startsWith("state.db")
  }
  const watcher = watch([dir], { ignoreInitial: true, depth: 1, ignored: (path) => !relevant(path) })
  let timer: ReturnType<typeof setTimeout> | undefined
  watcher.on("all", () => {
    clearTimeout(timer)
    timer = setTimeout(onChange, settleMs)
  })
  return async () => {
    clearTimeout(timer)
    await watcher.close()
  }
}
