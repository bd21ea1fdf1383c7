// How a run learns that another process changed tasks.yaml (a checkpoint approved in another terminal, a task
// reset, an agent's note). Every write replaces the file by a rename, so a watch on the file itself is a watch
// on an inode that the next write throws away: chokidar re-arms it from its change handler, which drops an
// event within 5 ms of the last (its throttle), and after two quick writes it stayed on the replaced file, deaf
// for good (issue 31). The folder is watched instead, filtered to the file: its inode never changes. A stat of
// the file every second backs that up, so a change is seen within about a second whatever the watcher does.
import { watch } from "chokidar"
import { stat } from "node:fs/promises"
import { basename, dirname, resolve } from "node:path"

/** How often the backstop compares tasks.yaml's inode, size and times with the last look. */
export const TASKS_STAT_MS = 1_000

/**
 * Calls `onChange` (often more than once) whenever `file` may have changed; returns the stopper, whose `ready`
 * settles once the folder is watched and the file's first look taken (a change before that may go unseen).
 */
export function watchTasksFile(file: string, onChange: () => void): (() => Promise<void>) & { ready: Promise<void> } {
  const path = resolve(file)
  const dir = dirname(path)
  const name = basename(path)
  const watcher = watch(dir, { ignoreInitial: true, depth: 0, ignored: (p) => resolve(p) !== dir && resolve(p) !== path })
    .on("all", onChange)
    // chokidar's own events go through the same throttle; the raw ones under them do not. The folder's watcher
    // names the entry (tasks.yaml, or a write's temp file, which changes nothing yet).
    .on("raw", (_event, entry: string | null) => {
      if (entry === name) onChange()
    })
  let last: Promise<string> = signature(path)
  const timer = setInterval(() => {
    last = last.then(async (before) => {
      const now = await signature(path)
      if (now !== before) onChange()
      return now
    })
  }, TASKS_STAT_MS)
  const ready = Promise.all([new Promise<void>((resolve) => watcher.once("ready", () => resolve())), last]).then(() => {})
  const stop = async () => {
    clearInterval(timer)
    await last
    await watcher.close()
  }
  return Object.assign(stop, { ready })
}

/** What changes with every write of the file: a rename brings a new inode; an editor's write in place, new times. */
async function signature(path: string): Promise<string> {
  try {
    const s = await stat(path, { bigint: true })
    return `${s.ino} ${s.size} ${s.mtimeNs} ${s.ctimeNs}`
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? "unreadable" // gone for a moment (a person's editor), or never there (a shared graph)
  }
}
