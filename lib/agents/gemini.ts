// Gemini CLI headless mode with stream-json output (checked against @google/gemini-cli 0.61.0).
import { join } from "node:path"
import { HTTP_LIMITS, type LimitPattern } from "./limits"
import { isObject, num, obj, parseJsonLine, str, text, tool, usage, withModel } from "./stream"
import { type Adapter, type AgentEvent, MCP_CALL_TIMEOUT_MS } from "./types"

/**
 * Gemini CLI's words for a refused request (0.61.0's bundle, packages/core/src/utils/googleQuotaErrors.ts,
 * and a headless run against a server answering 429): `You have exhausted your daily quota on this model.`,
 * the API's `RESOURCE_EXHAUSTED` (`API error 429 RESOURCE_EXHAUSTED: ...` once the adapter has read it) with
 * `Please retry in 2.5s` or `Suggested retry after 43s.`, and capacity `MODEL_CAPACITY_EXHAUSTED`.
 */
export const GEMINI_LIMITS: readonly LimitPattern[] = [
  { kind: "quota", pattern: /exhausted your (?:daily )?quota|RESOURCE_EXHAUSTED|quota exceeded|exceeded your current quota/i },
  { kind: "overloaded", pattern: /exhausted your capacity|capacity exceeded|MODEL_CAPACITY_EXHAUSTED|\b503\b|UNAVAILABLE/i },
  ...HTTP_LIMITS,
]

export const gemini: Adapter = {
  cli: "gemini",
  binary: "gemini",
  install: "install Gemini CLI: npm install -g @google/gemini-cli",
  sandbox: { home: [".gemini"], env: ["GEMINI_*", "GOOGLE_*", "NODE_EXTRA_CA_CERTS"] },
  testedVersion: "0.61.0",
  canResume: true,
  // What it prints on every headless start, and its fallback when ripgrep is missing: not failures.
  stderrNoise: [/^Warning: 256-color support not detected/, /^YOLO mode is enabled/, /^Ripgrep is not available/, /^Loaded cached credentials/],
  // A session whose first turn failed (a rejected key) was announced but never saved: resuming it fails.
  lostSession: /^Error resuming session/,
  limits: GEMINI_LIMITS,
  // Headless without --prompt (stdin is not a terminal), the prompt is stdin, read to its end: 0.61.0's
  // readStdin cuts it at 8 MiB without a word, so flow never sends more.
  promptOnStdin: true,
  promptLimit: { bytes: 8 * 1024 * 1024, why: "Gemini CLI reads at most 8 MiB of prompt from stdin" },
  // Gemini CLI has no MCP flag; it reads `mcpServers` from settings files in layers (system defaults, user,
  // workspace, system), merged key by key. The system layers are skipped unless every folder above the file is
  // owned by root, and the user's is the user's own; the workspace's, <cwd>/.gemini/settings.json, is in the
  // worktree, so flow's .gemini folder ignores itself (.gitignore `*`) and no commit of the agent takes it. `trust` skips the confirmation of each call, which nobody could give;
  // `timeout` (ms; the default is 10 minutes) lets flow_ask wait for a person.
  mcp(server, { cwd }) {
    const settings = {
      mcpServers: { [server.name]: { command: server.command, args: server.args, env: server.env, trust: true, timeout: MCP_CALL_TIMEOUT_MS } },
    }
    return {
      files: { [join(cwd, ".gemini", ".gitignore")]: "*\n", [join(cwd, ".gemini", "settings.json")]: `${JSON.stringify(settings, null, 2)}\n` },
      // What --skip-trust sets, but only after the settings were read (0.61.0): too late for the workspace's.
      env: { GEMINI_CLI_TRUST_WORKSPACE: "true" },
    }
  },
  argv({ sessionId, model, extraArgs = [] }) {
    return [
      "gemini",
      "--output-format",
      "stream-json",
      // yolo: nobody is there to approve tool calls; --skip-trust: an untrusted folder would force the
      // approval mode back to default, and a fresh worktree is never in the trusted list.
      "--approval-mode",
      "yolo",
      "--skip-trust",
      ...withModel(model, "--model"),
      // --resume takes a session UUID (or "latest", or an index); sessions are stored per project folder,
      // so the resumed run must use the same cwd, which the worktree guarantees.
      ...(sessionId ? ["--resume", sessionId] : []),
      ...extraArgs,
    ]
  },
  parseLine: (line) => parseJsonLine(line, geminiEvent),
}

function geminiEvent(event: Record<string, unknown>): AgentEvent[] {
  switch (event.type) {
    case "init": {
      const id = str(event.session_id)
      const model = str(event.model)
      // "auto" is the router: which model answered is in the result's per-model stats.
      return id ? [{ type: "session", id, ...(model && model !== "auto" ? { model } : {}) }] : []
    }
    case "message":
      return event.role === "assistant" ? text(event.content) : [] // the user's echo of the prompt is not news
    case "tool_use":
      return [tool(str(event.tool_name) ?? "tool", event.parameters)]
    case "error":
      return event.severity === "error" ? [{ type: "error", message: str(event.message) ?? "error" }] : []
    case "result": {
      const stats = obj(event.stats)
      const out: AgentEvent[] = []
      if (event.status === "error") out.push({ type: "error", message: apiError(str(obj(event.error).message) ?? "error") })
      // input_tokens includes `cached`; `models` splits them per model (the router may use two), so each can be priced.
      const models = Object.entries(isObject(stats.models) ? stats.models : {}).filter(([, m]) => (num(obj(m).total_tokens) ?? 0) > 0)
      if (models.length > 0) {
        for (const [model, m] of models)
          out.push(...usage({ input: num(obj(m).input_tokens), output: num(obj(m).output_tokens), cacheRead: num(obj(m).cached), model }))
      } else {
        out.push(...usage({ input: num(stats.input_tokens), output: num(stats.output_tokens), cacheRead: num(stats.cached) }))
      }
      return out
    }
    default:
      return [] // tool_result
  }
}

/** "[API Error: {"error":{"code":401,"message":"…","status":"UNAUTHENTICATED"}}]" → "API error 401 UNAUTHENTICATED: …". */
function apiError(message: string): string {
  const json = /^\[API Error: (\{.*\})\]$/s.exec(message.trim())?.[1]
  if (!json) return message
  try {
    const e = obj(obj(JSON.parse(json)).error)
    const what = [num(e.code), str(e.status)].filter((x) => x !== undefined).join(" ")
    return `API error${what ? ` ${what}` : ""}: ${str(e.message) ?? "no message"}`
  } catch {
    return message
  }
}
