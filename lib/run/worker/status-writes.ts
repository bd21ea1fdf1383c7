// The run's status writes to tasks.yaml, coalesced: edits asked for while a write is under way go together in
// the next one (one lock, one read, one check, one atomic replace). Dependent chains land in step, so their
// `in_progress` and `done` writes arrive together; each was a write of its own, one after another under the
// file's lock, on the path of every task (docs/PERFORMANCE.md, "Landing"). An edit that throws fails alone:
// its batch is written again edit by edit, so one task's error never costs another its write.
import type { Fence, TaskEdits } from "../../store/store"
import type { Change } from "../../store/transitions"
import type { RunSettings } from "../settings"
import { untilValid } from "../tasks-wait"

type Edit = (editor: TaskEdits) => Change[]
type Pending = { command: string; edit: Edit; fence?: Fence; resolve: (c: Change[]) => void; reject: (e: unknown) => void }

const writers = new WeakMap<RunSettings, { busy: boolean; pending: Pending[] }>()

/**
 * Applies `edit` in the next write of tasks.yaml (locked, atomic, retried while the file is invalid); its
 * changes. `fence`: the run's claim of the task on a shared graph; a batch carries every edit's, and one that
 * no longer holds fails alone when the batch is written again edit by edit.
 */
export function coalescedWrite(s: RunSettings, command: string, edit: Edit, fence?: Fence): Promise<Change[]> {
  let w = writers.get(s)
  if (!w) writers.set(s, (w = { busy: false, pending: [] }))
  const writer = w
  return new Promise<Change[]>((resolve, reject) => {
    writer.pending.push({ command, edit, fence, resolve, reject })
    if (!writer.busy) void flush(s, writer)
  })
}

async function flush(s: RunSettings, w: { busy: boolean; pending: Pending[] }): Promise<void> {
  w.busy = true
  while (w.pending.length > 0) {
    const batch = w.pending.splice(0)
    try {
      const command = batch.length === 1 ? batch[0].command : `${batch[0].command} (+${batch.length - 1} more)`
      const fences = batch.flatMap((p) => (p.fence ? [p.fence] : []))
      const out = await untilValid(s.signal, () => s.store.mutate(command, (editor) => batch.map((p) => p.edit(editor)), fences))
      for (const [i, p] of batch.entries()) p.resolve(out[i])
    } catch (e) {
      if (batch.length === 1) batch[0].reject(e)
      else for (const p of batch) await untilValid(s.signal, () => s.store.mutate(p.command, p.edit, p.fence)).then(p.resolve, p.reject)
    }
  }
  w.busy = false
}
