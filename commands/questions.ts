import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { listQuestions } from "../lib/ops/questions"
import { formatQuestion } from "../lib/terminal/question-format"
import * as clock from "../lib/cli/clock"

export const meta = {
  usage: "flow questions [--all] [--json]",
  description: `Lists the questions agents asked that wait for an answer, oldest first: the id, the task, the agent
and how long ago it was asked, then the text. Answer one with 'flow answer <question_id> <text>'.`,
  options: {
    all: { type: "boolean", help: "also show answered questions, with their answers" },
    json: { type: "boolean", help: "print the questions as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const report = await listQuestions(findProject(ctx), values.all)
  const { questions } = report
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  if (questions.length === 0) {
    ctx.stdout(values.all ? "No questions.\n" : "No pending questions.\n")
    return
  }
  const now = clock.now()
  ctx.stdout(`${questions.map((q) => formatQuestion(q, now)).join("\n")}`)
}
