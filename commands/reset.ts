// `flow reset <task_id>` and `flow reset --stuck [--older-than <duration>]` (SPEC 3.2: a stuck task goes back to todo).
import { isoSeconds, parseTimestamp } from "../lib/cli/clock"
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { formatDuration, parseDuration } from "../lib/cli/duration"
import { findProject } from "../lib/cli/project"
import { indexTasks } from "../lib/model/task-index"
import { refuseUnderLiveAgent, type SetAside, setAsideAttempt } from "../lib/ops/task-worktree"
import { openStore } from "../lib/store/open"
import { findStuck, formatChange, resetTask, type Change } from "../lib/store/transitions"
import * as clock from "../lib/cli/clock"

/** Agent sessions that make progress finish or fail well within this; see docs/STATUS-RULES.md. */
const DEFAULT_STUCK = "2h"

export const meta = {
  usage: "flow reset <task_id> | flow reset --stuck [--older-than <duration>]",
  description: `Puts a task back to todo for a retry: removes its started_at and completed_at, and sets its steps
back to pending. Its agent_name, notes and subtasks are kept. The retry starts from the merge target as it
is now: the task's branch from the earlier attempt (with what its worktree had not committed) is kept as
refs/flow/reset/<branch>/<commit>, named in the output, and its worktree is removed. Refused while an agent
of a live run is at work on the task. When the task was done, its ready_for_agent dependents go back to
todo in the same write; dependents already assigned or in progress are named in a warning.
With --stuck, resets the status of every in_progress task whose started_at is older than --older-than
(default ${DEFAULT_STUCK}), all in one write; their branches stay, and the next run resumes them there. An
in_progress task without started_at is listed, not reset.`,
  options: {
    stuck: { type: "boolean", help: "reset every task in progress for longer than --older-than" },
    "older-than": { type: "string", arg: "duration", help: `with --stuck: 90s, 30m, 2h, 1d, 1h30m (default ${DEFAULT_STUCK})` },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (values.stuck) {
    if (positionals.length > 0) throw usage(`reset takes a <task_id> or --stuck, not both (got '${positionals[0]}' and --stuck)`, `usage: ${meta.usage}`)
    return resetStuck(ctx, values["older-than"] ?? DEFAULT_STUCK)
  }
  if (values["older-than"] !== undefined) throw usage("--older-than works only with --stuck", `usage: ${meta.usage}`)
  if (positionals.length === 0) throw usage("missing <task_id> (or --stuck)", `usage: ${meta.usage}`)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const id = positionals[0]
  const project = findProject(ctx)
  const store = await openStore(project)
  // An unknown id is left to the write below, which names the closest one.
  const task = indexTasks((await store.read()).data).get(id)?.task
  let aside: SetAside | undefined
  if (task) {
    await refuseUnderLiveAgent(project, id, "a retry from the target", `stop that run first (q or Ctrl-C where it runs), then 'flow reset ${id}' again`)
    // The branch first: a retry on it would start from the first attempt's commit, without what merged since.
    aside = await setAsideAttempt(project, task, { out: (line) => ctx.stdout(`${line}\n`), warn: (line) => ctx.stderr(`warning: ${line}\n`) })
  }
  const now = isoSeconds()
  const { changes, warnings } = await store.mutate(`flow reset ${id}`, (editor) => resetTask(editor, id, now, "reset", true))
  if (changes.length === 0) ctx.stdout(aside ? `${id} is already todo\n` : `${id} is already todo; nothing to reset\n`)
  for (const c of changes) ctx.stdout(`${formatChange(c)}\n`)
  if (aside) ctx.stdout(`${id}: its branch ${aside.branch} is kept as ${aside.ref}; the retry starts from ${aside.target} as it is now\n`)
  for (const w of warnings) ctx.stderr(`warning: ${w}\n`)
}

async function resetStuck(ctx: Ctx, olderThan: string): Promise<void> {
  const thresholdMs = parseDuration(olderThan, "--older-than")
  const threshold = formatDuration(thresholdMs)
  const nowMs = clock.nowMs(ctx.env)
  const store = await openStore(findProject(ctx))
  const { changes, undated } = await store.mutate("flow reset --stuck", (editor) => {
    const scan = findStuck(editor, nowMs, thresholdMs, parseTimestamp)
    // Only in_progress tasks are stuck, so no reset here reopens a done task's dependents.
    const now = isoSeconds(new Date(nowMs))
    const changes: Change[] = scan.stuck.flatMap(({ id, forMs }) => resetTask(editor, id, now, `in progress for ${formatDuration(forMs)}`).changes)
    return { changes, undated: scan.undated }
  })
  for (const id of undated) {
    ctx.stderr(`warning: ${id} is in_progress without a started_at, so how long it has been stuck is unknown; if it is, run 'flow reset ${id}'\n`)
  }
  if (changes.length === 0) ctx.stdout(`No stuck tasks (in progress longer than ${threshold}).\n`)
  for (const c of changes) ctx.stdout(`${formatChange(c)}\n`)
}
