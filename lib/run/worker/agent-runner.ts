// Runs one agent turn: a CLI through its adapter (streamed, parsed into events) or the built-in `script`
// agent. Either way the result is the exit code, the last lines of output and the session to resume.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { adapterFor } from "../../agents"
import type { AgentEvent, McpHandOver, McpServerSpec } from "../../agents/types"
import { Exit, FlowError } from "../../cli/errors"
import type { AgentConfig } from "../../config/config"
import { lines, spawnGroup } from "../../cli/proc"
import { runScript, shellBlocks } from "../../agents/script-agent"
import { matchLimit, type UsageLimit } from "../../agents/limits"
import { promptTooLong } from "../../agents/prompt-limit"
import { type Pricing, TurnStream } from "../../budget/usage-meter"
import * as clock from "../../cli/clock"
import type { Sandbox } from "../../sandbox/sandbox"

/**
 * `error`: why the turn failed, on one line (the CLI's own error, else its last meaningful stderr line).
 * `lostSession`: the CLI could not resume the session it was given (it does not have it).
 * `limit`: the turn failed because the provider refused for a rate limit, a quota or its load (lib/agents/limits.ts).
 * `tooLong`: the CLI was not started, the prompt being longer than it takes (`error` says so): no retry can help.
 * `unconfirmed`: the session id flow chose for a new session (Adapter.choosesSessionId) the CLI never named, though
 * nobody stopped it: it failed before it had a session, and the next turn must not resume one with half a prompt.
 */
export type TurnResult = {
  code: number
  tail: string
  sessionId?: string
  seconds: number
  error?: string
  lostSession?: boolean
  limit?: UsageLimit
  tooLong?: boolean
  unconfirmed?: boolean
}

export type Turn = {
  agent: AgentConfig
  prompt: string
  /** the instructions the script agent runs (the task's, or the current step's) */
  script: string
  cwd: string
  env: Record<string, string | undefined>
  sessionId?: string
  /** where the session's last reported usage totals are kept between turns and runs (see usage-meter.ts) */
  usageFile?: string
  /** prices for CLIs that report tokens without dollars (lib/budget/prices.ts) */
  pricing?: Pricing
  signal: AbortSignal
  onEvent: (event: AgentEvent) => void
  /** the script agent's success mark (lib/agents/script-agent.ts) */
  doneMark?: string
  /** each process group started (recorded for the reaper) */
  onGroup?: (pid: number, exited: Promise<number>) => void
  /** the task's folder for the sessions of a CLI that keeps them in a store of each task's own (Adapter.sessionStore) */
  sessionDir?: string
  /** flow's MCP server for the agent (flow.yaml `mcp: true`), and the folder for the CLI's config files */
  mcp?: { server: McpServerSpec; dir: string }
  /** the sandbox the agent's processes run in (flow.yaml `sandbox`, lib/sandbox) */
  sandbox?: Sandbox
}

const TAIL_LINES = 20
// A stack frame or the inside of a dumped object: never the line that says what went wrong.
const STACK_LINE = /^\s+(at |[[\]{}]|\w+: )|^\s*[\]}]/

function isNoise(line: string, noise: readonly RegExp[] = []): boolean {
  return line.trim() === "" || noise.some((re) => re.test(line))
}

