// Shapes of every --json output, as arktype types. Commands import only the inferred TS types
// (`import type`), so printing JSON never loads arktype; tests check real output against these values.
import { type } from "arktype"
import { Task } from "./schema"
import { TASK_STATUSES } from "./statuses"

export const Finding = type({
  severity: "'error' | 'warning'",
  message: "string",
  "line?": "number",
  "column?": "number",
  "hint?": "string",
  "task_id?": "string",
  /** how many equal findings (same kind, same task) this one stands for, when more than one */
  "count?": "number",
})
export type Finding = typeof Finding.infer

/**
 * How much of the graph can run at once (lib/graph/parallelism.ts, docs/PLANNING.md "The parallelism report"):
 * every task and dependency counted (one written twice once); the longest chain of tasks that do the work, with its minutes
 * summed over the `timed` tasks whose time is known (a done task's recorded time, else its budget's minutes;
 * null when none is); the largest set of tasks that share a level (could run at once).
 */
export const Parallelism = type({
  tasks: "number",
  edges: "number",
  edges_per_task: "number",
  critical_path: { tasks: "string[]", minutes: "number | null", timed: "number" },
  widest_level: { level: "number", tasks: "string[]" },
})
export type Parallelism = typeof Parallelism.infer

/** `flow validate --json`; `parallelism` when the graph has no errors. */
export const ValidateReport = type({
  file: "string",
  valid: "boolean",
  tasks: "number",
  errors: "number",
  warnings: "number",
  findings: Finding.array(),
  "parallelism?": Parallelism,
})
export type ValidateReport = typeof ValidateReport.infer

export const ErrorReport = type({ error: "string", "hint?": "string", exit: "number" })
export type ErrorReport = typeof ErrorReport.infer

/** One step as `flow step show|list --json` print it; a missing status is printed as pending. */
export const StepReport = type({
  id: "string",
  status: "'pending' | 'in_progress' | 'done'",
  instruction: "string",
  "acceptance_criteria?": "string[]",
  "started_at?": "string",
  "completed_at?": "string",
})
export type StepReport = typeof StepReport.infer

/** `flow step show <task_id> --json`: `current` is the first in-progress step, else the first pending, else null. */
export const StepShowReport = type({ task_id: "string", done: "number", total: "number", current: StepReport.or("null") })
export type StepShowReport = typeof StepShowReport.infer

/** `flow step list <task_id> --json`: every step in order. */
export const StepListReport = type({ task_id: "string", steps: StepReport.array() })
export type StepListReport = typeof StepListReport.infer
/** One question of `flow questions --json` (and a row of .flow/state.db); absent values are null. */
export const Question = type({
  id: "string",
  task_id: "string",
  agent: "string | null",
  text: "string",
  /** null: an agent asked it; `budget:usd`, `budget:tokens`, `budget:minutes`: flow asks for more budget (docs/BUDGETS.md) */
  kind: "string | null",
  asked_at: "string",
  answer: "string | null",
  answered_at: "string | null",
  answered_by: "string | null",
})
export type Question = typeof Question.infer

/** `flow questions --json`: pending questions oldest first (with --all, every question). */
export const QuestionsReport = type({ questions: Question.array() })
export type QuestionsReport = typeof QuestionsReport.infer
/**
 * Tokens and cost summed from the agents' reports (docs/AGENTS.md "Tokens and cost"). A field is absent when
 * no report had it (Gemini and Codex report no cost); where nothing was reported at all, outputs say null.
 */
export const Usage = type({
  "input_tokens?": "number",
  "output_tokens?": "number",
  "cost_usd?": "number",
  /** true when some of cost_usd is flow's estimate from a model's price (the CLI reported tokens only: docs/BUDGETS.md) */
  "cost_estimated?": "boolean",
})
export type Usage = typeof Usage.infer

