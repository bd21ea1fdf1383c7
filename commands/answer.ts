import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { answerer, openExistingState } from "../lib/run/state-db"
import { ago } from "../lib/terminal/question-format"
import { closest } from "../lib/cli/suggest"

export const meta = {
  usage: "flow answer <question_id> <text> [--force]",
  description: `Records the answer to a question an agent asked ('flow questions' lists them); an agent waiting with
'flow ask --wait' prints it and carries on. Several words are joined with spaces. The answer is signed
with $USER. A question is answered once: --force replaces an answer (an agent may already have read it).
A question flow asks when a task reaches its budget takes an amount to add (flow answer q-7 10, or $10;
tokens as 500k, minutes as 30m) or 'block' (docs/BUDGETS.md).`,
  options: {
    force: { type: "boolean", help: "replace the answer of a question that already has one" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [given, ...words] = positionals
  if (!given) throw usage("missing <question_id>", `usage: ${meta.usage}`)
  const text = words.join(" ").trim()
  if (!text) throw usage("missing <text>: the answer is empty", `usage: ${meta.usage}`)
  // `3` is accepted for `q-3`: a person types the number they see.
  const id = /^\d+$/.test(given) ? `q-${given}` : given
  const by = answerer(ctx.env)

  const db = await openExistingState(findProject(ctx))
  if (!db) throw new FlowError(`no question '${id}': no question has been asked in this project`, undefined, "agents ask with 'flow ask <task_id> <text>'")
  using open = db
  const { before, after } = await open.questions.answer(id, text, by, values.force)
  if (!before) {
    const pending = (await open.questions.pending()).map((q) => q.id)
    const near = closest(id, pending)
    throw new FlowError(
      `no question '${id}'`,
      undefined,
      near
        ? `did you mean '${near}'? 'flow questions' lists the pending ones`
        : pending.length > 0
          ? `pending: ${pending.join(", ")}`
          : "no question is pending",
    )
  }
  if (!after) {
    throw new FlowError(
      `${id} was already answered${before.answered_by ? ` by ${before.answered_by}` : ""} ${ago(before.answered_at!, Date.now())}: ${JSON.stringify(before.answer)}`,
      undefined,
      "a waiting agent may have read that answer already; pass --force to replace it",
    )
  }
  ctx.stdout(`Answered ${id} (task ${after.task_id}).\n`)
}