export async function runTurn(turn: Turn): Promise<TurnResult> {
  const started = performance.now()
  const seconds = () => Math.round(performance.now() - started) / 1000
  if (turn.agent.cli === "script") return scriptTurn(turn, seconds)

  const adapter = adapterFor(turn.agent.cli, { command: turn.agent.command })
  // Started anyway, a CLI would fail to start (E2BIG) or cut the prompt without a word (Gemini CLI at 8 MiB).
  const tooLong = promptTooLong(adapter, turn.prompt)
  if (tooLong) {
    turn.onEvent({ type: "error", message: tooLong })
    return { code: 1, tail: tooLong, error: tooLong, tooLong: true, seconds: seconds() }
  }
  const resume = adapter.canResume ? turn.sessionId : undefined
  const newSessionId = adapter.choosesSessionId && !resume ? crypto.randomUUID() : undefined
  const handOver = turn.mcp ? mcpHandOver(adapter, turn.mcp, turn.cwd) : undefined
  const argv = adapter.argv({
    prompt: turn.prompt,
    cwd: turn.cwd,
    sessionId: resume,
    newSessionId,
    model: turn.agent.model,
    extraArgs: [...(handOver?.args ?? []), ...(turn.agent.args ?? [])],
  })
  const stream = new TurnStream(adapter, turn.usageFile, turn.sessionId, newSessionId ?? turn.sessionId, turn.pricing)
  const output = new TurnOutput()
  let proc: ReturnType<typeof spawnGroup>
  try {
    if (adapter.sessionStore && turn.sessionDir) mkdirSync(turn.sessionDir, { recursive: true })
    const store = turn.sessionDir ? adapter.sessionStore?.(turn.sessionDir) : undefined
    const env = { ...adapter.env, ...turn.env, ...store, ...handOver?.env }
    proc = spawnGroup(turn.sandbox ? turn.sandbox.wrap(argv) : argv, {
      cwd: turn.cwd,
      env: turn.sandbox ? turn.sandbox.env(env) : env,
      signal: turn.signal,
      stdin: adapter.promptOnStdin ? turn.prompt : undefined,
    })
  } catch (e) {
    return { code: 127, tail: `cannot start ${argv[0]}: ${(e as Error).message}`, seconds: seconds() }
  }
  // Recorded once the CLI runs, before it can be stopped: a launch that failed leaves no session behind, or
  // the next turn would resume one the CLI never had, with only the new part of the prompt.
  if (newSessionId) turn.onEvent({ type: "session", id: newSessionId })
  turn.onGroup?.(proc.pid, proc.exited)
  await Promise.all([output.readStdout(proc.stdout, stream, turn.onEvent), output.readStderr(proc.stderr, adapter.stderrNoise)])
  const code = await proc.exited
  // A CLI that refuses to start (Claude Code's root check) or dies says why on stderr only: that line
  // becomes the turn's error, so the log and the block note name the reason, not just the exit code.
  if (code !== 0 && output.error === undefined && output.stderrReason && !turn.signal.aborted) {
    output.error = output.stderrReason
    turn.onEvent({ type: "error", message: output.error })
  }
  const reason = output.error?.replace(/\s+/g, " ").trim()
  const lostSession = turn.sessionId !== undefined && adapter.canResume && code !== 0 && adapter.lostSession?.test(reason ?? "") === true
  const limit = code !== 0 && !turn.signal.aborted ? limitOf(adapter.limits ?? [], reason, output.limitSaid) : undefined
  const said = code !== 0 && reason ? [reason] : code !== 0 || !output.streamed ? [...output.tail, ...output.errTail].slice(-TAIL_LINES) : output.tail
  return {
    code,
    tail: said.join("\n").trim(),
    sessionId: stream.sessionId,
    seconds: seconds(),
    ...(reason ? { error: reason.length > 300 ? `${reason.slice(0, 299)}…` : reason } : {}),
    ...(lostSession ? { lostSession } : {}),
    ...(limit ? { limit } : {}),
    ...(newSessionId && !output.named && !turn.signal.aborted ? { unconfirmed: true } : {}),
  }
}

/** A turn of the built-in `script` agent: the instructions' ```sh blocks, run one after another. */
async function scriptTurn(turn: Turn, seconds: () => number): Promise<TurnResult> {
  const blocks = shellBlocks(turn.script)
  if (blocks.length === 0) {
    turn.onEvent({ type: "text", text: "no ```sh blocks in the instructions: nothing to run" })
    return { code: 0, tail: "", seconds: seconds() }
  }
  const r = await runScript(blocks, turn.cwd, turn.env, (text) => turn.onEvent({ type: "text", text }), {
    signal: turn.signal,
    doneMark: turn.doneMark,
    onGroup: turn.onGroup,
    wrap: turn.sandbox ? { argv: turn.sandbox.wrap, env: turn.sandbox.env } : undefined,
  })
  return { code: r.code, tail: r.output.split("\n").slice(-TAIL_LINES).join("\n"), seconds: seconds() }
}

