import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { addNote } from "../lib/ops/change"
import { agentFence } from "../lib/ops/fence"

export const meta = {
  usage: "flow note <task_id> <text> [--json]",
  description: "Appends <text> to the task's ai_notes. Several words are joined with spaces. A note holds at most 512 KiB: notes go into agents' prompts.",
  options: {
    json: { type: "boolean", help: "print the task as the write left it: {changes, tasks, notes} (lib/model/json-shapes.ts WriteReport)" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [id, ...words] = positionals
  if (!id) throw usage("missing <task_id>", `usage: ${meta.usage}`)
  const text = words.join(" ").trim()
  if (!text) throw usage("missing <text>: the note is empty", `usage: ${meta.usage}`)
  const report = await addNote(findProject(ctx), id, text, agentFence(ctx.env))
  ctx.stdout(values.json ? `${JSON.stringify(report, null, 2)}\n` : `Added a note to ${id}\n`)
}
