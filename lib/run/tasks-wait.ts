// tasks.yaml during a run: people edit it by hand, and an editor's save may leave it invalid for a moment.
// The run keeps its last valid view and waits (docs/RUN.md); a worker whose task finished meanwhile waits
// here to write its outcome, which is applied once the file is valid again.
import { Exit, FlowError } from "../cli/errors"
import { StoreUnreachable } from "../store/store"

/** How often a write waiting for a valid tasks.yaml tries again: only while the file is invalid. */
const RETRY_MS = 250

export function isInvalidTasks(e: unknown): boolean {
  return e instanceof FlowError && e.exit === Exit.invalid
}

/**
 * `fn` (a read or write of the graph), tried again while tasks.yaml is invalid or a shared graph's database
 * cannot be reached (what the run's workers finished is held meanwhile, and written when it answers), until it
 * works or the run stops.
 */
export async function untilValid<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await fn()
    } catch (e) {
      if (!(isInvalidTasks(e) || e instanceof StoreUnreachable) || signal.aborted) throw e
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, RETRY_MS)
        function done() {
          clearTimeout(timer)
          signal.removeEventListener("abort", done)
          resolve()
        }
        signal.addEventListener("abort", done, { once: true })
      })
    }
  }
}
