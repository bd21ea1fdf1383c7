// flow's MCP tools: each a thin call into lib/ops, the functions the commands call, so a tool follows the
// command's rules and says its messages. Inputs are arktype types built from the schema of tasks.yaml (the
// task id's pattern, the status enum), published as JSON Schema and checked on every call; outputs are the
// commands' --json shapes (lib/model/json-shapes.ts; WriteReport for the writes), published as each tool's
// outputSchema.
import { type } from "arktype"
import { AGENT_NAME } from "../cli/agent-name"
import type { Ctx } from "../cli/context"
import { parseDuration } from "../cli/duration"
import type { Project } from "../cli/project"
import {
  ListReport,
  NextReport,
  PromptReport,
  Question,
  QuestionsReport,
  ReviewDecision,
  ReviewReport,
  ReviewsReport,
  ShowReport,
  StepListReport,
  StepShowReport,
  ValidateReport,
  WriteReport,
} from "../model/json-shapes"
import { Step, Task } from "../model/schema"
import { addNote, changeStatus, changeStep } from "../ops/change"
import { promptReport } from "../ops/prompt"
import { answerQuestion, askQuestion, listQuestions, waitForAnswer } from "../ops/questions"
import { listGroups, listReport, nextTasks, showTask } from "../ops/read"
import { stepList, stepShow } from "../ops/steps"
import { validateProject } from "../ops/validate"
import { answerer } from "../state/run-state"
import { agentFence } from "../ops/fence"
import { reviewDecide, reviewList, reviewShow } from "../ops/review"

/** What a tool call runs with: the project, the server's environment (FLOW_AGENT, USER) and the call's cancellation. */
export type ToolContext = { project: Project; env: Ctx["env"]; signal: AbortSignal }

export type Tool = {
  name: string
  title: string
  description: string
  input: type.Any
  output: type.Any
  /** MCP's hints: a read-only tool changes nothing; an idempotent one changes nothing more when called again */
  readOnly: boolean
  idempotent: boolean
  run: (c: ToolContext, args: never) => Promise<object>
}

// An argument a tool does not take is refused, not dropped: a client that misspells `force` must not get a
// done without it. The published schema says so too (`additionalProperties: false`).
function tool<const I extends type.Any<object>>(
  t: Omit<Tool, "input" | "run"> & { input: I; run: (c: ToolContext, args: I["infer"]) => Promise<object> },
): Tool {
  return { ...t, input: (t.input as unknown as type<object>).onUndeclaredKey("reject") } as unknown as Tool
}

// The pieces of tasks.yaml's schema the arguments are made of. A description becomes arktype's "expected"
// in an error: "task_id must be a task id (...) (was "Api")".
const taskId = Task.get("id").describe("a task id (subtasks' too): lowercase letters and digits in words joined by '-', such as api-layer")
const stepId = Step.get("id").describe("a step id: its task's id, '.', and the step's part, such as api-layer.1")
const text = type(/\S/).describe("a text that is not empty")

const readOnly = { readOnly: true, idempotent: true }
const write = { readOnly: false, idempotent: true }

