// OpenCode `run --format json` (checked against opencode-ai 1.18.33): one JSON object per finished part.
import { join } from "node:path"
import { HTTP_LIMITS, type LimitPattern } from "./limits"
import { num, obj, parseJsonLine, str, sum, text, tool, usage, withModel } from "./stream"
import { type Adapter, type AgentEvent, MCP_CALL_TIMEOUT_MS } from "./types"

/**
 * OpenCode's words for a refused request (1.18.33's binary): its own plans' `Usage limit reached. It will
 * reset in 2 hours 5 minutes.`, a provider's `Too Many Requests` / `Rate limit exceeded` and `Provider is
 * overloaded` (it retries those itself first).
 */
export const OPENCODE_LIMITS: readonly LimitPattern[] = [
  { kind: "quota", pattern: /usage limit reached|insufficient_quota/i },
  { kind: "overloaded", pattern: /Provider is overloaded/i },
  ...HTTP_LIMITS,
]

export const opencode: Adapter = {
  cli: "opencode",
  binary: "opencode",
  install: "install OpenCode: npm install -g opencode-ai",
  sandbox: {
    home: [".local/share/opencode", ".config/opencode", ".cache/opencode", ".local/state/opencode"],
    env: ["OPENCODE_*", "ANTHROPIC_*", "OPENAI_*", "GEMINI_*", "GOOGLE_*", "OPENROUTER_API_KEY", "XDG_*"],
  },
  testedVersion: "1.18.33",
  canResume: true,
  // `run` joins its message arguments after wrapping each one holding a space in quotes (and escaping its
  // quotes), so an argv prompt reaches the model altered; with no message argument it reads stdin as is.
  promptOnStdin: true,
  limits: OPENCODE_LIMITS,
  // Every OpenCode process of a user shares one SQLite database (<data>/opencode.db, busy_timeout 5 s in
  // 1.18.33): two agents writing at once under load fail with "database is locked" (anomalyco/opencode
  // #33320, #47566). OPENCODE_DB, an absolute path, moves the database alone: auth.json, the config and
  // the snapshots stay where the user has them. One database per task: one process at a time, and the
  // task's session is there for whichever OpenCode agent takes the task next.
  sessionStore: (dir) => ({ OPENCODE_DB: join(dir, "opencode.db") }),
  // What 1.18.33 prints on stderr (exit 1) for a --session its database does not hold: a session saved
  // before flow gave each task its own database, or a database deleted since.
  lostSession: /Session not found/,
  // OPENCODE_CONFIG_CONTENT is a config of its own, merged over the user's and the project's: the server is
  // added without a file in the worktree (where opencode.json would be) or a change to the user's config.
  // `timeout` is per request, 5 s by default (1.18.33's schema): flow_ask waits for a person.
  mcp(server) {
    const entry = { type: "local", command: [server.command, ...server.args], environment: server.env, enabled: true, timeout: MCP_CALL_TIMEOUT_MS }
    const config = { mcp: { [server.name]: entry } }
    return { env: { OPENCODE_CONFIG_CONTENT: JSON.stringify(config) } }
  },
  argv({ sessionId, model, extraArgs = [] }) {
    return [
      "opencode",
      "run",
      "--format",
      "json",
      // Without --auto, `run` rejects every permission request (nobody is there to answer it).
      "--auto",
      ...withModel(model, "--model"), // provider/model, e.g. anthropic/claude-sonnet-4-5
      ...(sessionId ? ["--session", sessionId] : []),
      ...extraArgs,
    ]
  },
  parseLine: (line) => parseJsonLine(line, opencodeEvent),
}

// Every line carries the session id; flow reports it once, from the first step_start.
function opencodeEvent(event: Record<string, unknown>): AgentEvent[] {
  const part = obj(event.part)
  switch (event.type) {
    case "step_start": {
      const id = str(event.sessionID)
      return id ? [{ type: "session", id }] : []
    }
    case "text":
      return text(part.text)
    case "tool_use": {
      return [tool(str(part.tool) ?? "tool", obj(part.state).input)]
    }
    case "step_finish": {
      const tokens = obj(part.tokens)
      const cache = obj(tokens.cache)
      return usage({
        input: sum(tokens.input, cache.read, cache.write),
        output: num(tokens.output),
        cacheRead: num(cache.read),
        cacheWrite: num(cache.write),
        cost: num(part.cost),
      })
    }
    case "error": {
      const error = obj(event.error)
      return [{ type: "error", message: str(obj(error.data).message) ?? str(error.name) ?? "error" }]
    }
    default:
      return [] // reasoning (only with --thinking)
  }
}