/** One unit of a budget: what was spent (dollars; tokens as billed; minutes of agent turns) and the cap. */
const BudgetLine = type({ spent: "number", cap: "number" })
/**
 * Spend beside the caps of a budget (docs/BUDGETS.md), per unit that has a cap: a task's over every run (its
 * cap with what people granted), an agent's and the run's in the latest run. null where nothing is capped.
 */
export const BudgetReport = type({ "usd?": BudgetLine, "tokens?": BudgetLine, "minutes?": BudgetLine })
export type BudgetReport = typeof BudgetReport.infer

/**
 * The latest `flow run`'s usage (since its start) and every run's; each null when nothing was reported.
 * `budget`: the latest run's spend beside flow.yaml's budget.run (null without one).
 */
export const RunUsage = type({ run: Usage.or("null"), total: Usage.or("null"), budget: BudgetReport.or("null") })
export type RunUsage = typeof RunUsage.infer

/** An agent parked by its CLI's usage limit: until when (ISO), the CLI's words, and the task that waits for it. */
export const Parked = type({ until: "string", reason: "string", task: "string | null" })
export type Parked = typeof Parked.infer

// --- list, show, next ---

const TaskStatusValue = type.enumerated(...TASK_STATUSES)

/** One task in list, next and show's subtasks. `phase` is the task's own field; `depth` 0 is top level. */
export const TaskSummary = type({
  id: "string",
  title: "string",
  status: TaskStatusValue,
  phase: "number | null",
  parent: "string | null",
  depth: "number",
  depends_on: "string[]",
  agent_name: "string | null",
  checkpoint: "boolean",
})
export type TaskSummary = typeof TaskSummary.infer

/**
 * The agent of a `flow run` that holds a task or held it last (lib/run/worked-by.ts, docs/CLI.md "Who works
 * on a task"), apart from `agent_name`, which only restricts who may take it. `working`: an agent of the live
 * run holds it; `stopped`: its run is gone and the next `flow run` resumes it; `ended`: the agent left it, at
 * `ended_at`, in `ended_status` (both null while an agent holds it).
 */
export const WorkedBy = type({
  agent: "string",
  /** on a shared project, the agent's machine (absent in files) */
  "machine?": "string",
  state: "'working' | 'stopped' | 'ended'",
  ended_at: "string | null",
  ended_status: "string | null",
})
export type WorkedBy = typeof WorkedBy.infer

/** One task of `flow list --json`: its summary and who works or worked on it (null when no run had it). */
export const ListedTask = TaskSummary.and({ worked_by: WorkedBy.or("null") })
export type ListedTask = typeof ListedTask.infer

/** `flow list --json`: one entry per group shown; `title` is the group's header line as printed. */
export const ListReport = type({
  phases: type({ phase: "number | null", title: "string", tasks: ListedTask.array() }).array(),
})
export type ListReport = typeof ListReport.infer

/** A task as stored in tasks.yaml (keys flow does not know included), without its `subtasks`. */
export const StoredTask = Task.omit("subtasks")
export type StoredTask = typeof StoredTask.infer

/**
 * A landing that waits for the person (docs/RUN.md, "Landing"): the task's merge passed, but something of theirs
 * is in the way of moving `target` in their checkout (an uncommitted change, a merge in progress, a git lock);
 * `reason` says what and what to do, `since` when it was first said. Only while the run that said it lives.
 */
export const LandingWait = type({ task: "string", target: "string", reason: "string", since: "string" })
export type LandingWait = typeof LandingWait.infer

/** One file a task's branch changes (docs/REVIEW.md, "Evidence"): lines added and removed, null for a binary file. */
export const EvidenceFile = type({ path: "string", insertions: "number | null", deletions: "number | null" })

/** One check that ran on a task's merge: its command, how long, its exit code (null: killed at its timeout) and its output's tail. */
export const EvidenceCheck = type({
  command: "string",
  passed: "boolean",
  exit_code: "number | null",
  timed_out: "boolean",
  seconds: "number",
  output_tail: "string",
  at: "string",
})
export type EvidenceCheck = typeof EvidenceCheck.infer

