import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { formatDuration, parseDuration } from "../lib/cli/duration"
import { Exit, FlowError, usage } from "../lib/cli/errors"
import type { Question } from "../lib/model/json-shapes"
import { findProject } from "../lib/cli/project"
import { openState, type StateDb } from "../lib/run/state-db"
import { indexTasks } from "../lib/model/task-index"
import { requireTask } from "../lib/graph/task-lookup"
import { readTasks } from "../lib/store/tasks"

export const meta = {
  usage: "flow ask <task_id> <text> [--wait] [--timeout <duration>]",
  description: `Raises a question about a task for a person to answer with 'flow answer'. Several words are
joined with spaces. The agent is taken from FLOW_AGENT (the orchestrator sets it).
Prints the question's id (q-1, q-2, ...). With --wait, prints the id on stderr instead, waits until the
question is answered and prints the answer on stdout: exit 0. When --timeout passes first, or on Ctrl-C,
the question stays pending (exit 1, or 130 on Ctrl-C).`,
  options: {
    wait: { type: "boolean", help: "wait for the answer and print it" },
    timeout: { type: "string", arg: "duration", help: "with --wait: give up after this long (90s, 30m, 2h, 1h30m)" },
  },
} as const

/** How often a waiting ask looks at the database's change counter (a cheap read of the WAL index). */
const POLL_MS = 100

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [taskId, ...words] = positionals
  if (!taskId) throw usage("missing <task_id>", `usage: ${meta.usage}`)
  const text = words.join(" ").trim()
  if (!text) throw usage("missing <text>: the question is empty", `usage: ${meta.usage}`)
  if (values.timeout !== undefined && !values.wait) throw usage("--timeout works only with --wait", `usage: ${meta.usage}`)
  const timeoutMs = values.timeout === undefined ? undefined : parseDuration(values.timeout, "--timeout")
  if (timeoutMs === 0) throw usage("--timeout must be longer than 0s", "leave --timeout out to wait until the question is answered")

  const project = findProject(ctx)
  requireTask(indexTasks((await readTasks(project)).data), taskId)
  // Listen for Ctrl-C before the question exists: Bun installs a signal handler a moment after it is
  // registered, and a person (or test) may press Ctrl-C as soon as the id is printed.
  const interrupt = values.wait ? listenForInterrupt(ctx) : undefined
  try {
    using db = await openState(project)
    const question = await db.questions.ask({ task_id: taskId, agent: ctx.env.FLOW_AGENT || null, text })
    if (!interrupt) {
      ctx.stdout(`${question.id}\n`)
      return
    }
    // stdout carries only the answer, so an agent can use it as is.
    ctx.stderr(`Asked ${question.id}; waiting for the answer ('flow answer ${question.id} <text>')\n`)
    const answered = await waitForAnswer(db, question.id, timeoutMs, interrupt)
    ctx.stdout(answered.answer!.endsWith("\n") ? answered.answer! : `${answered.answer}\n`)
    // The agent has the answer: the run must not hand it over again when the agent exits.
    await db.questions.delivered(taskId, [question.id], "flow ask --wait")
  } finally {
    interrupt?.stop()
  }
}

type Interrupt = { interrupted: boolean; promise: Promise<void>; stop: () => void }

function listenForInterrupt(ctx: Ctx): Interrupt {
  const { promise, resolve } = Promise.withResolvers<void>()
  const state: Interrupt = { interrupted: false, promise, stop: () => {} }
  state.stop =
    ctx.onInterrupt?.(() => {
      state.interrupted = true
      resolve()
    }) ?? (() => {})
  return state
}

/** Resolves once `id` has an answer; re-reads the question only when another process committed something. */
async function waitForAnswer(db: StateDb, id: string, timeoutMs: number | undefined, interrupt: Interrupt): Promise<Question> {
  const pending = `${id} stays pending: 'flow questions' lists it, and 'flow questions --all' shows its answer once given`
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + timeoutMs
  for (;;) {
    if (db.changed()) {
      const q = await db.questions.get(id)
      if (!q) throw new FlowError(`${id} is no longer in ${db.file}`, Exit.failure, "was .flow/state.db deleted? ask again")
      if (q.answer !== null) return q
    }
    if (interrupt.interrupted) throw new FlowError(`cancelled while waiting for the answer to ${id}`, Exit.cancelled, pending)
    const left = deadline - performance.now()
    if (left <= 0) throw new FlowError(`no answer to ${id} within ${formatDuration(timeoutMs!)}`, Exit.failure, pending)
    await Promise.race([Bun.sleep(Math.min(POLL_MS, left)), interrupt.promise])
  }
}
