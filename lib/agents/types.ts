// One event type for every agent CLI's output stream, and the adapter contract (docs/AGENTS.md).
export type AgentEvent =
  | { type: "text"; text: string } // assistant text
  | { type: "tool"; name: string; detail?: string } // a tool call, with a short one-line detail (command, file)
  | { type: "session"; id: string } // the session id to resume later
  | { type: "usage"; inputTokens?: number; outputTokens?: number; costUsd?: number }
  | { type: "error"; message: string } // an error the CLI reported in its stream

export type LaunchOptions = { prompt: string; cwd: string; sessionId?: string; model?: string; extraArgs?: readonly string[] }

export type Adapter = {
  /** the adapter's name in flow.yaml: "claude", "codex", ... */
  cli: string
  /** executable name on PATH */
  binary: string
  /** the CLI version whose flags and stream format this adapter was checked against */
  testedVersion: string
  canResume: boolean
  /** full argv: [binary, ...flags]; with sessionId: resume that session with opts.prompt */
  argv(opts: LaunchOptions): string[]
  /** one stdout line → zero or more events; never throws on junk (non-JSON → text) */
  parseLine(line: string): AgentEvent[]
}
