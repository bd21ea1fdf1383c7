// The exact text an agent receives. One builder serves the orchestrator, `flow prompt` and the inspector,
// so what a person previews is what the agent gets.
import type { Question } from "../model/json-shapes"
import { callVerb, flowCall } from "../agents/flow-call"
import { ancestorSection, besideSection, dependencySection, oneLine } from "./prompt-context"
import type { Indexed, Step, Task } from "../model/task-index"
import type { Prepared } from "../worktree/prepare"

export type PromptInput = {
  /** every task by id (lib/model/task-index.ts) */
  index: Map<string, Indexed>
  taskId: string
  /** the project's GUIDELINES.md, when it has one */
  guidelines?: string
  /** the project folder's name, for the opening line */
  projectName: string
  /** the branch the agent works on (in its own worktree) */
  workspace?: { branch: string }
  /** the task's questions from .flow/state.db: the answered ones are part of its context */
  questions?: readonly Pick<Question, "id" | "text" | "answer">[]
  /** what was made ready in the worktree before the agent starts (lib/worktree/prepare.ts) */
  prepared?: Prepared
  /** the agent has flow's MCP server (flow.yaml `mcp: true`): name its tools instead of commands */
  tools?: boolean
}

/** The first prompt of a task: its whole context, and for a task with steps, its current step. */
export function taskPrompt(input: PromptInput): string {
  const { index, taskId } = input
  const entry = index.get(taskId)
  if (!entry) throw new Error(`taskPrompt: no task '${taskId}'`)
  const { task } = entry
  const out: string[] = [`You are a coding agent working on task '${task.id}' of the project '${input.projectName}', orchestrated by flow.`]
  if (input.workspace) {
    out.push(`Your working directory is a git worktree on branch '${input.workspace.branch}': work and commit only there.`)
  }
  if (input.prepared) out.push(...preparedSection(input.prepared))
  const guidelines = input.guidelines?.trim()
  if (guidelines) out.push("", ...(guidelines.startsWith("# ") ? [] : ["# Guidelines", ""]), guidelines)

  out.push("", `# Your task: ${task.id}: ${task.title}`)
  const facts = [task.phase !== undefined ? `Phase: ${task.phase}` : undefined, task.repo ? `Repository: ${task.repo}` : undefined].filter(Boolean)
  if (facts.length) out.push("", ...(facts as string[]))
  out.push(...ancestorSection(index, taskId))
  if (task.instructions?.trim()) out.push("", "## Instructions", "", task.instructions.trim())
  if (task.acceptance_criteria?.length) out.push("", "## Acceptance criteria", "", ...bullets(task.acceptance_criteria))
  if (task.ai_notes?.length) out.push("", "## Notes so far", "", ...bullets(task.ai_notes))
  const answered = (input.questions ?? []).filter((q) => q.answer !== null)
  if (answered.length) out.push("", "## Questions already answered", "", ...questionLines(answered))

  out.push(...dependencySection(index, taskId), ...besideSection(index, taskId))
  const validates = [...index.values()].filter((e) => e.task.validation_task_id === task.id).map((e) => e.task)
  for (const target of validates) {
    out.push(
      "",
      `## You validate ${target.id}`,
      "",
      `Check the work of '${target.id}' (${target.title}) against its acceptance criteria:`,
      ...bullets(target.acceptance_criteria?.length ? target.acceptance_criteria : ["(none written: check its instructions)"]),
      "",
      `If it falls short, ${callVerb(input.tools)} ${flowCall({ block: task.id, reason: "<what is wrong>" }, input.tools)} instead of fixing it yourself.`,
    )
  }
  if (task.validation_task_id) out.push("", `Your work will be checked afterwards by the task '${task.validation_task_id}'.`)

  const step = currentStep(task)
  if (task.steps?.length && step) {
    const n = task.steps.indexOf(step) + 1
    out.push("", "## Steps", "", `This task has ${task.steps.length} steps, done one at a time in this session. Do only step ${n} now.`)
    out.push(...stepSection(step))
  }
  out.push("", "## Talking to flow", "", ...flowCommands(task, step, input.tools))
  return `${out.join("\n")}\n`
}

/** The prompt that resumes a task's session for its next step; `tools` as in PromptInput. */
export function stepPrompt(task: Task, step: Step, tools = false): string {
  const steps = task.steps ?? []
  const n = steps.indexOf(step) + 1
  const continueWith = `Continue with step ${n} of ${steps.length || n} of task '${task.id}'.`
  // Said only when true: `flow prompt --resume` can preview a session that has not finished any step yet.
  const before =
    n > 1 && steps[n - 2].status === "done"
      ? "The previous step is done. "
      : steps.some((s) => s.status === "done")
        ? ""
        : `No step of task '${task.id}' is done yet. `
  const out = [`${before}${continueWith}`]
  out.push(...stepSection(step), "", ...flowCommands(task, step, tools))
  return `${out.join("\n")}\n`
}

