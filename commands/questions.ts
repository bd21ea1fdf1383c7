import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import type { Question, QuestionsReport } from "../lib/model/json-shapes"
import { findProject } from "../lib/cli/project"
import { formatQuestion } from "../lib/terminal/question-format"
import { openExistingState } from "../lib/run/state-db"

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
  // No database yet means no questions: reading must not create one.
  const db = await openExistingState(findProject(ctx))
  let questions: Question[] = []
  if (db) {
    using open = db
    questions = await (values.all ? open.questions.all() : open.questions.pending())
  }
  if (values.json) {
    const report: QuestionsReport = { questions }
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  if (questions.length === 0) {
    ctx.stdout(values.all ? "No questions.\n" : "No pending questions.\n")
    return
  }
  const now = Date.now()
  ctx.stdout(`${questions.map((q) => formatQuestion(q, now)).join("\n")}`)
}
