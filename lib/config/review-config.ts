// flow.yaml `review`: who approves a task's merge before it lands (docs/REVIEW.md, "The review gate"). A person
// today; an agent reviewer (another CLI than the author's) is the next part of issue 37, and the schema takes
// only what flow does.
import { type } from "arktype"

/** Who reviews: `person` (someone runs `flow review <id> approve`). */
export const Reviewer = type("'person'")
export type Reviewer = typeof Reviewer.infer

/**
 * `review: person` (every task), or per phase and per task: `{ default?, phases: { "2": person }, tasks: { api: person } }`.
 * A task's own entry wins over its phase's, which wins over the default.
 */
export const ReviewConfig = Reviewer.or({
  "default?": Reviewer,
  "phases?": type({ "[/^\\d+$/]": Reviewer }),
  "tasks?": type({ "[string]": Reviewer }),
})
export type ReviewConfig = typeof ReviewConfig.infer

/** Who must approve the task's merge before it lands (`phase`: its phase, its top-level task's for a subtask); null: nobody. */
export function reviewerOf(config: ReviewConfig | undefined, taskId: string, phase: number | null): Reviewer | null {
  if (config === undefined) return null
  if (typeof config === "string") return config
  return config.tasks?.[taskId] ?? (phase === null ? undefined : config.phases?.[`${phase}`]) ?? config.default ?? null
}
