import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { startViewServer } from "../lib/view/server"

export const meta = {
  usage: "flow view [--port <n>] [--no-open]",
  description: `Serves the task graph inspector on http://127.0.0.1 (this machine only) and opens it in the
default browser: tasks by phase with their dependencies, every field of a selected task with its
instructions and the exact prompt an agent receives, pending questions and checkpoints to answer. The page
follows changes to tasks.yaml, plan.md and the questions by itself. Runs until Ctrl-C. The first line on
stdout is the page's address with its token: the server answers no request without it (other users of
the machine can reach 127.0.0.1 too).`,
  options: {
    port: { type: "string", arg: "n", help: "listen on this port (default: any free port)" },
    "no-open": { type: "boolean", help: "do not open a browser; only print the address" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  // Digits only: Number() would also take "", "1e3" and "0x50".
  const port = values.port === undefined ? 0 : /^\d{1,5}$/.test(values.port) ? Number(values.port) : NaN
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw usage(`--port must be a port number from 0 to 65535 (was '${values.port}')`)
  const project = findProject(ctx)
  const server = await startViewServer(project, { port, user: ctx.env.USER || "person" })
  // Ctrl-C is a normal stop from the moment the address is out (a script may send it at once).
  const stopped = Promise.withResolvers<void>()
  const release = ctx.onInterrupt?.(() => stopped.resolve())
  // The address with its token: every request needs it (docs/VIEW.md "Security"); the note names the address only.
  ctx.stdout(`${server.url}\n`)
  ctx.stderr(`flow view: serving ${project.dir} on ${server.address} (Ctrl-C to stop)\n`)
  // Not awaited: some browsers keep xdg-open waiting until they close, and Ctrl-C must work meanwhile.
  if (!values["no-open"]) {
    void server.open(process.platform).then((failed) => {
      if (failed) ctx.stderr(`note: could not open a browser: ${failed}; open ${server.url} yourself\n`)
    })
  }
  await stopped.promise
  release?.()
  await server.stop()
}
