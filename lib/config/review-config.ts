// flow.yaml `review`: who approves a task's merge before it lands (docs/REVIEW.md, "The review gate"): a person,
// or an agent of flow.yaml's `agents` by its name. An agent reviewer is a fresh session of its CLI that decides
// with `flow review <id> approve|changes` as a person does; it must be a different agent from the author (the
// point is a second opinion, ideally another vendor's), so an agent named here takes no task of its own in a run.
// Checked at load (config.ts): a name that is no agent of flow.yaml is an error at its position.
import { type } from "arktype"
import { AGENT_NAME } from "../cli/agent-name"
import { closest } from "../cli/suggest"

/** Who reviews: `person` (someone runs `flow review <id> approve`), or the name of an agent of flow.yaml. */
export const Reviewer = type("'person'").or(type(AGENT_NAME).describe("person, or the name of an agent of flow.yaml's agents"))
export type Reviewer = typeof Reviewer.infer

/**
 * `review: person` (every task), or per phase and per task: `{ default?, phases: { "2": codex }, tasks: { api: person } }`.
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

/** Every entry of `review` with its path in flow.yaml (under `review`). */
function entries(config: ReviewConfig | undefined): { path: string[]; reviewer: string }[] {
  if (config === undefined) return []
  if (typeof config === "string") return [{ path: [], reviewer: config }]
  return [
    ...(config.default === undefined ? [] : [{ path: ["default"], reviewer: config.default }]),
    ...Object.entries(config.phases ?? {}).map(([k, reviewer]) => ({ path: ["phases", k], reviewer })),
    ...Object.entries(config.tasks ?? {}).map(([k, reviewer]) => ({ path: ["tasks", k], reviewer })),
  ]
}

/** The agents `review` names anywhere: reviewers, which a run keeps out of its authors. */
export function reviewerAgents(config: ReviewConfig | undefined): Set<string> {
  return new Set(entries(config).flatMap((e) => (e.reviewer === "person" ? [] : [e.reviewer])))
}

/** The entries of `review` naming no agent of flow.yaml (`agents`: their names), each with its path and a hint. */
export function unknownReviewers(config: ReviewConfig | undefined, agents: readonly string[]): { path: string[]; message: string; hint: string }[] {
  return entries(config)
    .filter((e) => e.reviewer !== "person" && !agents.includes(e.reviewer))
    .map((e) => {
      const near = closest(e.reviewer, [...agents])
      return {
        path: e.path,
        message: `review${e.path.map((k) => `.${k}`).join("")}: '${e.reviewer}' is not an agent of flow.yaml (agents: ${agents.join(", ") || "none"})`,
        hint: near ? `did you mean '${near}'?` : "name 'person', or an agent listed under 'agents:' by its name (docs/REVIEW.md)",
      }
    })
}
