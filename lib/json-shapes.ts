// Shapes of every --json output, as arktype types. Commands import only the inferred TS types
// (`import type`), so printing JSON never loads arktype; tests check real output against these values.
import { type } from "arktype"

export const Finding = type({
  severity: "'error' | 'warning'",
  message: "string",
  "line?": "number",
  "column?": "number",
  "hint?": "string",
  "task_id?": "string",
})
export type Finding = typeof Finding.infer

export const ValidateReport = type({
  file: "string",
  valid: "boolean",
  tasks: "number",
  errors: "number",
  warnings: "number",
  findings: Finding.array(),
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
  asked_at: "string",
  answer: "string | null",
  answered_at: "string | null",
  answered_by: "string | null",
})
export type Question = typeof Question.infer

/** `flow questions --json`: pending questions oldest first (with --all, every question). */
export const QuestionsReport = type({ questions: Question.array() })
export type QuestionsReport = typeof QuestionsReport.infer