/**
 * What a task's landing stands on, fixed when its branch is handed to the merge queue (each fix round hands it
 * over again): the diff against its target, the check its merge must pass (null: none configured), who did the
 * work (the agent, how many times an agent started on it, how many fix rounds), and what it cost (tokens and
 * dollars as reported, seconds of agent turns). The merge commit's trailers are made from exactly this.
 */
export const LandingEvidence = type({
  branch: "string",
  target: "string",
  head: "string",
  diff: { files: EvidenceFile.array(), insertions: "number", deletions: "number" },
  check: "string | null",
  agent: "string | null",
  attempts: "number",
  fix_rounds: "number",
  usage: Usage.or("null"),
  agent_seconds: "number | null",
})
export type LandingEvidence = typeof LandingEvidence.infer

/**
 * A task's evidence (docs/REVIEW.md, "Evidence"), for a task handed to the merge queue: what its landing stands
 * on, the checks that ran on its merges since its agent last started on it, and how its candidate left the
 * queue: `state` waiting (in line, or its run stopped before a verdict), landed (`commit`: the merge, null when
 * its work was in the target already) or failed; `queue` the time from the agent's done to the verdict.
 */
export const TaskEvidence = LandingEvidence.and({
  task: "string",
  state: "'waiting' | 'landed' | 'failed'",
  submitted_at: "string",
  commit: "string | null",
  checks: EvidenceCheck.array(),
  queue: type({ seconds: "number", checks: "number", thrown: "number" }).or("null"),
})
export type TaskEvidence = typeof TaskEvidence.infer

/**
 * `flow show --json`. `task` is the record as stored in tasks.yaml (keys flow does not know included) without
 * its `subtasks`; the rest is derived: every descendant in file order, each dependency with its status, the
 * tasks depending on it, the tasks it validates, its parent's id, its phase (its own, else the nearest
 * ancestor's), that phase's title in plan.md, the tokens and cost its agents reported, and the agent that
 * works or worked on it.
 */
export const ShowReport = type({
  task: StoredTask,
  subtasks: TaskSummary.array(),
  dependencies: type({ id: "string", status: TaskStatusValue }).array(),
  dependents: "string[]",
  validates: "string[]",
  parent: "string | null",
  phase: "number | null",
  phase_title: "string | null",
  /** tokens and cost its agents reported (this task's turns only, not its subtasks'); null when none */
  usage: Usage.or("null"),
  /** its spend beside its budget (flow.yaml's budget.task, its own `budget:`, what people granted); null when uncapped */
  budget: BudgetReport.or("null"),
  worked_by: WorkedBy.or("null"),
  /** what its landing waits for in the live run; null when it does not wait */
  landing_wait: LandingWait.or("null"),
  /** what its landing stands on and went through, once it was handed to the merge queue; null before */
  evidence: TaskEvidence.or("null"),
})
export type ShowReport = typeof ShowReport.infer

/**
 * A candidate whose merge passed its check and waits for its reviewer (docs/REVIEW.md, "The review gate"):
 * the branch's commit `head` the decision will be on, its target, since when it is in the queue.
 */
export const WaitingReview = type({
  task: "string",
  title: "string",
  branch: "string",
  head: "string",
  target: "string",
  /** `person`, or the agent that reviews it (flow.yaml `review`); `person` once that agent exited without deciding */
  reviewer: "string",
  since: "string",
})
export type WaitingReview = typeof WaitingReview.infer

/** `flow review --json` and the MCP tool flow_review: what waits for review, in queue order. */
export const ReviewsReport = type({ reviews: WaitingReview.array() })
export type ReviewsReport = typeof ReviewsReport.infer

/**
 * `flow review <id> --json` and flow_review_show: the waiting review, the task's evidence (null: none recorded)
 * and its diff against the target (`git diff <target>...<head>`, as git prints it).
 */
export const ReviewReport = type({ review: WaitingReview, evidence: TaskEvidence.or("null"), diff: "string" })
export type ReviewReport = typeof ReviewReport.infer

