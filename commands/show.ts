import { parse, positionalsExactly } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { mergePending, pendingNote } from "../lib/landing/merge-pending"
import { findProject } from "../lib/cli/project"
import { descendantsOf, effectivePhase } from "../lib/graph/show-report"
import type { Indexed } from "../lib/model/task-index"
import { taskLine } from "../lib/graph/task-lines"
import { stepTitle } from "../lib/graph/step-title"
import { showTask } from "../lib/ops/read"
import { usageText } from "../lib/budget/usage"
import { workedByText } from "../lib/run/worked-by"
import { budgetText } from "../lib/budget/budget-report"
import { evidenceLines } from "../lib/run/evidence-text"

export const meta = {
  usage: "flow show <task_id> [--json]",
  description: `Prints one task (subtask ids work too): id, title, status, phase, agent (the agent_name it is
restricted to) and, once a 'flow run' agent had it, the agent that works or worked on it, each dependency with
its status (✓ done, ○ not yet), instructions, acceptance criteria and notes; then, when set, its parent,
checkpoint, the task validating it, the tasks it validates, repo, worktree, start and completion times,
the tokens and cost its agents reported and its budget (spent of its cap, docs/BUDGETS.md); once its branch was
handed to the merge queue, its evidence (docs/REVIEW.md): the diff's files, the checks that ran with their
exit codes and output, agent, attempts, fix rounds, cost and the queue's wait; then its steps and its
subtasks, one line each.`,
  options: {
    json: { type: "boolean", help: "print the task and what is derived from it as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [id] = positionalsExactly(positionals, ["task_id"], meta.usage)
  const project = findProject(ctx)
  const { report, index, entry, usage, worker, budget, landing, evidence } = await showTask(project, id)
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  const { task } = entry
  const { validates } = report
  const statusOf = (dep: string) => (index.get(dep) as Indexed).task.status
  const { phase, from } = effectivePhase(entry, index)
  const descendants = descendantsOf(task, entry.depth)
  const pending = (await mergePending(project, [task])).get(task.id)

  const out = [
    `Task: ${task.id}`,
    `Title: ${task.title}`,
    `Status: ${pending ? `done, merge pending (${pendingNote(task.id, pending).replace(`${task.id}: `, "")})` : task.status}`,
    ...(landing ? [`Landing: waiting — ${landing.reason}`] : []),
    `Phase: ${phase === null ? "none" : from === task ? phase : `${phase} (inherited from ${from.id})`}`,
    // `Agent:` is SPEC's agent_name, a restriction: said so when there is none, as the agent at work is another line.
    `Agent: ${task.agent_name ?? "none (any agent may take it)"}`,
  ]
  if (worker) out.push(`Worked by: ${workedByText(worker)}`)
  const deps = task.depends_on ?? []
  if (deps.length === 0) out.push("Dependencies: none")
  else {
    out.push("Dependencies:")
    for (const dep of deps) {
      const status = statusOf(dep)
      out.push(`  ${status === "done" ? "✓" : "○"} ${dep} (${status})`)
    }
  }
  const instructions = task.instructions?.replace(/\s+$/, "")
  if (!instructions) out.push("Instructions: none")
  else {
    out.push("Instructions:")
    for (const line of instructions.split("\n")) out.push(line.trim() === "" ? "" : `  ${line}`)
  }
  bullets(out, "Acceptance Criteria", task.acceptance_criteria)
  bullets(out, "Notes", task.ai_notes)
  if (entry.parent) out.push(`Parent: ${entry.parent.id}`)
  if (task.checkpoint === true) out.push("Checkpoint: yes (waits for a person to run flow done)")
  if (task.validation_task_id) out.push(`Validated by: ${task.validation_task_id}`)
  if (validates.length > 0) out.push(`Validates: ${validates.join(", ")}`)
  if (task.repo) out.push(`Repo: ${task.repo}`)
  if (task.worktree) out.push(`Worktree: ${task.worktree}`)
  if (task.started_at) out.push(`Started: ${task.started_at}`)
  if (task.completed_at) out.push(`Completed: ${task.completed_at}`)
  const spent = usageText(usage)
  if (spent) out.push(`Usage: ${spent}`)
  const capped = budgetText(budget)
  if (capped) out.push(`Budget: ${capped}`)
  if (evidence) out.push(...evidenceLines(evidence))
  if (task.steps && task.steps.length > 0) {
    out.push("Steps:")
    for (const step of task.steps) out.push(`  [${step.status ?? "pending"}] ${step.id}${firstLine(step.instruction)}`)
  }
  if (descendants.length > 0) {
    out.push("Subtasks:")
    for (const d of descendants) out.push(`${"  ".repeat(d.depth - entry.depth)}${taskLine(d.task)}`)
  }
  ctx.stdout(`${out.join("\n")}\n`)
}

/** `Label: none`, or the label and one `  - item` per entry (continuation lines indented under the text). */
function bullets(out: string[], label: string, items: string[] | undefined): void {
  if (!items || items.length === 0) {
    out.push(`${label}: none`)
    return
  }
  out.push(`${label}:`)
  for (const item of items) out.push(`  - ${item.replace(/\s+$/, "").split("\n").join("\n    ")}`)
}

/** ` <title>` of a step (lib/graph/step-title.ts), or nothing for an empty one (no trailing space). */
function firstLine(text: string): string {
  const line = stepTitle(text)
  return line ? ` ${line}` : ""
}