/**
 * What a CLI's turn said, as it streams. Why the turn failed: the CLI's last error event, else its last stderr
 * line that is neither noise nor a stack frame. What the turn leaves for a block note: after a failure the CLI
 * reported, that error on one line; else the last lines of its stream, and its stderr (where CLIs print
 * warnings, such as Codex's, and progress) only when it failed without saying why or its stream said nothing.
 */
class TurnOutput {
  /** a refusal the stream reported in its own terms */
  limitSaid: UsageLimit | undefined
  error: string | undefined
  stderrReason: string | undefined
  streamed = false
  /** the stream named the session */
  named = false
  readonly tail: string[] = []
  readonly errTail: string[] = []

  /** The CLI's stream, parsed into events handed on as they come. */
  async readStdout(stdout: ReadableStream<Uint8Array>, stream: TurnStream, onEvent: Turn["onEvent"]): Promise<void> {
    for await (const line of lines(stdout)) {
      for (const event of stream.parse(line)) {
        this.streamed = true
        if (event.type === "session") this.named = true
        if (event.type === "error") {
          if (event.message === this.error) continue // a CLI that reports its fatal error twice (Codex)
          this.error = event.message
        }
        if (event.type === "limit") {
          this.limitSaid = { kind: event.kind, message: event.message, ...(event.resetsAt ? { resetsAt: new Date(event.resetsAt) } : {}) }
          continue // said in words by the turn's error; the runner keeps it for the task worker
        }
        if (event.type === "text" || event.type === "error") keep(this.tail, event.type === "text" ? event.text : event.message)
        onEvent(event)
      }
    }
  }

  async readStderr(stderr: ReadableStream<Uint8Array>, noise: readonly RegExp[] | undefined): Promise<void> {
    for await (const line of lines(stderr)) {
      if (isNoise(line, noise)) continue
      keep(this.errTail, line)
      if (!STACK_LINE.test(line)) this.stderrReason = line.trim()
    }
  }
}

/** Keeps the last TAIL_LINES lines of `text` in `into`. */
function keep(into: string[], text: string): void {
  for (const line of text.split("\n")) {
    into.push(line)
    if (into.length > TAIL_LINES) into.shift()
  }
}

/** The limit a failed turn ended with: the stream's own report, with the reset its error text names if it gave none. */
function limitOf(table: Parameters<typeof matchLimit>[0], reason: string | undefined, said: UsageLimit | undefined): UsageLimit | undefined {
  const now = clock.nowDate()
  const text = reason === undefined ? undefined : matchLimit(table, reason, now)
  if (!said) return text
  return { ...said, message: reason ?? said.message, ...(said.resetsAt || !text?.resetsAt ? {} : { resetsAt: text.resetsAt }) }
}

/**
 * The CLI's arguments and environment for flow's MCP server, its config files written. A file in the worktree
 * goes only into a folder flow made there, which ignores itself: a folder of the repository is never written into.
 */
export function mcpHandOver(adapter: ReturnType<typeof adapterFor>, mcp: NonNullable<Turn["mcp"]>, cwd: string): McpHandOver {
  if (!adapter.mcp) {
    throw new FlowError(`flow cannot hand its MCP server to ${adapter.cli}`, Exit.invalid, "remove 'mcp: true' from that agent in flow.yaml")
  }
  const handOver = adapter.mcp(mcp.server, { dir: mcp.dir, cwd })
  for (const [file, text] of Object.entries(handOver.files ?? {})) {
    const folder = dirname(file)
    if (!relative(cwd, file).startsWith("..") && existsSync(folder) && readText(join(folder, ".gitignore")) !== "*\n") {
      throw new FlowError(
        `the worktree ${cwd} has its own ${relative(cwd, folder)} folder, where ${adapter.cli} would read flow's MCP server from`,
        Exit.invalid,
        `flow does not write into a folder of the repository: remove 'mcp: true' from the agent, or that folder from the repository`,
      )
    }
    mkdirSync(folder, { recursive: true })
    writeFileSync(file, text)
  }
  return handOver
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}
