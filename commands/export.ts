// `flow export [<file>]`: the task graph as tasks.yaml text (docs/FLEET.md): a shared project's graph written
// onto the text it was imported from, so the file's comments stay where their tasks still are.
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { exportTasks } from "../lib/ops/share"

export const meta = {
  usage: "flow export [<file>] [--json]",
  description: `Writes the task graph as tasks.yaml text to <file> (default: the project's tasks.yaml), or to stdout
with '-'. For a shared project (flow share) that is the database's graph, written onto the tasks.yaml it was
imported from (or last generated): comments, key order and quoting are kept for every task still there, and
nothing changes when nothing changed. For a project in files it copies tasks.yaml.`,
  options: {
    json: { type: "boolean", help: "print what was written as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  if (positionals[0] === "-") {
    const { openStore } = await import("../lib/store/open")
    ctx.stdout(await (await openStore(project)).text())
    return
  }
  const report = await exportTasks(project, ctx.cwd, positionals[0])
  if (values.json) ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
  else ctx.stdout(report.written ? `Wrote ${report.file}: ${report.tasks} tasks\n` : `${report.file} is up to date: ${report.tasks} tasks\n`)
}
