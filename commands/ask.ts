import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { parseDuration } from "../lib/cli/duration"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { askQuestion, waitForAnswer } from "../lib/ops/questions"

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
  // Listen for Ctrl-C before the question exists: Bun installs a signal handler a moment after it is
  // registered, and a person (or test) may press Ctrl-C as soon as the id is printed.
  const interrupt = values.wait ? new AbortController() : undefined
  const release = interrupt ? ctx.onInterrupt?.(() => interrupt.abort()) : undefined
  try {
    const question = await askQuestion(project, taskId, text, ctx.env.FLOW_AGENT)
    if (!interrupt) {
      ctx.stdout(`${question.id}\n`)
      return
    }
    // stdout carries only the answer, so an agent can use it as is.
    ctx.stderr(`Asked ${question.id}; waiting for the answer ('flow answer ${question.id} <text>')\n`)
    const answered = await waitForAnswer(project, question.id, "flow ask --wait", { timeoutMs, signal: interrupt.signal })
    ctx.stdout(answered.answer!.endsWith("\n") ? answered.answer! : `${answered.answer}\n`)
  } finally {
    release?.()
  }
}
