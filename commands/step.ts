// `flow step start|done <step_id>` and `flow step show|list <task_id>` (SPEC 3.3): steps run in order in
// one agent session; the task is merged only after the last one.
import { parse, positionalsExactly } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import type { StepListReport, StepShowReport } from "../lib/model/json-shapes"
import { findProject } from "../lib/cli/project"
import { stepTitle } from "../lib/graph/step-title"
import { changeStep } from "../lib/ops/change"
import { agentFence } from "../lib/ops/fence"
import { stepList, stepShow } from "../lib/ops/steps"
import { formatChange } from "../lib/store/transitions"

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
  if (sub === "start" || sub === "done") return printStepChange(ctx, sub, id, values.json === true)
  const project = findProject(ctx)
  if (sub === "show") show(ctx, await stepShow(project, id), values.json === true)
  else list(ctx, await stepList(project, id), values.json === true)
}

async function printStepChange(ctx: Ctx, sub: "start" | "done", stepId: string, json: boolean): Promise<void> {
  const result = await changeStep(findProject(ctx), sub, stepId, agentFence(ctx.env))
  if (json) return ctx.stdout(`${JSON.stringify(result.report, null, 2)}\n`)
  for (const n of result.notes) ctx.stderr(`warning: ${n}\n`)
  if (result.already) ctx.stdout(`${stepId} is already ${result.already}\n`)
  for (const c of result.changes) ctx.stdout(`${formatChange(c)}\n`)
  if (result.lastDone) ctx.stdout(`All steps of ${result.taskId} are done; the orchestrator merges and marks the task done.\n`)
}

function show(ctx: Ctx, report: StepShowReport, json: boolean): void {
  const { current, done, total, task_id } = report
  if (json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  if (!current) {
    ctx.stdout(`All ${total} steps of ${task_id} are done.\n`)
    return
  }
  const lines = [`Step: ${current.id} (${current.status})`, `Task: ${task_id}`, `Progress: ${done} of ${total} steps done`]
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

function list(ctx: Ctx, report: StepListReport, json: boolean): void {
  if (json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  for (const s of report.steps) {
    const status = s.status
    const when =
      status === "done" && s.completed_at ? `  completed ${s.completed_at}` : status === "in_progress" && s.started_at ? `  started ${s.started_at}` : ""
    ctx.stdout(`[${status}] ${s.id} ${stepTitle(s.instruction)}${when}\n`)
  }
}