/**
 * A reviewer's decision (`flow review <id> approve|changes --json`, flow_review_approve, flow_review_changes),
 * on the branch's commit `head`: `comment` is what the agent is asked to change (null for approve), `by` who decided.
 */
export const ReviewDecision = type({
  task: "string",
  head: "string",
  decision: "'approve' | 'changes'",
  comment: "string | null",
  by: "string",
  at: "string",
})
export type ReviewDecision = typeof ReviewDecision.infer

/** `flow next --json`: the available tasks in the order they should be taken. */
export const NextReport = type({ tasks: TaskSummary.array() })
export type NextReport = typeof NextReport.infer

/**
 * A live `flow run` (docs/FLEET.md, "What each command shows"): its pid and since when it lives (ISO); on a
 * shared project also the machine it runs on (absent in files: the run is this clone's).
 *
 * Where a report has `run`, it is the one live run in files (the holder of this clone's .flow/run.lock, or
 * null) and, on a shared project, where many runs may live at once, the oldest of them (null when none lives);
 * a shared project's report also has `runs`, every live run, oldest first (never in files).
 */
export const LiveRun = type({ pid: "number", since: "string", "machine?": "string" })
export type LiveRun = typeof LiveRun.infer

/**
 * `flow agents --json`. On a shared project only (absent in files, whose output is as it always was): `run`
 * and `runs` (LiveRun), and for each agent (one per machine and name: two machines' runs may name their agents
 * alike) its `machine` (null: an agent of flow.yaml that has worked on no machine yet) and `working`, whether it
 * is a live run's (a live run of its machine wrote its record since it took the lock).
 */
export const AgentsReport = type({
  "run?": LiveRun.or("null"),
  "runs?": LiveRun.array(),
  agents: type({
    name: "string",
    cli: "string | null",
    current: type({ id: "string", status: "string" }).or("null"),
    completed: "number",
    /** tokens and cost the agent reported over every run; null when none */
    usage: Usage.or("null"),
    /** its spend in the latest run beside flow.yaml's budget.agent; null without one */
    budget: BudgetReport.or("null"),
    /** parked by its CLI's usage limit (until a time still to come); null when not */
    parked: Parked.or("null"),
    "machine?": "string | null",
    "working?": "boolean",
  }).array(),
})
export type AgentsReport = typeof AgentsReport.infer

// --- the commands that change tasks ---

/**
 * `flow ready|start|done|block|todo|note|assign|step start|step done --json`: what the one write did.
 * `changes` are the status lines of the text output, in order ([] when nothing moved: the task was already
 * there, or the command changes no status); `tasks` are the command's task and each task a change names (a
 * step's task for a step), as stored after the write; `notes` are what the text output says on stderr.
 */
export const WriteReport = type({
  changes: type({ id: "string", from: "string", to: "string", reason: "string | null" }).array(),
  tasks: StoredTask.array(),
  notes: "string[]",
})
export type WriteReport = typeof WriteReport.infer

// --- generate, plan, refine ---

/** A note about plan.md or PRD.md: `line` is the line in that file. */
export const PlanNote = type({ severity: "'error' | 'warning'", "line?": "number", message: "string", "hint?": "string" })
export type PlanNote = typeof PlanNote.infer

/**
 * `flow generate --json`. With errors in the plan nothing is written and the counts are 0. `removed` names
 * the tasks that are gone with the status they had; `text` is the would-be tasks.yaml, with --dry-run only.
 */
export const GenerateReport = type({
  plan: "string",
  file: "string",
  written: "boolean",
  dry_run: "boolean",
  tasks: "number",
  phases: "number",
  added: "string[]",
  removed: type({ id: "string", status: "string" }).array(),
  kept: "string[]",
  /** kept ids that were ready_for_agent and are todo again: the plan gave them a dependency that is not done */
  requeued: "string[]",
  /** the ids of the phases' joins: a phase ending in several sections, as one task the next phase waits for (docs/PLANNING.md, "the gate rule") */
  joins: "string[]",
  notes: PlanNote.array(),
  /** the generated graph's parallelism; absent when the plan has errors */
  "parallelism?": Parallelism,
  "text?": "string",
  /** with --enrich: the agent, and the ids whose instructions or criteria it changed */
  "enriched_by?": "string",
  "enriched?": "string[]",
})
export type GenerateReport = typeof GenerateReport.infer