/** Every tool, in the order of `flow --help`. */
export const TOOLS: readonly Tool[] = [
  tool({
    name: "flow_list",
    title: "List tasks",
    description:
      "Every task grouped by the phase of its top-level task (flow list --json): id, title, status, phase, parent, depth, dependencies, agent, checkpoint. With status, only tasks with that status.",
    input: type({ "status?": Task.get("status") }),
    output: ListReport,
    ...readOnly,
    run: async ({ project }, { status }) => listReport((await listGroups(project, status)).groups),
  }),
  tool({
    name: "flow_show",
    title: "Show a task",
    description:
      "One task as stored in tasks.yaml with what flow derives from it (flow show --json): its dependencies with their statuses, dependents, subtasks, parent, phase and title, tokens and cost, its budget, and once its branch was handed to the merge queue its evidence (docs/REVIEW.md): diff, checks with output, agent, fix rounds, cost, the queue's wait.",
    input: type({ task_id: taskId }),
    output: ShowReport,
    ...readOnly,
    run: async ({ project }, { task_id }) => (await showTask(project, task_id)).report,
  }),
  tool({
    name: "flow_next",
    title: "Tasks to take now",
    description:
      "The tasks that may be started now, in the order to take them (flow next --json): ready, or todo with every dependency done; not checkpoints, not parents. With agent, only those assigned to it or to nobody.",
    input: type({ "agent?": type(AGENT_NAME).describe("an agent's name from flow.yaml") }),
    output: NextReport,
    ...readOnly,
    run: async ({ project }, { agent }) => (await nextTasks(project, agent)).report,
  }),
  tool({
    name: "flow_start",
    title: "Start a task",
    description: "Marks the task in_progress with started_at (flow start). Dependencies not done yet do not stop it; they are named in messages.",
    input: type({ task_id: taskId }),
    output: WriteReport,
    ...write,
    run: async ({ project, env }, { task_id }) => (await changeStatus(project, "start", task_id, { agent: env.FLOW_AGENT, fence: agentFence(env) })).report,
  }),
  tool({
    name: "flow_done",
    title: "Finish a task",
    description:
      "Marks the task done (flow done): in the same write, todo tasks whose dependencies are now all done become ready_for_agent, and a parent whose subtasks are all done becomes done. A task with subtasks or steps not done is refused unless force.",
    input: type({ task_id: taskId, "force?": "boolean" }),
    output: WriteReport,
    ...write,
    run: async ({ project, env }, { task_id, force }) =>
      (await changeStatus(project, "done", task_id, { agent: env.FLOW_AGENT, force, fence: agentFence(env) })).report,
  }),
  tool({
    name: "flow_block",
    title: "Block a task",
    description: "Marks the task blocked: it needs a person (flow block). A reason is appended to its notes as 'Blocked: <reason>'.",
    input: type({ task_id: taskId, "reason?": "string" }),
    output: WriteReport,
    readOnly: false,
    idempotent: false,
    run: async ({ project, env }, { task_id, reason }) =>
      (await changeStatus(project, "block", task_id, { reason, agent: env.FLOW_AGENT, fence: agentFence(env) })).report,
  }),
  tool({
    name: "flow_note",
    title: "Add a note",
    description:
      "Appends the text to the task's ai_notes (flow note): a decision or finding for the people and agents after you. At most 512 KiB: notes go into agents' prompts.",
    input: type({ task_id: taskId, text }),
    output: WriteReport,
    readOnly: false,
    idempotent: false,
    run: async ({ project, env }, { task_id, text }) => addNote(project, task_id, text.trim(), agentFence(env)),
  }),
  tool({
    name: "flow_ask",
    title: "Ask a person",
    description:
      "Raises a question about a task for a person to answer (flow ask). Returns the question (q-1, q-2, ...). With wait, returns once it is answered, with the answer; a timeout (90s, 30m, 2h) or a cancelled call leaves it pending.",
    input: type({ task_id: taskId, text, "wait?": "boolean", "timeout?": type("string").describe("a duration: 90s, 30m, 2h, 1h30m") }),
    output: Question,
    readOnly: false,
    idempotent: false,
    run: async ({ project, env, signal }, { task_id, text, wait, timeout }) => {
      const timeoutMs = timeout === undefined ? undefined : parseDuration(timeout, "timeout")
      const question = await askQuestion(project, task_id, text.trim(), env.FLOW_AGENT)
      return wait ? waitForAnswer(project, question.id, "flow mcp", { timeoutMs, signal }) : question
    },
  }),
  tool({
    name: "flow_answer",
    title: "Answer a question",
    description:
      "Records the answer to a question an agent asked (flow answer); an agent waiting for it carries on. A question is answered once: force replaces an answer. A question flow asks when a task reaches its budget takes an amount to add (10, $10; tokens as 500k or 2M; minutes as 30m) or 'block'; an amount of another unit, or one that leaves the task over its cap, is refused.",
    input: type({ question_id: type(/^(q-)?\d+$/).describe("a question id such as q-3 (or 3)"), text, "force?": "boolean" }),
    output: Question,
    readOnly: false,
    idempotent: false,
    run: async ({ project, env }, { question_id, text, force }) => answerQuestion(project, question_id, text.trim(), answerer(env), force),
  }),
  tool({
    name: "flow_questions",
    title: "Pending questions",
    description: "The questions waiting for an answer, oldest first (flow questions --json); with all, every question with its answer.",
    input: type({ "all?": "boolean" }),
    output: QuestionsReport,
    ...readOnly,
    run: async ({ project }, { all }) => listQuestions(project, all),
  }),
  tool({
    name: "flow_review",
    title: "Reviews waiting",
    description:
      "What waits for review (flow review --json; flow.yaml review, docs/REVIEW.md): each task whose merge passed its check and waits for its reviewer before it lands, in queue order, with the branch's commit a decision is made on.",
    input: type({}),
    output: ReviewsReport,
    ...readOnly,
    run: async ({ project }) => reviewList(project),
  }),
  tool({
    name: "flow_review_show",
    title: "Show a review",
    description:
      "One waiting review (flow review <task_id> --json): the task's evidence (diff stats, checks with their output, agent, fix rounds, cost, the queue's wait) and its diff against the target as git prints it.",
    input: type({ task_id: taskId }),
    output: ReviewReport,
    ...readOnly,
    run: async ({ project }, { task_id }) => (await reviewShow(project, task_id)).report,
  }),
  tool({
    name: "flow_review_approve",
    title: "Approve a review",
    description: "Approves the waiting review of the task's commit (flow review <task_id> approve): it lands when the merge queue gets to it.",
    input: type({ task_id: taskId }),
    output: ReviewDecision,
    readOnly: false,
    idempotent: false,
    run: async ({ project, env }, { task_id }) => reviewDecide(project, task_id, "approve", null, env),
  }),
  tool({
    name: "flow_review_changes",
    title: "Ask for changes",
    description:
      'Asks for changes to the waiting review (flow review <task_id> changes "<comment>"): the comment goes to the task\'s agent, in its session, as a fix round (counted against fix_attempts); its new work comes back to the queue and waits for review again.',
    input: type({ task_id: taskId, comment: text }),
    output: ReviewDecision,
    readOnly: false,
    idempotent: false,
    run: async ({ project, env }, { task_id, comment }) => reviewDecide(project, task_id, "changes", comment.trim(), env),
  }),
  tool({
    name: "flow_step_start",
    title: "Start a step",
    description:
      "Marks the step in_progress with started_at, once every earlier step is done (flow step start); a task not yet started becomes in_progress too.",
    input: type({ step_id: stepId }),
    output: WriteReport,
    ...write,
    run: async ({ project, env }, { step_id }) => (await changeStep(project, "start", step_id, agentFence(env))).report,
  }),
  tool({
    name: "flow_step_done",
    title: "Finish a step",
    description: "Marks the step done with completed_at (flow step done); after the last step the orchestrator merges the task and marks it done.",
    input: type({ step_id: stepId }),
    output: WriteReport,
    ...write,
    run: async ({ project, env }, { step_id }) => (await changeStep(project, "done", step_id, agentFence(env))).report,
  }),
  tool({
    name: "flow_step_show",
    title: "Current step",
    description: "The task's current step (the first in progress, else the first pending) and how many are done (flow step show --json).",
    input: type({ task_id: taskId }),
    output: StepShowReport,
    ...readOnly,
    run: async ({ project }, { task_id }) => stepShow(project, task_id),
  }),
  tool({
    name: "flow_step_list",
    title: "Steps of a task",
    description: "Every step of the task in order, with its status and times (flow step list --json).",
    input: type({ task_id: taskId }),
    output: StepListReport,
    ...readOnly,
    run: async ({ project }, { task_id }) => stepList(project, task_id),
  }),
  tool({
    name: "flow_prompt",
    title: "A task's prompt",
    description:
      "The exact prompt an agent receives for the task (flow prompt --json); with resume, the shorter one that resumes its session for the current step.",
    input: type({ task_id: taskId, "resume?": "boolean" }),
    output: PromptReport,
    ...readOnly,
    run: async ({ project }, { task_id, resume }) => promptReport(project, task_id, { resume }),
  }),
  tool({
    name: "flow_validate",
    title: "Validate tasks.yaml",
    description:
      "Checks tasks.yaml from scratch (flow validate --json): every error and warning with its line and a hint. A file with errors is a result with valid: false, not a failed call.",
    input: type({}),
    output: ValidateReport,
    ...readOnly,
    run: async ({ project }) => (await validateProject(project)).report,
  }),
]
