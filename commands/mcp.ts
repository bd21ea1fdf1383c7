import { randomBytes } from "node:crypto"
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"

export const meta = {
  usage: "flow mcp [--http <port>]",
  description: `Serves the project's task graph to MCP clients (Claude Code, Codex, Cursor, VS Code, ...): the tools
flow_list, flow_show, flow_next, flow_start, flow_done, flow_block, flow_note, flow_ask, flow_answer,
flow_questions, flow_review (with flow_review_show, flow_review_approve and flow_review_changes: flow review
<task_id> [approve | changes]), flow_step_start, flow_step_done, flow_step_show, flow_step_list, flow_prompt
and flow_validate do what the commands of the same names do and return their --json output; the resources
are tasks.yaml, plan.md, PRD.md and each task's prompt (flow://tasks/<task_id>/prompt).
Without --http, on stdin and stdout: the client starts 'flow mcp' itself (docs/MCP.md has the config of
each client). With --http, on http://127.0.0.1:<port>/mcp (this machine only) until Ctrl-C: the first line
on stdout is the address, the second the header every request must carry, 'Authorization: Bearer <token>',
with a new random token each start, or the one in FLOW_MCP_TOKEN when it is set (then not printed).`,
  options: {
    http: { type: "string", arg: "port", help: "serve the streamable HTTP transport on this loopback port (0: any free one)" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  // Digits only: Number() would also take "", "1e3" and "0x50".
  const port = values.http === undefined ? undefined : /^\d{1,5}$/.test(values.http) ? Number(values.http) : NaN
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    throw usage(`--http must be a port number from 0 to 65535 (was '${values.http}')`)
  }
  const given = ctx.env.FLOW_MCP_TOKEN
  if (port !== undefined && given !== undefined && given.length < 32) {
    throw usage("FLOW_MCP_TOKEN is shorter than 32 characters", "use a long random secret, for example: openssl rand -hex 32")
  }
  const project = findProject(ctx)
  const stopped = new AbortController()
  const release = ctx.onInterrupt?.(() => stopped.abort())
  try {
    if (port === undefined) {
      // Loaded only here: the SDK (and zod under it) must not slow down the start of every other command.
      const { serveStdio } = await import("../lib/mcp/stdio")
      ctx.stderr(`flow mcp: serving ${project.dir} on stdin and stdout (an MCP client starts this command; see docs/MCP.md)\n`)
      // The stdio transport is the process's own stdin and stdout, which Ctx does not wrap.
      await serveStdio(project, ctx.env, {
        input: process.stdin,
        output: process.stdout,
        stop: stopped.signal,
        log: (line) => ctx.stderr(`${line}\n`),
      })
      return
    }
    const { startMcpHttp } = await import("../lib/mcp/http")
    const token = given ?? randomBytes(32).toString("hex")
    const server = startMcpHttp(project, ctx.env, { port, token, log: (line) => ctx.stderr(`${line}\n`) })
    ctx.stdout(`${server.url}\n${given === undefined ? `Authorization: Bearer ${token}\n` : ""}`)
    ctx.stderr(`flow mcp: serving ${project.dir} on ${server.url} (Ctrl-C to stop)\n`)
    await new Promise<void>((resolve) => stopped.signal.addEventListener("abort", () => resolve(), { once: true }))
    await server.stop()
  } finally {
    release?.()
  }
}