/** The prompt that resumes a session whose agent exited after asking: the answers, then carry on. */
export function answersPrompt(task: Task, answered: readonly Pick<Question, "id" | "text" | "answer">[], step: Step | undefined, tools = false): string {
  const out = [
    `People answered the question${answered.length > 1 ? "s" : ""} you asked about task '${task.id}':`,
    "",
    ...questionLines(answered),
    "",
    step
      ? `Continue with step ${step.id} using ${answered.length > 1 ? "these answers" : "this answer"}.`
      : `Continue the task using ${answered.length > 1 ? "these answers" : "this answer"}.`,
  ]
  out.push("", ...flowCommands(task, step, tools))
  return `${out.join("\n")}\n`
}

/** What was made ready in the worktree, so the agent does not do it again; nothing when nothing was. */
function preparedSection(p: Prepared): string[] {
  const count = typeof p.ports === "number" ? p.ports : p.ports.length
  const lines: string[] = []
  if (p.setup) lines.push(`- The setup command \`${oneLine(p.setup)}\` ran in it before you started: do not run it again.`)
  if (p.copied.length)
    lines.push(`- Copied from the main checkout, and kept out of every commit (do not add them): ${p.copied.map((f) => `\`${f}\``).join(", ")}.`)
  if (count > 0) {
    const names = Array.from({ length: count }, (_, i) => (i === 0 ? "FLOW_PORT" : `FLOW_PORT_${i}`))
    const given =
      typeof p.ports === "number"
        ? `${names.join(", ")} (handed out when the run starts the task; in your environment)`
        : `${names.map((n, i) => `${n}=${(p.ports as readonly number[])[i]}`).join(", ")} (in your environment too)`
    lines.push(
      `- Your TCP port${count === 1 ? "" : "s"}: ${given}. Other agents work beside you: start servers on ${count === 1 ? "this port" : "these ports"}, not on a default one.`,
    )
  }
  return lines.length ? ["", "## Your worktree is prepared", "", ...lines] : []
}

function questionLines(questions: readonly Pick<Question, "id" | "text" | "answer">[]): string[] {
  return questions.flatMap((q) => [`- ${q.id}: ${oneLine(q.text)}`, `  Answer: ${oneLine(q.answer ?? "")}`])
}

/** The step a task's session works on now: the first one in progress, else the first pending. */
export function currentStep(task: Task): Step | undefined {
  const steps = task.steps ?? []
  return steps.find((s) => s.status === "in_progress") ?? steps.find((s) => (s.status ?? "pending") === "pending")
}

function stepSection(step: Step): string[] {
  const out = ["", `### Step ${step.id}`, "", step.instruction.trim()]
  if (step.acceptance_criteria?.length) out.push("", "Done when:", ...bullets(step.acceptance_criteria))
  return out
}

/** The commands the agent is told to run (or with `tools`, the MCP tools to call), with the real ids filled in. */
function flowCommands(task: Task, step: Step | undefined, tools = false): string[] {
  const id = task.id
  if (tools) {
    // Tool names as the server gives them; CLIs prefix them with the server's name (Claude Code: mcp__flow__flow_done).
    return [
      "Call these tools of the flow MCP server (your CLI may show their names with a prefix, such as mcp__flow__flow_done):",
      `- \`flow_note\` with task_id "${id}" and the text, to record a decision or finding for the people and agents after you.`,
      `- \`flow_ask\` with task_id "${id}", the question as text and wait: true when something is unclear: it waits for a person's answer and returns it.`,
      `  If you cannot wait that long, call it without wait and exit: you will be resumed in this session with the answer.`,
      ...endLines(task, step, true),
    ]
  }
  return [
    "Run these commands from your working directory (flow finds the project through FLOW_PROJECT):",
    `- \`flow note ${id} "<text>"\` to record a decision or finding for the people and agents after you.`,
    `- \`flow ask ${id} "<question>" --wait\` when something is unclear: it waits for a person's answer and prints it.`,
    `  If you cannot wait that long, run it without --wait and exit: you will be resumed in this session with the answer.`,
    ...endLines(task, step, false),
  ]
}

/** How the agent blocks, and finishes its step or its task: the last lines of what it is told. */
function endLines(task: Task, step: Step | undefined, tools: boolean): string[] {
  const block = `- ${flowCall({ block: task.id, reason: "<reason>" }, tools)} when you cannot go on; then exit.`
  const end = step
    ? `- ${flowCall({ stepDone: step.id }, tools)} when this step is finished and committed; then exit. You will be resumed with the next step.`
    : `- ${flowCall({ done: task.id }, tools)} when every acceptance criterion is met, the tests pass and your work is committed; then exit.`
  return [block, end]
}

function bullets(items: readonly string[]): string[] {
  return items.map((item) => `- ${oneLine(item)}`)
}
