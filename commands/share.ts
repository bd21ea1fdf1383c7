// `flow share <postgres-url> [--project <key>]`: the project's tasks and run state into a shared PostgreSQL
// database, so flow on many machines works on one graph (docs/FLEET.md).
import { parse, positionalsExactly } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { findProject } from "../lib/cli/project"
import { shareProject } from "../lib/ops/share"

export const meta = {
  usage: "flow share <postgres-url> [--project <key>] [--json]",
  description: `Imports tasks.yaml (every field, comments kept for 'flow export') and .flow/state.db (questions,
agents, events with tokens and cost, the merge journal) into the PostgreSQL database at <postgres-url>, and
writes 'state: <url>' (without its password) and 'project: <key>' into flow.yaml. From then on every flow
command of this project, on any machine with a clone of it, reads and changes the database; tasks.yaml and
state.db are left as they were and no longer read. The password comes from the URL given here, then
FLOW_DATABASE_URL, then PGPASSWORD; it is never written or printed. TLS settings go in the URL
(?sslmode=require). The key defaults to the project folder's name; one database holds many projects.
'flow unshare' moves the project back to files.`,
  options: {
    project: { type: "string", arg: "key", help: "the project's key in the database (default: the folder's name)" },
    json: { type: "boolean", help: "print what was imported as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  const [url] = positionalsExactly(positionals, ["postgres-url"], meta.usage)
  const report = await shareProject(findProject(ctx), url, values.project)
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  ctx.stdout(
    `Shared project '${report.project}' in ${report.database}: ${report.tasks} tasks, ${report.questions} questions, ${report.events} events\n` +
      "flow.yaml now names the database: commit it, and give each machine the password in FLOW_DATABASE_URL or PGPASSWORD\n",
  )
}
