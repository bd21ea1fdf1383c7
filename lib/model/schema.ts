// The one schema of tasks.yaml (SPEC section 2 and 3). Types come from here and nowhere else.
// Importing arktype costs about 0.25 s of CPU, so only validation and writes load this module;
// read commands trust a file whose exact bytes were validated before (lib/store/valid-cache.ts).
import "./arktype-config"
import { scope, type } from "arktype"
import { STEP_STATUSES, TASK_STATUSES } from "./statuses"
import { DURATION_PATTERN } from "../cli/duration"

export const TaskStatus = type.enumerated(...TASK_STATUSES)
export type TaskStatus = typeof TaskStatus.infer
export const StepStatus = type.enumerated(...STEP_STATUSES)
export type StepStatus = typeof StepStatus.infer

/** Task ids become branch and folder names, hence the strict shape. */
export const ID_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/
/** A length of time as flow reads it everywhere (lib/cli/duration.ts): 90s, 20m, 2h, 1d, or 1h30m. */
export const Duration = type(DURATION_PATTERN).describe("a duration such as 90s, 20m or 1h30m")

/**
 * What a task, each agent or a whole run may spend (docs/BUDGETS.md): dollars, tokens as the provider bills
 * them (cached reads at their price), minutes of agent time. Any of them; an absent one has no cap.
 */
export const Budget = type({ "usd?": "number > 0", "tokens?": "number.integer > 0", "minutes?": "number > 0" })
export type Budget = typeof Budget.infer

/** Step ids are typically `<task_id>.<n>`: a task id with dot-separated parts. */
export const STEP_ID_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)*$/

const models = scope(
  {
    Step: {
      id: STEP_ID_PATTERN,
      instruction: "string",
      "status?": StepStatus,
      "acceptance_criteria?": "string[]",
      "started_at?": "string",
      "completed_at?": "string",
    },
    Task: {
      id: ID_PATTERN,
      title: "string > 0",
      status: TaskStatus,
      // Required unless the task has steps (SPEC 2.1); lib/validation/validate.ts enforces that rule with its own message.
      "instructions?": "string",
      "phase?": "number",
      "depends_on?": "string[]",
      "repo?": "string",
      "worktree?": "string",
      "agent_name?": "string",
      "acceptance_criteria?": "string[]",
      // The files and folders its work touches, from plan.md's `Files:` line: the plan review checks tasks that may
      // run at once against each other's, and the merge queue can predict a conflict from them (docs/PLANNING.md).
      "files?": "string[]",
      "ai_notes?": "string[]",
      "validation_task_id?": "string",
      "subtasks?": "Task[]",
      "steps?": "Step[]",
      "checkpoint?": "boolean",
      // How long one turn of its agent may run before the run stops it (docs/RUN.md, "Time limits").
      "task_timeout?": Duration,
      // What the task may spend before its agent stops and a person is asked; wins over flow.yaml's budget.task, per field.
      "budget?": Budget,
      // Set by flow: when the task last entered in_progress and when it became done (ISO 8601, UTC).
      "started_at?": "string",
      "completed_at?": "string",
    },
    // A phase's title, for a tasks.yaml written without plan.md (plan.md's `## Phase <n>: <title>` wins when both
    // name the same phase: lib/plan/plan-phases.ts).
    Phase: [
      { number: "number", title: "string" },
      "@",
      "a phase's title, shown by list, show and view; plan.md's '## Phase <n>: <title>' wins for the same number",
    ],
    TaskFile: { tasks: "Task[]", "phases?": "Phase[]" },
  },
  { jitless: false },
).export()

export const Task = models.Task
export type Task = typeof Task.infer
export const Step = models.Step
export type Step = typeof Step.infer
export const Phase = models.Phase
export type Phase = typeof Phase.infer
export const TaskFile = models.TaskFile
export type TaskFile = typeof TaskFile.infer

/** The keys each record may carry; anything else is kept on write and reported as a warning. */
export const TASK_KEYS: ReadonlySet<string> = new Set(Task.props.map((p) => p.key as string))
export const STEP_KEYS: ReadonlySet<string> = new Set(Step.props.map((p) => p.key as string))
