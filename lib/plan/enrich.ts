// `flow generate --enrich`: after the deterministic pass, an agent CLI may sharpen each task's instructions
// and acceptance criteria. It never edits tasks.yaml: it writes a JSON file of proposals, which flow checks
// and lays over the generated tasks, so ids, dependencies and the file's shape stay flow's own.
import { Exit, FlowError } from "../cli/errors"
import type { PlanNote } from "./plan-parse"
import type { Task } from "../model/task-index"

export type Proposal = { instructions?: string; acceptance_criteria?: string[] }
export type Enrichment = Map<string, Proposal>

/** Where the agent writes its proposals, relative to the project folder. */
export const ENRICH_FILE = ".flow/enrich.json"

/** The prompt asking an agent to propose better instructions and acceptance criteria for `tasks`. */
export function enrichPrompt(tasks: readonly Task[]): string {
  const flat: Record<string, unknown>[] = []
  const walk = (list: readonly Task[] | undefined) => {
    for (const t of list ?? []) {
      flat.push({ id: t.id, title: t.title, instructions: t.instructions ?? null, acceptance_criteria: t.acceptance_criteria ?? [] })
      walk(t.subtasks)
    }
  }
  walk(tasks)
  return `flow generated these tasks from plan.md. Read PRD.md, plan.md and GUIDELINES.md (if present) and the code
in this folder, then propose better instructions and acceptance criteria where they are vague: name the files
and components to change, the order of the work, and checks a reviewer can run.

Write your proposals as JSON to the file ${ENRICH_FILE}, and change no other file:
{"<task id>": {"instructions": "<Markdown text>", "acceptance_criteria": ["<check>", "..."]}, ...}
Leave out tasks you would not change, and either field you would keep. Keep code blocks in instructions.

The tasks:
${JSON.stringify(flat, null, 2)}
`
}

/** The agent's JSON, checked: an unknown id or a wrong shape is a note, and that entry is not used. */
export function readEnrichment(text: string, ids: ReadonlySet<string>): { enrichment: Enrichment; notes: PlanNote[] } {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (e) {
    throw new FlowError(`${ENRICH_FILE} is not JSON: ${(e as Error).message}`, Exit.failure, "run 'flow generate' without --enrich, or try again")
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new FlowError(`${ENRICH_FILE} must hold one JSON object of task id → proposal`, Exit.failure, "run 'flow generate' without --enrich, or try again")
  }
  const enrichment: Enrichment = new Map()
  const notes: PlanNote[] = []
  for (const [id, value] of Object.entries(data)) {
    if (!ids.has(id)) {
      notes.push({ severity: "warning", message: `the agent proposed changes for '${id}', which is no task of the plan (ignored)` })
      continue
    }
    const p = value as Record<string, unknown>
    const instructions = typeof p?.instructions === "string" && p.instructions.trim() ? p.instructions.trim() : undefined
    const criteria =
      Array.isArray(p?.acceptance_criteria) && p.acceptance_criteria.every((c) => typeof c === "string" && c.trim()) && p.acceptance_criteria.length > 0
        ? (p.acceptance_criteria as string[]).map((c) => c.trim())
        : undefined
    if (!instructions && !criteria) {
      notes.push({ severity: "warning", message: `the agent's proposal for '${id}' has no usable instructions or acceptance_criteria (ignored)` })
      continue
    }
    enrichment.set(id, {
      ...(instructions ? { instructions: instructions.includes("\n") ? `${instructions}\n` : instructions } : {}),
      ...(criteria ? { acceptance_criteria: criteria } : {}),
    })
  }
  return { enrichment, notes }
}

/** Lays the proposals over the tasks (in place); returns the ids that changed. */
export function applyEnrichment(tasks: Task[], enrichment: Enrichment): string[] {
  const changed: string[] = []
  const walk = (list: Task[] | undefined) => {
    for (const t of list ?? []) {
      const p = enrichment.get(t.id)
      if (p) {
        if (p.instructions !== undefined) t.instructions = p.instructions
        if (p.acceptance_criteria !== undefined) t.acceptance_criteria = p.acceptance_criteria
        changed.push(t.id)
      }
      walk(t.subtasks)
    }
  }
  walk(tasks)
  return changed
}
