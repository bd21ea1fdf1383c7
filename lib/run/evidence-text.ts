// A task's evidence as `flow show` prints it (docs/REVIEW.md, "Evidence"): one section, what a person reads
// before trusting a landing. The JSON shape is TaskEvidence (lib/model/json-shapes.ts); this is its text.
import type { TaskEvidence } from "../model/json-shapes"
import { costText } from "./evidence"

/** How many lines of a check's output the text shows (the JSON holds the whole tail). */
const TAIL_LINES = 8

/** The `Evidence:` section of `flow show`. Its times stay in the JSON (UTC, as recorded): the text leaves them out rather than show a person UTC (docs/CLI.md, "Time"). */
export function evidenceLines(e: TaskEvidence): string[] {
  const landed = e.state === "landed" ? `landed into ${e.target}${e.commit ? ` as ${e.commit.slice(0, 12)}` : " (in the target already)"}` : e.state
  const out = [
    `Evidence: ${landed}, from ${e.branch} at ${e.head.slice(0, 12)}`,
    `  Diff: ${e.diff.files.length} file${e.diff.files.length === 1 ? "" : "s"}, +${e.diff.insertions} -${e.diff.deletions}`,
    ...e.diff.files.map((f) => `    ${f.insertions === null ? "binary" : `+${f.insertions} -${f.deletions}`}  ${f.path}`),
    `  Agent: ${e.agent ?? "none"} (attempts ${e.attempts}, fix rounds ${e.fix_rounds})`,
    `  Cost: ${costText(e.usage, e.agent_seconds)}`,
  ]
  if (e.checks.length === 0) out.push(`  Checks: ${e.check === null ? "none configured" : `${e.check}, none finished yet`}`)
  else out.push("  Checks:")
  for (const c of e.checks) {
    const how = c.passed ? "passed" : c.timed_out ? "timed out" : `failed (exit ${c.exit_code})`
    out.push(`    ${how} after ${c.seconds.toFixed(1)} s: ${c.command}`)
    const tail = c.output_tail.split("\n").filter((l) => l.trim() !== "")
    for (const line of tail.slice(-TAIL_LINES)) out.push(`      | ${line}`)
  }
  if (e.queue)
    out.push(
      `  Queue: ${e.queue.seconds.toFixed(1)} s from done to verdict, ${e.queue.checks} check${e.queue.checks === 1 ? "" : "s"}, ${e.queue.thrown} thrown away`,
    )
  return out
}
