// The parts of a task's prompt that come from other tasks: the larger tasks it is part of, and the tasks
// its work builds on. Each line says what is true now, since `flow prompt` previews a task whose
// dependencies may not be done, and `flow ready` can start one early.
import type { Indexed, Task } from "../model/task-index"
import { besideOnFiles } from "../graph/files-overlap"

/** An ancestor's instructions longer than this are cut: the subtask needs their gist, not all of them. */
export const ANCESTOR_TEXT_LIMIT = 600

/** Outermost first: the tasks this one is part of, each with its title and (shortened) instructions. */
export function ancestorSection(index: Map<string, Indexed>, taskId: string): string[] {
  const chain = ancestors(index, taskId).reverse()
  if (chain.length === 0) return []
  const out = [
    "",
    "## Part of",
    "",
    chain.length === 1
      ? "Your task is one part of a larger task. Its instructions, for context (do only your own task):"
      : "Your task is one part of larger tasks, outermost first. Their instructions, for context (do only your own task):",
  ]
  for (const t of chain) {
    out.push("", `### ${t.id}: ${t.title}`)
    const text = t.instructions?.trim()
    if (text) out.push("", shorten(text, t.id))
  }
  return out
}

/**
 * The tasks this one builds on: its own depends_on, then each ancestor's (a subtask inherits them), each
 * once. A done task's work is merged into the target branch the task's branch starts from; any other's is not.
 */
export function dependencySection(index: Map<string, Indexed>, taskId: string): string[] {
  const deps: { task: Task; via?: Task }[] = []
  const seen = new Set<string>()
  const add = (ids: readonly string[] | undefined, via?: Task) => {
    for (const id of ids ?? []) {
      const dep = index.get(id)?.task
      if (!dep || seen.has(id)) continue
      seen.add(id)
      deps.push({ task: dep, via })
    }
  }
  const self = index.get(taskId)?.task
  add(self?.depends_on)
  for (const up of ancestors(index, taskId)) add(up.depends_on, up)
  if (deps.length === 0) return []
  const allDone = deps.every((d) => d.task.status === "done")
  const out = [
    "",
    "## Work this task builds on",
    "",
    allDone
      ? "These tasks were done before yours; their code is in your branch."
      : "Your task depends on these tasks. Not all of them are done: the code of a task that is not done is not in your branch, so do not rely on it.",
  ]
  for (const { task, via } of deps) {
    const state =
      task.status !== "done" ? `${task.status}: not done yet, its code is not in your branch` : allDone ? "done" : "done: its code is in your branch"
    out.push("", `- ${task.id}: ${task.title} (${state}${via ? `; a dependency of ${via.id}, which your task is part of` : ""})`)
    for (const note of task.ai_notes ?? []) out.push(`  - note: ${oneLine(note)}`)
  }
  return out
}

/** Nearest first. */
function ancestors(index: Map<string, Indexed>, taskId: string): Task[] {
  const out: Task[] = []
  for (let up = index.get(taskId)?.parent; up !== undefined; up = index.get(up.id)?.parent) out.push(up)
  return out
}

function shorten(text: string, id: string): string {
  if (text.length <= ANCESTOR_TEXT_LIMIT) return text
  const cut = text.slice(0, ANCESTOR_TEXT_LIMIT)
  // End at a word, so the cut does not leave half a word that reads like a typo.
  const end = cut.lastIndexOf(" ") > ANCESTOR_TEXT_LIMIT / 2 ? cut.lastIndexOf(" ") : cut.length
  return `${cut.slice(0, end).trimEnd()} … (shortened: \`flow show ${id}\` prints all of it)`
}

export function oneLine(text: string): string {
  return text.trim().replace(/\s*\n\s*/g, " ")
}

/**
 * The tasks not done that may be worked on beside this one (no dependency path between them) and name some of
 * the same files: another agent may be changing those files in its own branch now, and both merges land on
 * one target. Each with its status, so the agent knows which is at work now.
 */
export function besideSection(index: Map<string, Indexed>, taskId: string): string[] {
  const beside = besideOnFiles(index, taskId)
  if (beside.length === 0) return []
  const quoted = (files: readonly string[]) => files.map((f) => `\`${f}\``).join(", ")
  return [
    "",
    "## Other tasks on the same files",
    "",
    "These tasks may be worked on by other agents at the same time as yours, each in its own branch, and name files yours names:",
    ...beside.map(
      ({ task, files }) => `- ${task.id}: ${task.title} (${task.status === "in_progress" ? "at work now" : (task.status ?? "todo")}): ${quoted(files)}`,
    ),
    "",
    "Change only what your task needs in those files, and leave the rest of them as they are: both changes are merged into one target, and edits to the same lines conflict.",
  ]
}
