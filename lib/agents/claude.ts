// Claude Code in print mode with stream-json output (checked against @anthropic-ai/claude-code 2.1.330, and
// for its stream and cost totals 2.1.197, what npm installs on Node 20, 2.1.276 and 2.1.277).
import { join } from "node:path"
import { HTTP_LIMITS, type LimitPattern } from "./limits"
import { arr, isObject, num, obj, parseJsonLine, str, sum, text, tool, usage, withModel } from "./stream"
import { type Adapter, type AgentEvent, MCP_CALL_TIMEOUT_MS } from "./types"
import { compareVersions } from "./versions"

/**
 * From this version on a process started with --resume restores the session's cost total, so total_cost_usd
 * is the session's; before it, the process's own. Checked with real binaries against the scripted model
 * server, a session of three processes: 2.1.197 and 2.1.276 report each process's cost alone, 2.1.277 and
 * 2.1.330 the session's sum (Claude Code's changelog does not name the change). 2.1.277 writes no
 * model_usage_since_last_result; 2.1.330 does.
 */
export const SESSION_TOTALS_SINCE = "2.1.277"

/**
 * Claude Code's words for a refused request (2.1.330's source, in its binary): with an API key, `API Error:
 * Request rejected (429) · <the API's message>` and, for 529, `API Error: ... overloaded`; on a Claude plan,
 * `You've hit your session limit · resets 2pm (Europe/Paris)` (also weekly, Opus, ... limits) and, before
 * 2.1, `Claude AI usage limit reached|<epoch>`; the plan's refusal also comes as a rate_limit_event (below).
 */
