import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import type { WaitingReview } from "../lib/model/json-shapes"
import { reviewDecide, reviewList, reviewShow } from "../lib/ops/review"
import { evidenceLines } from "../lib/run/evidence-text"

export const meta = {
  usage: 'flow review [<task_id> [approve | changes "<comment>"]] [--json]',
  description: `The review gate (flow.yaml 'review', docs/REVIEW.md): a task's merge that passed its check waits here
for its reviewer before it lands, while the merge queue checks the candidates behind it. Without an id, lists
what waits. With an id, shows its evidence and its diff (through git's pager in a terminal). 'approve' lets it
land; 'changes "<comment>"' sends the comment to the task's agent, in its session, as a fix round (counted
against fix_attempts): its new work comes back to the queue and waits for review again.`,
  options: {
    json: { type: "boolean", help: "print the list, the review or the decision as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [id, verb, ...words] = positionals
  const project = findProject(ctx)
  const json = values.json === true
  if (id === undefined) return list(ctx, (await reviewList(project)).reviews, json)
  if (verb === undefined) return show(ctx, await reviewShow(project, id), json)
  if (verb !== "approve" && verb !== "changes") throw usage(`unknown decision '${verb}': approve or changes`, `usage: ${meta.usage}`)
  const comment = words.join(" ").trim()
  if (verb === "changes" && !comment) throw usage("missing <comment>: say what to change", `usage: ${meta.usage}`)
  if (verb === "approve" && comment) throw usage("approve takes no comment", `usage: ${meta.usage}`)
  const d = await reviewDecide(project, id, verb, verb === "changes" ? comment : null, ctx.env)
  if (json) return ctx.stdout(`${JSON.stringify(d, null, 2)}\n`)
  ctx.stdout(
    verb === "approve"
      ? `Approved ${id} (${d.head.slice(0, 12)}): it lands when the merge queue gets to it.\n`
      : `Asked for changes to ${id}: its agent gets the comment as a fix round, and its new work comes back here.\n`,
  )
}

function list(ctx: Ctx, waiting: WaitingReview[], json: boolean): void {
  if (json) ctx.stdout(`${JSON.stringify({ reviews: waiting }, null, 2)}\n`)
  else if (waiting.length === 0) ctx.stdout("Nothing waits for review.\n")
  else {
    const by = (w: WaitingReview) => (w.reviewer === "person" ? "" : `; agent ${w.reviewer} reviews it`)
    const lines = waiting.map((w) => `${w.task}: ${w.title} (${w.branch} at ${w.head.slice(0, 12)} into ${w.target}, its check passed${by(w)})`)
    ctx.stdout(`${lines.join("\n")}\n'flow review <id>' shows one; 'flow review <id> approve' or 'flow review <id> changes "<comment>"' decides.\n`)
  }
}

async function show(ctx: Ctx, { report, repo, range }: Awaited<ReturnType<typeof reviewShow>>, json: boolean): Promise<void> {
  if (json) return ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
  const { review, evidence } = report
  ctx.stdout(`Review ${review.task}: ${review.title}\n${evidence ? `${evidenceLines(evidence).join("\n")}\n` : ""}`)
  if (ctx.interactive) {
    // git's own pager (core.pager, $GIT_PAGER, less) on the person's terminal.
    await Bun.spawn(["git", "-C", repo, "diff", range], { stdio: ["inherit", "inherit", "inherit"] }).exited
    return
  }
  ctx.stdout(report.diff)
}
