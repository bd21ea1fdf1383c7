import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { answerQuestion } from "../lib/ops/questions"
import { answerer } from "../lib/state/run-state"

export const meta = {
  usage: "flow answer <question_id> <text> [--force]",
  description: `Records the answer to a question an agent asked ('flow questions' lists them); an agent waiting with
'flow ask --wait' prints it and carries on. Several words are joined with spaces. The answer is signed
with $USER. A question is answered once: --force replaces an answer (an agent may already have read it).
A question flow asks when a task reaches its budget takes an amount to add (flow answer q-7 10, or $10;
tokens as 500k or 2M, minutes as 30m; a plain number is in the question's unit) or 'block'; an amount of
another unit, or one that leaves the task over its cap, is refused, saying what clears it (docs/BUDGETS.md).`,
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
  const after = await answerQuestion(findProject(ctx), given, text, answerer(ctx.env), values.force)
  ctx.stdout(`Answered ${after.id} (task ${after.task_id}).\n`)
}
