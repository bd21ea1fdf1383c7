// Watches what the inspector shows: tasks.yaml, plan.md and the state database (questions). chokidar, not
// fs.watch on the file: tasks.yaml is replaced by an atomic rename on every write, after which a watch on
// the old file sees nothing. The folders are watched, filtered down to those few names.
import { watch } from "chokidar"
import { basename, join, resolve } from "node:path"
import type { Project } from "../cli/project"

const MAX_WAIT_MS = 100

/**
 * Calls `onChange` once per burst of changes (an atomic write is several events); returns the stopper, whose
 * `ready` settles once the folders are watched (a change before that may go unseen).
 */
export function watchProject(project: Project, onChange: () => void, settleMs = 15): (() => Promise<void>) & { ready: Promise<void> } {
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
  let first: number | undefined
  const changed = () => {
    clearTimeout(timer)
    // A stream of writes (a busy run's state.db) would put a plain debounce off for ever: report at the
    // latest MAX_WAIT_MS after the first change of a burst.
    first ??= performance.now()
    const wait = Math.max(0, Math.min(settleMs, first + MAX_WAIT_MS - performance.now()))
    timer = setTimeout(() => {
      first = undefined
      onChange()
    }, wait)
  }
  watcher.on("all", changed)
  // chokidar drops a file's "change" that comes within 50 ms of its last one (its throttle), so a second
  // quick write of tasks.yaml (two flow commands in a row) went unseen and the page stayed behind. The raw
  // events under it are not throttled: any of them on a watched name counts too.
  watcher.on("raw", (_event, name: string | null, details) => {
    const watched = (details as { watchedPath?: string } | undefined)?.watchedPath
    const at = watched ? resolve(watched) : undefined
    // A folder's watcher names the entry; a file's watcher is the file.
    const path = at === dir || at === stateDir ? (name ? join(at, name) : undefined) : at
    if (path && path !== dir && path !== stateDir && relevant(path)) changed()
  })
  const ready = new Promise<void>((resolve) => watcher.once("ready", () => resolve()))
  const stop = async () => {
    clearTimeout(timer)
    await watcher.close()
  }
  return Object.assign(stop, { ready })
}
