// `flow unshare [--drop]`: a shared project back to files (docs/FLEET.md).
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { unshareProject } from "../lib/ops/share"

export const meta = {
  usage: "flow unshare [--drop] [--json]",
  description: `Moves a shared project back to files: writes tasks.yaml from the database (as 'flow export' does) and
.flow/state.db from its run state (questions, agents, events, the merge journal), then removes 'state:' and
'project:' from flow.yaml. The database keeps the project (other machines still see it) unless --drop.`,
  options: {
    drop: { type: "boolean", help: "also delete the project from the database" },
    json: { type: "boolean", help: "print what was written as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const report = await unshareProject(findProject(ctx), { drop: values.drop === true })
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  ctx.stdout(
    `Wrote ${report.file} (${report.tasks} tasks) and .flow/state.db (${report.questions} questions, ${report.events} events); flow.yaml no longer names ${report.database}\n`,
  )
  ctx.stdout(
    report.dropped
      ? `Deleted project '${report.project}' from the database\n`
      : `The database keeps project '${report.project}' ('flow unshare --drop' deletes it)\n`,
  )
}
