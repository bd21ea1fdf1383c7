// Codex `exec --json` (checked against @openai/codex 0.169.0): thread, turn and item events.
import { HTTP_LIMITS, type LimitPattern } from "./limits"
import { arr, num, obj, parseJsonLine, str, text, tool, usage, withModel } from "./stream"
import { type Adapter, type AgentEvent, MCP_CALL_TIMEOUT_MS, MCP_STARTUP_TIMEOUT_MS } from "./types"

// Unattended in a worktree: flow's agents commit in the worktree (git writes to the main repository's .git)
// and call `flow` on the project, both outside what the workspace-write sandbox lets them write. `exec` never
// asks for approval, so the sandbox is the only gate, and `exec resume` has no --sandbox flag: the one flag
// both accept is this one.
const FULL_ACCESS = "--dangerously-bypass-approvals-and-sandbox"
// Codex runs commands in a login shell by default (`bash -lc`): /etc/profile resets PATH and drops the
// `.flow/bin` flow put first on it, so `flow done` is "command not found". This setting makes Codex run
// every command in a non-login shell (and refuse a model's explicit `login: true`), keeping the PATH flow
// gave it. Measured with 0.169.0: `-c` is accepted by `exec` and `exec resume` alike.
const NO_LOGIN_SHELL = ["-c", "allow_login_shell=false"]
// Codex's transient retries are reported as `error` events; they are progress, not failures.
const RECONNECTING = /^Reconnecting\.\.\./

/**
 * Codex's words for a refused request (codex-rs/core/src/error.rs; 0.169.0's binary, checked against a server
 * answering 429): a plan's limit `You’ve hit your usage limit. ... try again at 3:05 PM.` (or `at Nov 26th,
 * 2026 3:05 PM`, local time), an API key's `Quota exceeded. Check your plan and billing details.`, and a
 * rate limit it retried in vain `exceeded retry limit, last status: 429 Too Many Requests`.
 */
export const CODEX_LIMITS: readonly LimitPattern[] = [
  { kind: "quota", pattern: /You(?:'|’)ve hit your usage limit|Quota exceeded\. Check your plan|usage limit reached|out of credits/i },
  { kind: "rate", pattern: /exceeded retry limit, last status: 429\b/ },
  { kind: "overloaded", pattern: /exceeded retry limit, last status: 5\d\d\b|experiencing high (?:demand|load)/i },
  ...HTTP_LIMITS,
]

export const codex: Adapter = {
  cli: "codex",
  binary: "codex",
  install: "install Codex: npm install -g @openai/codex",
  sandbox: { home: [".codex"], env: ["OPENAI_*", "CODEX_*", "AZURE_OPENAI_*", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"] },
  testedVersion: "0.169.0",
  canResume: true,
  limits: CODEX_LIMITS,
  // `-` as the prompt reads it from stdin, unchanged (`exec` and `exec resume` alike: codex-rs/exec's
  // read_prompt_from_stdin, 0.169.0); Codex refuses a user input over 1 << 20 characters (MAX_USER_INPUT_TEXT_CHARS).
  promptOnStdin: true,
  promptLimit: { bytes: 1 << 20, why: "Codex takes at most 1,048,576 characters of input in one turn" },
  // Codex has no MCP config flag: `-c mcp_servers.<name>.<key>=<TOML value>` sets the server for this run only,
  // on top of ~/.codex/config.toml, and `exec` and `exec resume` both take it. Codex passes a stdio server
  // only a few variables of its own environment (HOME, PATH, ...), so flow's are given in `env`.
  mcp(server) {
    const key = `mcp_servers.${server.name}`
    const env = Object.entries(server.env).map(([k, v]) => `${k} = ${tomlString(v)}`)
    return {
      args: [
        "-c",
        `${key}.command=${tomlString(server.command)}`,
        "-c",
        `${key}.args=[${server.args.map(tomlString).join(", ")}]`,
        "-c",
        `${key}.env={ ${env.join(", ")} }`,
        // The default is 60 s, and flow_ask waits for a person.
        "-c",
        `${key}.tool_timeout_sec=${MCP_CALL_TIMEOUT_MS / 1000}`,
        // Without it Codex may send its first request before the server has listed its tools (seen on a
        // loaded machine: the model's call was "unsupported"); a server that cannot start fails the turn.
        "-c",
        `${key}.required=true`,
        "-c",
        `${key}.startup_timeout_sec=${MCP_STARTUP_TIMEOUT_MS / 1000}`,
      ],
    }
  },
  argv({ sessionId, model, extraArgs = [] }) {
    const flags = ["--json", FULL_ACCESS, ...NO_LOGIN_SHELL, ...withModel(model, "--model"), ...extraArgs]
    return sessionId ? ["codex", "exec", "resume", ...flags, "--", sessionId, "-"] : ["codex", "exec", ...flags, "--", "-"]
  },
  parseLine: (line) => parseJsonLine(line, codexEvent),
}

/** A TOML basic string: the escapes JSON writes (quote, backslash, \n, \uXXXX) are TOML's too. */
function tomlString(value: string): string {
  return JSON.stringify(value)
}

function codexEvent(event: Record<string, unknown>): AgentEvent[] {
  switch (event.type) {
    case "thread.started": {
      const id = str(event.thread_id)
      return id ? [{ type: "session", id }] : []
    }
    case "turn.completed": {
      // input_tokens already includes cached_input_tokens. The counts are the thread's running totals: on
      // `exec resume` they include every earlier turn, so the runner subtracts what it saw last.
      const u = obj(event.usage)
      return usage({ input: num(u.input_tokens), output: num(u.output_tokens), cacheRead: num(u.cached_input_tokens) }, ["tokens"])
    }
    case "turn.failed":
      return [{ type: "error", message: str(obj(event.error).message) ?? "turn failed" }]
    case "error": {
      // The fatal error comes twice, as `error` then `turn.failed`: the runner drops the repeat.
      const message = str(event.message) ?? "error"
      return RECONNECTING.test(message) ? text(message) : [{ type: "error", message }]
    }
    case "item.started":
      return startedItem(obj(event.item))
    case "item.completed":
      return completedItem(obj(event.item))
    default:
      return [] // turn.started, item.updated (todo lists, streaming command output)
  }
}

// Tool calls show when they start (a long test run is visible while it runs); file changes and messages
// only exist once completed.
function startedItem(item: Record<string, unknown>): AgentEvent[] {
  switch (item.type) {
    case "command_execution":
      return [tool("shell", { command: item.command })]
    case "mcp_tool_call":
      return [tool(`${str(item.server) ?? "mcp"}.${str(item.tool) ?? "tool"}`, item.arguments)]
    case "web_search":
      return [tool("web_search", { query: item.query })]
    default:
      return []
  }
}

function completedItem(item: Record<string, unknown>): AgentEvent[] {
  switch (item.type) {
    case "agent_message":
      return text(item.text)
    case "file_change": {
      const paths = arr(item.changes)
        .map((c) => str(obj(c).path))
        .filter((p) => p !== undefined)
      return [tool("file_change", paths.length > 0 ? { path: paths.join(", ") } : undefined)]
    }
    case "error": // an error item is a warning Codex went on after (e.g. no metadata for a custom model)
      return text(`warning: ${str(item.message) ?? "error"}`)
    default:
      return []
  }
}
