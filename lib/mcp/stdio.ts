// `flow mcp` on stdio: the client starts flow as its subprocess and speaks JSON-RPC lines on its stdin and
// stdout, so nothing else may ever be written to that stdout.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { Ctx } from "../cli/context"
import type { Project } from "../cli/project"
import { createServer } from "./server"

/** Serves the project on `input` and `output` until the client closes `input` or `stop` aborts; in-flight calls are then cancelled. */
export async function serveStdio(
  project: Project,
  env: Ctx["env"],
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; stop: AbortSignal },
): Promise<void> {
  const server = createServer(project, env)
  const transport = new StdioServerTransport(io.input as never, io.output as never)
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve
  })
  // The SDK's transport does not watch for the end of its input: a client that exits closes the pipe.
  const end = () => void transport.close()
  io.input.once("end", end)
  io.stop.addEventListener("abort", end, { once: true })
  await server.connect(transport)
  await closed
  io.input.off("end", end)
}
