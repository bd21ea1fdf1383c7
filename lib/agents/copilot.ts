// GitHub Copilot CLI in prompt mode with JSONL output (checked against @github/copilot 1.0.102: its --help,
// its bundled source and a stream recorded against a local endpoint): session events shaped like the
// Copilot SDK's, `{type, data}`. 1.0.102's JSON output leaves out session.start and assistant.usage (its
// filter list), and names the session only in its closing `result` line, which a stopped turn never
// writes: so flow picks a new session's id and records it before Copilot starts (`--session-id` sets the
// UUID of a new session and resumes an existing one). No tokens are reported; session.start and
// assistant.usage are still read in case a later version writes them.
import { HTTP_LIMITS, type LimitPattern } from "./limits"
import { num, obj, parseJsonLine, str, text, tool, usage, withModel } from "./stream"
import type { Adapter, AgentEvent } from "./types"

/**
 * Copilot's words for a refused request (1.0.102 against a server answering 429: a session.error of errorType
 * rate_limit, `Failed to get response from the AI model; retried 5 times ... Last error: 429 Rate limit
 * reached for requests. Please try again in 20s.`; its bundle's `You've been rate limited on the current model`).
 */
export const COPILOT_LIMITS: readonly LimitPattern[] = [
  { kind: "quota", pattern: /quota|premium requests|usage limit/i },
  { kind: "rate", pattern: /been rate limited|Last error: 429\b/i },
  ...HTTP_LIMITS,
]

export const copilot: Adapter = {
  cli: "copilot",
  binary: "copilot",
  install: "install GitHub Copilot CLI: npm install -g @github/copilot",
  sandbox: { home: [".copilot", ".config/github-copilot"], env: ["COPILOT_*", "GH_TOKEN", "GITHUB_TOKEN", "GH_HOST", "XDG_*"] },
  testedVersion: "1.0.102",
  canResume: true,
  choosesSessionId: true,
  limits: COPILOT_LIMITS,
  // Without --prompt and with no terminal, prompt mode takes the prompt from stdin, all of it (1.0.102's
  // bundle: `prompt || text(process.stdin)`); no limit is known.
  promptOnStdin: true,
  argv({ sessionId, newSessionId, model, extraArgs = [] }) {
    const id = sessionId ?? newSessionId
    return [
      "copilot",
      "--output-format",
      "json",
      // Prompt mode needs --allow-all-tools to run tools unattended; --no-ask-user: nobody is there to answer
      // (agents ask through `flow ask`); --no-auto-update: run the version that was installed and checked.
      "--allow-all-tools",
      "--no-ask-user",
      "--no-auto-update",
      ...withModel(model, "--model"),
      // --session-id resumes the session with that id, or starts one with it: never --resume, which fails
      // ("No session ... matched") on the id flow recorded for a turn stopped before Copilot saved it.
      ...(id ? [`--session-id=${id}`] : []),
      ...extraArgs,
    ]
  },
  parseLine: (line) => parseJsonLine(line, copilotEvent),
}

function copilotEvent(event: Record<string, unknown>): AgentEvent[] {
  const data = obj(event.data)
  switch (event.type) {
    case "session.start": {
      const id = str(data.sessionId)
      return id ? [{ type: "session", id }] : []
    }
    case "assistant.message":
      return text(data.content) // the whole message; assistant.message_delta repeats it in pieces
    case "tool.execution_start":
      return [tool(str(data.toolName) ?? "tool", data.arguments)]
    case "assistant.usage":
      // One per model call (not a running total). data.cost is Copilot's premium-request multiplier, not
      // dollars: not reported as costUsd.
      return usage({
        input: num(data.inputTokens),
        output: num(data.outputTokens),
        cacheRead: num(data.cacheReadTokens),
        cacheWrite: num(data.cacheWriteTokens),
        model: str(data.model),
      })
    case "session.error":
      return [{ type: "error", message: str(data.message) ?? "error" }]
    case "result": {
      // The closing line of prompt mode names the session too (the id to resume) and the exit code.
      const id = str(event.sessionId)
      return id ? [{ type: "session", id }] : []
    }
    default:
      return []
  }
}
