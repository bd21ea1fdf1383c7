import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { run as runProcess } from "../lib/cli/proc"
import { loadConfig } from "../lib/config/config"
import { GIT_ENV } from "../lib/git/git"
import { Workspaces } from "../lib/git/workspace"
import { readEvidence } from "../lib/run/evidence"
import { evidenceLines } from "../lib/run/evidence-text"
import { decide, waitingReviews, type WaitingReview } from "../lib/landing/review-gate"
import { answerer, type RunState } from "../lib/state/run-state"
import { openExistingState, openState } from "../lib/state/state"
import { openStore } from "../lib/store/open"
import type { TaskStore } from "../lib/store/store"
import { indexTasks, type Indexed } from "../lib/model/task-index"

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
  const config = loadConfig(project.dir)
  const store = await openStore(project)
  // No state yet: nothing was ever handed to a merge queue, so nothing waits (and nothing is created).
  const opened = await openExistingState(project)
  if (!opened && id === undefined) return list(ctx, [], values.json === true)
  using db = opened ?? (await openState(project))
  const waiting = await waitingReviews(config.review, store, db)
  if (id === undefined) return list(ctx, waiting, values.json === true)
  if (verb === undefined) return show(ctx, new Workspaces(project, { repo: config.repo }), store, db, waiting, id, values.json === true)
  if (verb !== "approve" && verb !== "changes") throw usage(`unknown decision '${verb}': approve or changes`, `usage: ${meta.usage}`)
  const comment = words.join(" ").trim()
  if (verb === "changes" && !comment) throw usage("missing <comment>: say what to change", `usage: ${meta.usage}`)
  if (verb === "approve" && comment) throw usage("approve takes no comment", `usage: ${meta.usage}`)
  const d = await decide(waiting, db, id, verb, verb === "changes" ? comment : null, answerer(ctx.env))
  if (values.json) return ctx.stdout(`${JSON.stringify(d, null, 2)}\n`)
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
    const lines = waiting.map((w) => `${w.task}: ${w.title} (${w.branch} at ${w.head.slice(0, 12)} into ${w.target}, its check passed)`)
    ctx.stdout(`${lines.join("\n")}\n'flow review <id>' shows one; 'flow review <id> approve' or 'flow review <id> changes "<comment>"' decides.\n`)
  }
}

async function show(ctx: Ctx, spaces: Workspaces, store: TaskStore, db: RunState, waiting: WaitingReview[], id: string, json: boolean): Promise<void> {
  const w = waiting.find((x) => x.task === id)
  if (!w)
    throw new FlowError(
      `task '${id}' does not wait for review`,
      undefined,
      waiting.length ? `waiting: ${waiting.map((x) => x.task).join(", ")}` : "nothing waits for review",
    )
  const evidence = await readEvidence(db, id)
  const repo = await spaces.repoOf((indexTasks((await store.read()).data).get(id) as Indexed).task)
  const range = `${w.target}...${w.head}`
  if (json) return ctx.stdout(`${JSON.stringify({ review: w, evidence }, null, 2)}\n`)
  ctx.stdout(`Review ${id}: ${w.title}\n${evidence ? `${evidenceLines(evidence).join("\n")}\n` : ""}`)
  if (ctx.interactive) {
    // git's own pager (core.pager, $GIT_PAGER, less) on the person's terminal.
    await Bun.spawn(["git", "-C", repo, "diff", range], { stdio: ["inherit", "inherit", "inherit"] }).exited
    return
  }
  const diff = await runProcess(["git", "-C", repo, "diff", range], { cwd: repo, env: GIT_ENV })
  ctx.stdout(diff.stdout)
}
