// `flow mcp` driven by the MCP SDK's own client, over both transports: stdio (the client starts the CLI) and
// streamable HTTP (the CLI started in the background with --http 0, the client sending its printed header).
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { background, flowArgv } from "./helpers"

export type Connected = {
  client: Client
  /** what the server wrote on stderr so far */
  stderr: () => string
  /** closes the client and ends the server; its exit code (HTTP; 0 for stdio, whose exit the SDK's transport keeps) */
  close: () => Promise<number>
  [Symbol.asyncDispose]: () => Promise<void>
}

export type Transport = "stdio" | "http"

function env(extra: Record<string, string | undefined>): Record<string, string> {
  const all: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", TZ: process.env.TZ, FLOW_PROJECT: undefined, ...extra }
  return Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined))
}

/** `flow mcp` in `cwd` with a connected client, over `transport`. */
export async function connect(transport: Transport, cwd: string, extra: Record<string, string | undefined> = {}): Promise<Connected> {
  const client = new Client({ name: "flow-test", version: "1.0.0" })
  if (transport === "stdio") {
    const [command, ...args] = flowArgv()
    const t = new StdioClientTransport({ command: command!, args: [...args, "mcp"], cwd, env: env(extra), stderr: "pipe" })
    let stderr = ""
    t.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    await client.connect(t)
    // The SDK's transport ends the server's stdin, then sends SIGTERM after 2 s: test/mcp.test.ts checks the exit itself.
    const close = async () => (await client.close(), 0)
    return { client, stderr: () => stderr, close, [Symbol.asyncDispose]: async () => void (await close()) }
  }
  const server = await startHttp(cwd, extra)
  const t = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } })
  await client.connect(t)
  const close = async () => {
    await t.terminateSession().catch(() => {})
    await client.close()
    return server.stop()
  }
  return { client, stderr: server.stderr, close, [Symbol.asyncDispose]: async () => void (await close()) }
}

export type HttpServer = { url: string; token: string; stderr: () => string; stop: () => Promise<number> }

/** `flow mcp --http 0` in the background: its address and token from the two lines it prints. */
export async function startHttp(cwd: string, extra: Record<string, string | undefined> = {}): Promise<HttpServer> {
  const run = background(cwd, ["mcp", "--http", "0"], env(extra))
  await run
    .waitFor((out) => out.split("\n").length >= 3 || (extra.FLOW_MCP_TOKEN !== undefined && out.includes("\n")))
    .catch((e) => {
      run.proc.kill("SIGKILL") // it never said where it listens: no test will stop it
      throw e
    })
  const [url, header] = run.output().split("\n")
  const token = extra.FLOW_MCP_TOKEN ?? /^Authorization: Bearer (\S+)$/.exec(header ?? "")?.[1]
  if (!url || !token) throw new Error(`flow mcp --http printed no address and header: ${run.output()}`)
  let stderr = ""
  const stopped = async () => {
    run.proc.kill("SIGINT")
    const end = await run.done()
    stderr = end.stderr
    return end.code
  }
  let stopping: Promise<number> | undefined
  return { url, token, stderr: () => stderr, stop: () => (stopping ??= stopped()) }
}

/** The text of a tool result (its first content block). */
export function textOf(result: CallToolResult): string {
  const block = result.content[0]
  return block?.type === "text" ? block.text : ""
}

/** Calls a tool and returns its structured result; a failed call is thrown with its text. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  if (result.isError) throw new Error(`${name} failed: ${textOf(result)}`)
  return result.structuredContent as Record<string, unknown>
}

/** Calls a tool that must fail; its error text. */
export async function callFails(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  if (!result.isError) throw new Error(`${name} succeeded: ${JSON.stringify(result.structuredContent)}`)
  return textOf(result)
}
