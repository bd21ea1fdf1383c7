// `flow step start|done <step_id>` and `flow step show|list <task_id>` (SPEC 3.3): steps run in order in
// one agent session; the task is merged only after the last one.
import { isoSeconds } from "../lib/cli/clock"
import { parse, positionalsExactly } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import type { StepListReport, StepReport, StepShowReport } from "../lib/model/json-shapes"
import { findProject } from "../lib/cli/project"
import { mutateTasks, readTasks } from "../lib/store/tasks"
import { indexTasks, type Step, type Task } from "../lib/model/task-index"
import { requireTask } from "../lib/graph/task-lookup"
import { stepTitle } from "../lib/graph/step-title"
import { finishStep, formatChange, startStep, stepStatus } from "../lib/store/transitions"
import { writeReport } from "../lib/store/write-report"

export const meta = {
  usage: "flow step <start|done> <step_id> [--json] | flow step <show|list> <task_id> [--json]",
  description: `Subcommands:
  start <step_id>  pending → in_progress with started_at, once every earlier step is done; a task not yet
                   started (todo, ready_for_agent, assigned) becomes in_progress in the same write
  done <step_id>   → done with completed_at, from in_progress, or from pending once every earlier step is
                   done; after the last step the orchestrator merges and marks the task done
  show <task_id>   the current step: the first in progress, else the first pending
  list <task_id>   every step: [<status>] <step_id> <first line of the instruction (outside code)>`,
  options: {
    json: {
      type: "boolean",
      help: "print JSON (lib/model/json-shapes.ts): start and done what changed (WriteReport), show and list StepShowReport and StepListReport",
    },
  },
} as const

const SUBCOMMANDS = ["start", "done", "show", "list"] as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [sub, ...rest] = positionals
  if (!sub) throw usage("missing subcommand: start, done, show or list", `usage: ${meta.usage}`)
  if (!(SUBCOMMANDS as readonly string[]).includes(sub))
    throw usage(`unknown step subcommand '${sub}'`, `use one of ${SUBCOMMANDS.join(", ")}; usage: ${meta.usage}`)
  const operand = sub === "start" || sub === "done" ? "step_id" : "task_id"
  const [id] = positionalsExactly(rest, [operand], `flow step ${sub} <${operand}> [--json]`)
  if (sub === "start" || sub === "done") return changeStep(ctx, sub, id, values.json === true)
  const task = requireTask(indexTasks((await readTasks(findProject(ctx))).data), id).task
  const steps = task.steps ?? []
  if (steps.length === 0) {
    throw new FlowError(`task '${id}' has no steps`, undefined, `its work is described by its instructions: run 'flow show ${id}'`)
  }
  if (sub === "show") show(ctx, task, steps, values.json === true)
  else list(ctx, task, steps, values.json === true)
}

async function changeStep(ctx: Ctx, sub: "start" | "done", stepId: string, json: boolean): Promise<void> {
  // The time is taken under the lock, so a step never ends before it starts.
  const result = await mutateTasks(findProject(ctx), `flow step ${sub} ${stepId}`, (editor) => {
    const result = sub === "start" ? startStep(editor, stepId, isoSeconds()) : finishStep(editor, stepId, isoSeconds())
    return { ...result, report: writeReport(editor, result.taskId, result.changes, result.notes) }
  })
  if (json) return ctx.stdout(`${JSON.stringify(result.report, null, 2)}\n`)
  for (const n of result.notes) ctx.stderr(`warning: ${n}\n`)
  if (result.already) ctx.stdout(`${stepId} is already ${result.already}\n`)
  for (const c of result.changes) ctx.stdout(`${formatChange(c)}\n`)
  if (result.lastDone) ctx.stdout(`All steps of ${result.taskId} are done; the orchestrator merges and marks the task done.\n`)
}

function report(step: Step): StepReport {
  const { id, instruction, acceptance_criteria, started_at, completed_at } = step
  return { id, status: stepStatus(step), instruction, acceptance_criteria, started_at, completed_at }
}

function show(ctx: Ctx, task: Task, steps: Step[], json: boolean): void {
  const current = steps.find((s) => stepStatus(s) === "in_progress") ?? steps.find((s) => stepStatus(s) === "pending")
  const done = steps.filter((s) => stepStatus(s) === "done").length
  if (json) {
    const out: StepShowReport = { task_id: task.id, done, total: steps.length, current: current ? report(current) : null }
    ctx.stdout(`${JSON.stringify(out, null, 2)}\n`)
    return
  }
  if (!current) {
    ctx.stdout(`All ${steps.length} steps of ${task.id} are done.\n`)
    return
  }
  const lines = [`Step: ${current.id} (${stepStatus(current)})`, `Task: ${task.id}`, `Progress: ${done} of ${steps.length} steps done`]
  if (current.started_at) lines.push(`Started: ${current.started_at}`)
  lines.push(
    "Instruction:",
    ...current.instruction
      .trimEnd()
      .split("\n")
      .map((l) => (l ? `  ${l}` : "")),
  )
  if (current.acceptance_criteria?.length) lines.push("Acceptance Criteria:", ...current.acceptance_criteria.map((c) => `  - ${c}`))
  ctx.stdout(`${lines.join("\n")}\n`)
}

function list(ctx: Ctx, task: Task, steps: Step[], json: boolean): void {
  if (json) {
    const out: StepListReport = { task_id: task.id, steps: steps.map(report) }
    ctx.stdout(`${JSON.stringify(out, null, 2)}\n`)
    return
  }
  for (const s of steps) {
    const status = stepStatus(s)
    const when =
      status === "done" && s.completed_at ? `  completed ${s.completed_at}` : status === "in_progress" && s.started_at ? `  started ${s.started_at}` : ""
    ctx.stdout(`[${status}] ${s.id} ${stepTitle(s.instruction)}${when}\n`)
  }
}