/**
 * `flow plan --json`. `written_by` is the agent's name, or "offline" for the skeleton; `reason` says why that
 * one; `notes` are about PRD.md (what the skeleton lacks) and plan.md (its shape as `flow generate` reads it).
 */
export const PlanReport = type({
  file: "string",
  written_by: "string",
  reason: "string",
  phases: "number",
  sections: "number",
  backup: "string | null",
  seconds: "number",
  notes: PlanNote.and({ file: "'PRD.md' | 'plan.md'" }).array(),
})
export type PlanReport = typeof PlanReport.infer

/**
 * `flow refine --json`: the offline review. `change` is the suggested fix as lines: `remove` lines from
 * `line` on are replaced by `insert` (remove 0: inserted before `line`); null when only a person can write it.
 */
export const RefineReport = type({
  file: "string",
  /** PRD.md only: the heading taken for each of flow's recommended sections it found (docs/PLANNING.md, "How PRD.md is read") */
  "sections?": type({ section: "string", heading: "string", line: "number" }).array(),
  findings: type({
    rule: "string",
    line: "number | null",
    message: "string",
    suggestion: "string",
    change: type({ line: "number", remove: "number", insert: "string[]" }).or("null"),
  }).array(),
})
export type RefineReport = typeof RefineReport.infer

// --- flow view's JSON API (lib/view/app.ts, docs/VIEW.md) ---

/** One task of the inspector's graph: its `flow list --json` form and what the page draws besides. */
export const GraphTask = ListedTask.and({
  validation_task_id: "string | null",
  steps: { done: "number", total: "number" },
  /** a checkpoint whose dependencies and subtasks are done: it waits for a person (SPEC 3.2 rule 5) */
  review: "boolean",
})
export type GraphTask = typeof GraphTask.infer

/** GET /api/tasks: `flow list --json` (every task) with the version, the layout key and the file's error. */
export const ViewTasksReport = type({
  version: "number",
  project: "string",
  /** why tasks.yaml cannot be read now; the tasks are then the last valid ones */
  error: "string | null",
  layout_key: "string",
  phases: type({ phase: "number | null", title: "string", tasks: GraphTask.array() }).array(),
  parallelism: Parallelism,
})
export type ViewTasksReport = typeof ViewTasksReport.infer

/** GET /api/tasks/:id: `flow show --json` and the prompts an agent receives for the task. */
export const ViewTaskReport = ShowReport.and({
  prompt: "string",
  resume_prompt: "string | null",
  /** when its agent's usage limit resets: the task waits for it (ISO); null when not parked */
  parked_until: "string | null",
})
export type ViewTaskReport = typeof ViewTaskReport.infer

// --- dashboard ---

/**
 * The merge queues of the live or last run (lib/landing/queue-report.ts, docs/RUN.md "Merge queue"), one per target
 * branch that has candidates: those still in line in queue order, then those that failed out of it. `on_top_of`
 * names the candidates ahead whose merges a check was built on ([] on the target itself, or not built yet);
 * `reason` says why it failed or was rebuilt; `seconds` is how long its last check took.
 */
export const MergeQueueReport = type({
  target: "string",
  candidates: type({
    task: "string",
    state: "'waiting' | 'checking' | 'passed' | 'failed'",
    reason: "string | null",
    on_top_of: "string[]",
    seconds: "number | null",
    /** the machine that checks (or checked) it, in a fleet; null in files */
    machine: "string | null",
    /** when it joined the line (UTC ISO time) */
    since: "string | null",
  }).array(),
}).array()
export type MergeQueueReport = typeof MergeQueueReport.infer

