// Goose `run` with stream-json output (checked against goose 1.50.0's documentation and source; goose is
// not on npm, so no binary was checked).
import { HTTP_LIMITS } from "./limits"
import { argvLimit } from "./prompt-limit"
import { arr, num, obj, parseJsonLine, str, text, tool, usage, withModel } from "./stream"
import type { Adapter, AgentEvent } from "./types"

export const goose: Adapter = {
  cli: "goose",
  binary: "goose",
  install: "install goose: see block.github.io/goose/docs/getting-started/installation",
  sandbox: {
    home: [".config/goose", ".local/share/goose", ".local/state/goose"],
    env: ["GOOSE_*", "ANTHROPIC_*", "OPENAI_*", "GOOGLE_*", "OPENROUTER_API_KEY"],
  },
  testedVersion: "1.50.0 (docs and source; no binary checked)",
  // goose can resume a session by id (`run --resume --session-id`), but its stream never says which id a
  // run got, so flow cannot learn it: every step starts a fresh session with the full task context.
  canResume: false,
  env: { GOOSE_MODE: "auto" }, // approve every tool call: nobody is there to answer
  // Its documentation names no wording of a refusal: the provider's own words, as every CLI passes them on.
  limits: HTTP_LIMITS,
  promptLimit: argvLimit("--text="), // no binary was checked: the prompt stays the argument its documentation shows
  argv({ prompt, sessionId, model, extraArgs = [] }) {
    if (sessionId) throw new Error("goose cannot resume a session through flow (canResume is false)")
    return [
      "goose",
      "run",
      `--text=${prompt}`, // the `=` form keeps a prompt that starts with a dash a value
      "--output-format",
      "stream-json",
      ...withModel(model, "--model"),
      ...extraArgs,
    ]
  },
  parseLine: (line) => parseJsonLine(line, gooseEvent),
}

function gooseEvent(event: Record<string, unknown>): AgentEvent[] {
  switch (event.type) {
    case "message": {
      const message = obj(event.message)
      if (message.role !== "assistant") return [] // tool responses come back as user messages
      return arr(message.content).flatMap((block): AgentEvent[] => {
        const b = obj(block)
        if (b.type === "text") return text(b.text)
        if (b.type === "toolRequest") {
          const call = obj(b.toolCall)
          const value = obj(call.value ?? call) // {status, value: {name, arguments}}
          return [tool(str(value.name) ?? "tool", value.arguments)]
        }
        return []
      })
    }
    case "error":
      return [{ type: "error", message: str(event.error) ?? "error" }]
    case "complete":
      return usage({ input: num(event.input_tokens), output: num(event.output_tokens), cost: num(event.cost_usd) })
    default:
      return [] // notification (extension logs and progress)
  }
}
