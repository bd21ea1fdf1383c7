// The contract between flow's orchestrator and one coding-agent CLI: how to start it, how to read it.
import type { LimitKind, LimitPattern } from "./limits"

export type AgentEvent =
  | { type: "text"; text: string } // assistant text
  | { type: "tool"; name: string; detail?: string } // a tool call, with a short one-line detail (command, file)
  | { type: "session"; id: string; version?: string; model?: string } // the session id to resume later, the CLI's version and model when its stream says
  | UsageEvent
  | LimitEvent
  | { type: "error"; message: string } // an error the CLI reported in its stream
  | { type: "notice"; message: string } // what the CLI says it does meanwhile (retrying a failed request)

/**
 * Tokens and cost as the CLI reported them. `totals` names the fields the CLI reports as a running total
 * (of the session across resumed turns, or of one process: the adapter's `totalsPer`) rather than as this
 * report's own: the runner turns those into deltas (lib/budget/usage-meter.ts), so every usage event flow
 * emits and records is what that report added.
 */
export type UsageEvent = {
  type: "usage"
  inputTokens?: number
  outputTokens?: number
  /** of inputTokens, those read from the provider's prompt cache and those written to it (billed differently) */
  cacheReadTokens?: number
  cacheWriteTokens?: number
  costUsd?: number
  /** the cost is flow's estimate from the model's price (lib/budget/prices.ts), not the CLI's report */
  costEstimated?: boolean
  /** the model these tokens went to, when the CLI says (Gemini CLI reports each model's) */
  model?: string
  /** the tokens as the provider bills them: cached reads and writes weighted by their price (lib/budget/prices.ts) */
  billedTokens?: number
  totals?: readonly UsageField[]
}
/**
 * A refusal the CLI reported in its stream's own terms (Claude Code's rate_limit_event), beside the error text
 * its adapter's `limits` table reads: `resetsAt` is an ISO time.
 */
export type LimitEvent = { type: "limit"; kind: LimitKind; message: string; resetsAt?: string }
/** "tokens" covers the token counts, "cost" costUsd. */
export type UsageField = "tokens" | "cost"
/** What a CLI's running totals add up: the reports of one process, or of the whole session. */
export type TotalsScope = "process" | "session"

/** The longest prompt a CLI takes, in UTF-8 bytes (a limit counted in characters is at most as many bytes), and why. */
export type PromptLimit = { bytes: number; why: string }

/** `newSessionId`: the id for a new session, chosen by flow (only for adapters with `choosesSessionId`). */
export type LaunchOptions = { prompt: string; cwd: string; sessionId?: string; newSessionId?: string; model?: string; extraArgs?: readonly string[] }

/** flow's MCP server as an agent CLI starts it (stdio): the server's name, the command, its arguments and environment. */
export type McpServerSpec = { name: string; command: string; args: string[]; env: Record<string, string> }

/** How long one call of flow's MCP server may take before the CLI gives up: flow_ask waits for a person, so a day. */
export const MCP_CALL_TIMEOUT_MS = 86_400_000

/** How long a CLI may wait for flow's MCP server to start and list its tools: seconds on a loaded machine. */
export const MCP_STARTUP_TIMEOUT_MS = 60_000

/** What a CLI needs to be handed an MCP server: arguments, environment, and config files (absolute path → content) to write first. */
export type McpHandOver = { args?: string[]; env?: Record<string, string>; files?: Record<string, string> }

/** An adapter's part of the sandbox: see Adapter.sandbox. */
export type AgentSandbox = { home: readonly string[]; env: readonly string[] }

export type Adapter = {
  cli: string // the adapter's name in flow.yaml: "claude", "codex", ...
  binary: string // executable name on PATH
  install: string // how to get the binary, for the error when it is missing
  testedVersion: string // the CLI version whose flags and stream format this adapter was checked against
  canResume: boolean
  /**
   * The CLI accepts a session id for a new session, and its stream names the session too late to rely on
   * (Copilot: only in its closing line, which a stopped turn never writes). The runner then picks a UUID,
   * passes it as `newSessionId` and records it before the CLI starts, so a stopped turn still resumes.
   */
  choosesSessionId?: boolean
  /**
   * What the CLI keeps in a sandbox (flow.yaml `sandbox`, docs/SANDBOX.md): `home`, its state and config
   * folders and files under HOME, writable there (the first, its own folder, made when missing); `env`, its own variables (API keys, base URLs, config
   * folders) let through the scrubbed environment, a name ending in `*` standing for every name it begins.
   */
  sandbox: AgentSandbox
  /** Environment the CLI needs on top of flow's own (FLOW_PROJECT, FLOW_TASK_ID), e.g. goose's unattended mode. */
  env?: Readonly<Record<string, string>>
  /** Stderr lines that are the CLI's chatter (a colour warning, a mode banner), never a reason it failed. */
  stderrNoise?: readonly RegExp[]
  /**
   * What the CLI's running totals (UsageEvent.totals) add up in its `version` (from the stream's session
   * event; undefined when the stream did not say): one process's reports, or the session's, resumed turns
   * included. Absent: the session's.
   */
  totalsPer?: (version: string | undefined) => TotalsScope
  /**
   * Environment that keeps the CLI's sessions in `dir`, a folder of the task's own outside its worktree, kept
   * between runs (so the task's next turn, on whichever agent of this CLI, finds its session there): for a
   * CLI whose processes otherwise share one store that fails when two of them write at once (OpenCode's
   * SQLite database). The runner makes the folder first.
   */
  sessionStore?(dir: string): Record<string, string>
  /** The error of a resume whose session the CLI does not have (it never saved it, or it was deleted). */
  lostSession?: RegExp
  /**
   * The prompt goes to the CLI's stdin, not its argv (argv() leaves it out): every CLI that reads its prompt
   * there, since one argument is capped at 128 KiB and OpenCode rewrites argv text (docs/AGENTS.md).
   */
  promptOnStdin?: boolean
  /** The longest prompt the CLI takes (lib/agents/prompt-limit.ts); absent: none is known (it reads stdin to its end). */
  promptLimit?: PromptLimit
  /** The CLI's wordings of a rate limit, a used-up quota or an overloaded API (lib/agents/limits.ts), first match wins. */
  limits?: readonly LimitPattern[]
  /**
   * How the CLI is handed flow's MCP server (flow.yaml `mcp: true`), so its agent calls flow's tools; absent
   * for CLIs that cannot be. `dir` is a folder of the task's own, outside the worktree, for config files;
   * `cwd` the agent's worktree. A folder added to the worktree must ignore itself (a .gitignore of `*`).
   */
  mcp?(server: McpServerSpec, where: { dir: string; cwd: string }): McpHandOver
  argv(opts: LaunchOptions): string[] // full argv: [binary, ...flags]; with sessionId: resume that session with opts.prompt
  parseLine(line: string): AgentEvent[] // one stdout line → zero or more events; never throws on junk (non-JSON → text)
}
