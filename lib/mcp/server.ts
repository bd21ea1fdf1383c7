// The MCP server of one project on the official SDK's low-level Server (docs/MCP.md). The SDK brings the
// protocol: version negotiation, capabilities, JSON-RPC framing, cancellation, the transports. flow brings
// the tools (lib/mcp/tools.ts) and the resources. The low-level Server rather than McpServer: McpServer takes
// only zod schemas, and flow's one schema is arktype's (a second one would drift).
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  type JSONRPCMessage,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js"
import { type } from "arktype"
import type { Ctx } from "../cli/context"
import { Exit, FlowError } from "../cli/errors"
import { toolWords } from "../cli/hint"
import type { Project } from "../cli/project"
import { VERSION } from "../cli/version"
import { promptReport } from "../ops/prompt"
import { TOOLS } from "./tools"

/** The project's files served as resources, by URI. */
const FILES = [
  { uri: "flow://project/tasks.yaml", name: "tasks.yaml", title: "The task graph", mimeType: "application/yaml" },
  { uri: "flow://project/plan.md", name: "plan.md", title: "The implementation plan", mimeType: "text/markdown" },
  { uri: "flow://project/PRD.md", name: "PRD.md", title: "The requirements document", mimeType: "text/markdown" },
] as const

const PROMPT_TEMPLATE = "flow://tasks/{task_id}/prompt"
const PROMPT_URI = /^flow:\/\/tasks\/([^/]+)\/prompt$/

/** How often a long call (flow_ask with wait) tells a client that asked for progress that it is still working. */
const PROGRESS_MS = 10_000

const BY_NAME = new Map(TOOLS.map((t) => [t.name, t]))

// A hint's commands in an MCP client's words: each as its tool (flow_<the command's words joined by _>) with
// its arguments; a command without a tool keeps the shell's words (docs/MCP.md, "Errors").
const TOOL_WORDS = toolWords((command) => {
  const name = `flow_${command.replaceAll(" ", "_")}`
  return BY_NAME.has(name) ? name : undefined
})

/** A FlowError's hint as an MCP client is told it. */
const hintOf = (e: FlowError): string | undefined => e.parts?.in(TOOL_WORDS) ?? e.hint

// JSON Schema for tools/list, built once: MCP wants an object schema, without arktype's "$schema" line.
const LISTED = TOOLS.map((t) => ({
  name: t.name,
  title: t.title,
  description: t.description,
  inputSchema: jsonSchema(t.input),
  outputSchema: jsonSchema(t.output),
  annotations: { title: t.title, readOnlyHint: t.readOnly, destructiveHint: false, idempotentHint: t.idempotent, openWorldHint: false },
}))

/** What a tool takes, for the hint of a call with wrong arguments. */
function argumentsOf(name: string): string {
  const names = Object.keys((LISTED.find((t) => t.name === name)?.inputSchema.properties as object | undefined) ?? {})
  return names.length === 0 ? `${name} takes no arguments` : `${name} takes ${names.join(", ")}; its inputSchema says what each must be`
}

function jsonSchema(t: type.Any): { type: "object"; [key: string]: unknown } {
  const { $schema: _, ...schema } = t.toJsonSchema() as { type: "object"; $schema?: string }
  return schema
}

/**
 * A server for `project`, to connect to one transport. `env` is the server's environment: FLOW_AGENT and
 * FLOW_TASK_ID when `flow run` hands it to an agent, USER for who answers.
 */
export function createServer(project: Project, env: Ctx["env"]): Server {
  const task = env.FLOW_TASK_ID
  const server = new FlowServer(
    { name: "flow", title: "flow", version: VERSION },
    {
      capabilities: { tools: {}, resources: {} },
      instructions: [
        `The task graph of the project in ${project.dir} (tasks.yaml), as flow's commands see it: the flow_* tools are the flow commands of the same names, and return what their --json prints.`,
        ...(task ? [`You work on task '${task}'${env.FLOW_AGENT ? ` as the agent ${env.FLOW_AGENT}` : ""}.`] : []),
      ].join(" "),
    },
  )

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: LISTED }))

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = BY_NAME.get(request.params.name)
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `no tool '${request.params.name}'; flow's tools: ${TOOLS.map((t) => t.name).join(", ")}`)
    const args = tool.input(request.params.arguments ?? {})
    if (args instanceof type.errors) return failed(new FlowError(`invalid arguments to ${tool.name}: ${args.summary}`, Exit.usage, argumentsOf(tool.name)))
    const token = request.params._meta?.progressToken
    let ticks = 0
    const progress =
      token === undefined
        ? undefined
        : setInterval(() => {
            void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: ++ticks, message: "still working" } })
          }, PROGRESS_MS)
    try {
      const result = await tool.run({ project, env, signal: extra.signal }, args as never)
      return { content: [{ type: "text", text: JSON.stringify(result, null, 2) }], structuredContent: result as Record<string, unknown> }
    } catch (e) {
      if (e instanceof FlowError) return failed(e)
      throw e
    } finally {
      clearInterval(progress)
    }
  })

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: FILES.filter((f) => existsSync(join(project.dir, f.name))),
  }))

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: PROMPT_TEMPLATE,
        name: "prompt",
        title: "A task's prompt",
        description: "The exact prompt an agent receives for the task (flow prompt <task_id>)",
        mimeType: "text/markdown",
      },
    ],
  }))

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params
    const file = FILES.find((f) => f.uri === uri)
    if (file) return { contents: [{ uri, mimeType: file.mimeType, text: readProjectFile(project, file.name, uri) }] }
    const id = PROMPT_URI.exec(uri)?.[1]
    if (id === undefined)
      throw new McpError(-32002, `no resource '${uri}'`, { uri, hint: `flow's resources: ${FILES.map((f) => f.uri).join(", ")}, ${PROMPT_TEMPLATE}` })
    try {
      return { contents: [{ uri, mimeType: "text/markdown", text: (await promptReport(project, decodeURIComponent(id))).prompt }] }
    } catch (e) {
      if (e instanceof FlowError) throw new McpError(-32002, e.message, { uri, hint: hintOf(e) })
      throw e
    }
  })

  return server
}

/**
 * The SDK's server, sending an error's message once. An McpError's message starts with `MCP error <code>: `
 * and the client's McpError adds that again to what it receives, so a client would show `MCP error -32602:
 * MCP error -32602: no tool ...`; errors leave with the prefix taken off, whoever threw them (flow or the SDK).
 */
class FlowServer extends Server {
  override async connect(transport: Transport): Promise<void> {
    const send = transport.send.bind(transport)
    transport.send = (message, options) => send(withBareError(message), options)
    await super.connect(transport)
  }
}

function withBareError(message: JSONRPCMessage): JSONRPCMessage {
  if (!("error" in message)) return message
  const prefix = `MCP error ${message.error.code}: `
  return message.error.message.startsWith(prefix) ? { ...message, error: { ...message.error, message: message.error.message.slice(prefix.length) } } : message
}

/** A failed call as MCP says to report one: a result with isError, carrying the CLI's message and its hint naming tools. */
function failed(e: FlowError): CallToolResult {
  const hint = hintOf(e)
  return { isError: true, content: [{ type: "text", text: `error: ${e.message}${hint ? `\nhint: ${hint}` : ""}` }] }
}

function readProjectFile(project: Project, name: string, uri: string): string {
  try {
    return readFileSync(join(project.dir, name), "utf8")
  } catch (e) {
    throw new McpError(-32002, `${name} cannot be read: ${(e as Error).message}`, { uri })
  }
}
