// Cursor's agent CLI in print mode with stream-json output. Not on npm, so checked against its documentation
// only (cursor.com/docs/cli/reference/output-format), not a binary.
import { HTTP_LIMITS } from "./limits"
import { argvLimit } from "./prompt-limit"
import { arr, num, obj, parseJsonLine, str, text, tool, usage, withModel } from "./stream"
import type { Adapter, AgentEvent } from "./types"

export const cursor: Adapter = {
  cli: "cursor",
  binary: "cursor-agent",
  install: "install Cursor's agent CLI (cursor-agent): see cursor.com/docs/cli",
  sandbox: { home: [".cursor", ".config/cursor"], env: ["CURSOR_*"] },
  testedVersion: "docs 2026 (cursor.com/docs/cli output-format; no binary checked)",
  canResume: true,
  // Its documentation names no wording of a refusal: the API's own words, as every CLI passes them on.
  limits: HTTP_LIMITS,
  // Its documentation says nothing of reading a prompt from stdin: the prompt stays an argument.
  promptLimit: argvLimit(),
  argv({ prompt, sessionId, model, extraArgs = [] }) {
    return [
      "cursor-agent",
      "--print",
      "--output-format",
      "stream-json",
      // --force: run commands without asking (unless a deny rule says no); nobody is there to answer.
      "--force",
      ...withModel(model, "--model"),
      // --resume takes an optional value: the `=` form keeps the id attached to it.
      ...(sessionId ? [`--resume=${sessionId}`] : []),
      ...extraArgs,
      "--",
      prompt,
    ]
  },
  parseLine: (line) => parseJsonLine(line, cursorEvent),
}

function cursorEvent(event: Record<string, unknown>): AgentEvent[] {
  switch (event.type) {
    case "system": {
      const id = str(event.session_id)
      return event.subtype === "init" && id ? [{ type: "session", id }] : []
    }
    case "assistant":
      return arr(obj(event.message).content).flatMap((block) => (obj(block).type === "text" ? text(obj(block).text) : []))
    case "tool_call": {
      if (event.subtype !== "started") return []
      // tool_call holds one key naming the tool: shellToolCall, readToolCall, editToolCall, writeToolCall,
      // grepToolCall, lsToolCall, ... or `function` for others; its `args` say what it works on.
      const [key, value] = Object.entries(obj(event.tool_call))[0] ?? []
      if (key === undefined) return []
      const call = obj(value)
      if (key === "function") return [tool(str(call.name) ?? "function", call.arguments)]
      return [tool(key.replace(/ToolCall$/, ""), call.args)]
    }
    case "result": {
      const out: AgentEvent[] = []
      if (event.is_error === true) out.push({ type: "error", message: str(event.result) || String(event.subtype ?? "error") })
      const u = obj(event.usage) // not documented today; read when present
      out.push(...usage({ input: num(u.input_tokens ?? u.inputTokens), output: num(u.output_tokens ?? u.outputTokens) }))
      return out
    }
    default:
      return [] // user (the prompt's echo), thinking
  }
}
