// `flow mcp --http <port>`: the streamable HTTP transport of the SDK on Bun.serve, bound to 127.0.0.1 only,
// behind the loopback rules of lib/cli/loopback.ts. Each client session (opened by an initialize request) gets a
// transport and a server of its own, as the SDK's transport serves one session.
import { randomUUID } from "node:crypto"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import type { Ctx } from "../cli/context"
import type { Project } from "../cli/project"
import { refusal, serveLoopback } from "../cli/loopback"
import { createServer } from "./server"

export type McpHttpServer = { url: string; stop: () => Promise<void> }

export const MCP_PATH = "/mcp"

/** Serves the project's MCP server on 127.0.0.1:`port` (0: any free one) to clients presenting `token`. */
export function startMcpHttp(project: Project, env: Ctx["env"], opts: { port: number; token: string; log: (line: string) => void }): McpHttpServer {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>()
  let port = opts.port
  const server = serveLoopback(
    opts.port,
    async (req) => {
      const refused = refusal(req, { port, token: opts.token })
      if (refused) {
        opts.log(`flow mcp: ${refused.message}`)
        return Response.json(jsonRpcError(refused.message), {
          status: refused.status,
          headers: refused.status === 401 ? { "WWW-Authenticate": 'Bearer realm="flow mcp"' } : {},
        })
      }
      if (new URL(req.url).pathname !== MCP_PATH) return Response.json(jsonRpcError(`not found: flow mcp serves ${MCP_PATH}`), { status: 404 })
      const id = req.headers.get("mcp-session-id")
      if (id !== null) {
        const transport = sessions.get(id)
        return transport ? transport.handleRequest(req) : Response.json(jsonRpcError(`no session '${id}': initialize a new one`), { status: 404 })
      }
      // No session yet: only an initialize request opens one; the transport answers anything else with 400.
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, transport),
        onsessionclosed: (sid) => void sessions.delete(sid),
      })
      const mcp = createServer(project, env)
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId)
      }
      await mcp.connect(transport)
      const response = await transport.handleRequest(req)
      if (transport.sessionId === undefined) await mcp.close()
      return response
    },
    "pass another port to --http, or 0 for any free one",
  )
  port = server.port as number
  return {
    url: `http://127.0.0.1:${port}${MCP_PATH}`,
    stop: async () => {
      await Promise.all([...sessions.values()].map((t) => t.close()))
      await server.stop(true)
    },
  }
}

function jsonRpcError(message: string) {
  return { jsonrpc: "2.0", error: { code: -32000, message }, id: null }
}
