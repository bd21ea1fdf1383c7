// flow.yaml `queue`: how the merge queue checks its candidates (docs/RUN.md, "Merge queue", "Batches"). `batch: N`
// checks up to N consecutive candidates as one merge; off (1) by default. `batch: auto` (sized from the recent
// failure rate) is not built yet: refused with what to write instead, rather than taken and ignored.
import { type } from "arktype"

export const QueueConfig = type({
  /** how many consecutive candidates are checked as one merge (1: one check per candidate, the default) */
  "batch?": type("number.integer >= 1").describe("a whole number >= 1 ('auto' is not supported yet: write a number, e.g. batch: 4)"),
})
export type QueueConfig = typeof QueueConfig.infer

/** The batch size of flow.yaml's `queue` (1 when it says none). */
export function batchOf(config: QueueConfig | undefined): number {
  return config?.batch ?? 1
}