export const CLAUDE_LIMITS: readonly LimitPattern[] = [
  {
    kind: "quota",
    pattern: /You(?:'|’)ve hit your (?:[\w-]+ )*limit|usage limit reached|spend limit reached|out of (?:usage )?credits|credit balance (?:is )?too low/i,
  },
  { kind: "overloaded", pattern: /API Error: (?:Request rejected \()?529\b|overloaded_error/i },
  { kind: "rate", pattern: /API Error: (?:Request rejected \()?429\b|rate_limit_error/i },
  ...HTTP_LIMITS,
]

export const claude: Adapter = {
  cli: "claude",
  binary: "claude",
  install: "install Claude Code: npm install -g @anthropic-ai/claude-code",
  sandbox: {
    home: [".claude", ".claude.json", ".config/claude"],
    env: [
      "ANTHROPIC_*",
      "CLAUDE_*",
      "DISABLE_*",
      "AWS_*",
      "CLOUD_ML_REGION",
      "GOOGLE_APPLICATION_CREDENTIALS",
      "MCP_TIMEOUT",
      "MCP_TOOL_TIMEOUT",
      "NODE_EXTRA_CA_CERTS",
    ],
  },
  testedVersion: "2.1.330",
  canResume: true,
  lostSession: /^No conversation found with session ID/,
  limits: CLAUDE_LIMITS,
  // Print mode without a prompt argument reads it from stdin to its end (2.1.330: `[argument, stdin]` joined
  // by a newline, so stdin alone is the prompt as sent), at most 10 MiB of it; one argument could hold 128 KiB.
  promptOnStdin: true,
  promptLimit: { bytes: 10 * 1024 * 1024, why: "Claude Code reads at most 10 MiB of prompt from stdin" },
  // `--mcp-config <file>` adds the server to the user's own; print mode denies a tool nobody allowed, and
  // `mcp__<server>` allows every tool of that server (Claude Code names them mcp__<server>__<tool>).
  // `timeout` (ms) is the server's limit per call: flow_ask waits for a person.
  mcp(server, { dir }) {
    const file = join(dir, "claude-mcp.json")
    const entry = { type: "stdio", command: server.command, args: server.args, env: server.env, timeout: MCP_CALL_TIMEOUT_MS }
    const config = { mcpServers: { [server.name]: entry } }
    return { files: { [file]: `${JSON.stringify(config, null, 2)}\n` }, args: ["--mcp-config", file, "--allowedTools", `mcp__${server.name}`] }
  },
  // Without a version in the stream (it has named one since 2.1.197 at least): as the tested version counts.
  totalsPer: (version) => (version !== undefined && compareVersions(version, SESSION_TOTALS_SINCE) < 0 ? "process" : "session"),
  argv({ sessionId, model, extraArgs = [] }) {
    return [
      "claude",
      "--print",
      "--output-format",
      "stream-json",
      "--verbose", // stream-json in print mode requires it
      // Unattended in a worktree: nobody answers a permission prompt, and print mode denies whatever would
      // prompt, so the agent could not run tests or `flow step done`. Not bypassPermissions: as root (CI,
      // containers) Claude Code refuses it unless IS_SANDBOX=1, a claim flow cannot make for the user.
      // Edits in the working directory and every shell command are what an agent needs, as any user.
      "--permission-mode",
      "acceptEdits",
      "--allowedTools",
      "Bash",
      ...withModel(model, "--model"),
      ...(sessionId ? ["--resume", sessionId] : []),
      ...extraArgs,
    ]
  },
  parseLine: (line) => parseJsonLine(line, claudeEvent),
}

function claudeEvent(event: Record<string, unknown>): AgentEvent[] {
  switch (event.type) {
    case "system": {
      const id = str(event.session_id)
      if (event.subtype === "api_retry") return [{ type: "notice", message: apiRetry(event) }]
      const version = str(event.claude_code_version)
      const model = str(event.model)
      return event.subtype === "init" && id ? [{ type: "session", id, ...(version ? { version } : {}), ...(model ? { model } : {}) }] : []
    }
    case "assistant":
      // An API failure comes as a made-up assistant message too: the result says it once, as an error.
      if (event.error !== undefined || event.is_api_error_message === true) return []
      // Subagents' messages carry parent_tool_use_id; they are part of the same session and shown the same way.
      return arr(obj(event.message).content).flatMap((block): AgentEvent[] => {
        const b = obj(block)
        if (b.type === "text") return text(b.text)
        if (b.type === "tool_use") return [tool(str(b.name) ?? "tool", b.input)]
        return []
      })
    case "result": {
      const u = obj(event.usage)
      const out: AgentEvent[] = []
      if (event.is_error === true) {
        const message = str(event.result) || (Array.isArray(event.errors) ? event.errors.map(String).join("; ") : "") || String(event.subtype ?? "error")
        out.push({ type: "error", message })
      }
      // Every prompt token counts as input, cached or not: cost is reported separately. `usage` is this
      // turn's. total_cost_usd is a running total (the session's since 2.1.277: a resumed session starts from
      // the total its transcript saved; before, the process's: totalsPer), so the turn's cost is the sum over
      // model_usage_since_last_result (this process's calls since its previous result) when the CLI writes it,
      // else the total, for the runner to subtract what it last saw of the same session or process.
      const tokens = {
        input: sum(u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens),
        output: num(u.output_tokens),
        cacheRead: num(u.cache_read_input_tokens),
        cacheWrite: num(u.cache_creation_input_tokens),
      }
      const sinceLast = event.model_usage_since_last_result
      if (isObject(sinceLast)) {
        out.push(...usage({ ...tokens, cost: sum(...Object.values(sinceLast).map((m) => obj(m).costUSD)) ?? 0 }))
      } else {
        out.push(...usage({ ...tokens, cost: num(event.total_cost_usd) }, ["cost"]))
      }
      return out
    }
    case "rate_limit_event": {
      // A plan's refusal (a Claude subscription; API keys get only the error text): resetsAt in epoch seconds.
      const info = obj(event.rate_limit_info)
      if (info.status !== "rejected") return []
      const resets = num(info.resetsAt)
      const what = str(info.rateLimitType)
      return [
        {
          type: "limit",
          kind: "quota",
          message: `usage limit reached${what ? ` (${what})` : ""}`,
          ...(resets ? { resetsAt: new Date(resets * 1000).toISOString() } : {}),
        },
      ]
    }
    default:
      return [] // user (tool results), stream_event, hook and status events carry nothing flow shows
  }
}

/**
 * A failed API request Claude Code is about to try again (`system`/`api_retry`: attempt, max_retries,
 * retry_delay_ms, error_status, error): said, so that minutes of retries do not look like a hung agent.
 */
function apiRetry(event: Record<string, unknown>): string {
  const status = num(event.error_status)
  const error = str(event.error)
  const what = [status === undefined ? undefined : String(status), error].filter(Boolean).join(" ")
  const delay = num(event.retry_delay_ms)
  const of = num(event.max_retries) === undefined ? "" : ` of ${num(event.max_retries)}`
  return `API request failed${what ? ` (${what})` : ""}: retry ${num(event.attempt) ?? "?"}${of}${delay === undefined ? "" : ` in ${(delay / 1000).toFixed(1)} s`}`
}
