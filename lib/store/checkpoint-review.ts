// A person's review of a checkpoint (SPEC 3.2 rule 5), from the inspector's page or the run screen's keys.
// Apart from lib/graph/checkpoint.ts so the dashboard, which only reads, does not load the writing side.
import { isoSeconds } from "../cli/clock"
import { FlowError } from "../cli/errors"
import type { Project } from "../cli/project"
import { checkNoteSize } from "./note-limit"
import { openStore } from "./open"
import { applyStatus, type Change } from "./transitions"

/**
 * A person's review of a checkpoint, from the inspector or the run screen: done, or blocked with the reason
 * as a note. Refuses a task that is not a checkpoint; returns the status changes of the one write.
 */
export async function reviewCheckpoint(project: Project, id: string, decision: "done" | "block", reason: string, by: string): Promise<Change[]> {
  if (reason) checkNoteSize(reason, "the reason")
  const store = await openStore(project)
  return store.mutate(`${by}: review ${id}`, (editor) => {
    const task = editor.task(id)
    if (!task) throw new FlowError(`no task '${id}'`, undefined, "it may have been removed from tasks.yaml")
    if (task.checkpoint !== true) throw new FlowError(`'${id}' is not a checkpoint`, undefined, `use 'flow done ${id}' or 'flow block ${id}' in a terminal`)
    const applied = applyStatus(editor, id, decision === "done" ? "done" : "blocked", isoSeconds())
    if (reason) editor.append({ taskId: id }, "ai_notes", decision === "block" ? `Blocked: ${reason}` : `Review: ${reason}`)
    return applied.changes
  })
}