/** `flow view`'s GET /api/queue: the same merge queues (docs/VIEW.md). */
export const ViewQueueReport = type({ queue: MergeQueueReport })
export type ViewQueueReport = typeof ViewQueueReport.infer

const statusCounts = Object.fromEntries(TASK_STATUSES.map((s) => [s, "number"])) as { [S in (typeof TASK_STATUSES)[number]]: "number" }

/**
 * `flow dashboard --json`: one snapshot (docs/DASHBOARD.md). `counts` has every status, subtasks included.
 * `running` are the assigned and in-progress tasks in file order: `agent` is the one a run has working on it
 * (else the task's agent_name), `seconds` the time since started_at, `step` the current step's position,
 * `live` whether the run that has it is still alive (null when no run recorded it). `recent` are the last
 * 10 done tasks by completed_at, newest first. `review` names the checkpoints waiting for a person, `blocked`
 * the blocked tasks in file order with the first line of their last note (why it was blocked); `run` is
 * the live `flow run` process, if any. `usage`: tokens and cost of the latest run and of all runs; each running
 * task's `usage` is its own so far (null where nothing was reported). `queue`: the merge queues (MergeQueueReport).
 */
export const DashboardReport = type({
  project: "string",
  at: "string",
  counts: type(statusCounts).and({ total: "number", percent_done: "number" }),
  /** per phase group as `flow list` groups tasks; `title` is list's header line; [] when no task has a phase */
  phases: type({ phase: "number | null", title: "string", done: "number", running: "number", total: "number" }).array(),
  running: type({
    id: "string",
    title: "string",
    phase: "number | null",
    status: TaskStatusValue,
    agent: "string | null",
    started_at: "string | null",
    seconds: "number | null",
    step: type({ current: "number", total: "number" }).or("null"),
    live: "boolean | null",
    usage: Usage.or("null"),
    budget: BudgetReport.or("null"),
    /** when its agent's usage limit resets: the task waits for it (ISO); null when not parked */
    parked_until: "string | null",
  }).array(),
  recent: type({ id: "string", title: "string", phase: "number | null", completed_at: "string", seconds_ago: "number" }).array(),
  questions: "number",
  review: "string[]",
  blocked: type({ id: "string", title: "string", note: "string | null" }).array(),
  run: LiveRun.or("null"),
  "runs?": LiveRun.array(),
  usage: RunUsage,
  queue: MergeQueueReport,
  /** the landings of the live run that wait for the person, oldest first */
  landing: LandingWait.array(),
  /** the merges that wait for their reviewer, in queue order (flow review --json's `reviews`) */
  reviews: WaitingReview.array(),
})
export type DashboardReport = typeof DashboardReport.infer

/** `flow prompt <task_id> --json`: the exact text an agent receives, and which of the two prompts it is. */
export const PromptReport = type({
  task_id: "string",
  /** task: the whole prompt a session starts with; resume: the shorter one resuming it for the current step */
  kind: "'task' | 'resume'",
  /** the step the prompt is for (the task's current step), or null when the task has no step left or none at all */
  step_id: "string | null",
  prompt: "string",
})
export type PromptReport = typeof PromptReport.infer

/** `flow share --json`: where the project went (the URL without its password) and what was imported. */
export const ShareReport = type({ database: "string", project: "string", tasks: "number", questions: "number", events: "number" })
export type ShareReport = typeof ShareReport.infer

/** `flow export --json`: the file written, its task count, and whether its bytes changed. */
export const ExportReport = type({ file: "string", tasks: "number", written: "boolean" })
export type ExportReport = typeof ExportReport.infer

/** `flow unshare --json`: the export it made, the run state written back, and whether the database's copy was deleted. */
export const UnshareReport = ExportReport.and({
  database: "string",
  project: "string",
  dropped: "boolean",
  questions: "number",
  events: "number",
})
export type UnshareReport = typeof UnshareReport.infer
