import { adapterFor, type Adapter } from "../lib/agents"
import { parse } from "../lib/cli/args"
import { AGENT_NAME, loadConfig, publishSettings, type AgentConfig, type FlowConfig } from "../lib/store/config"
import { onReaderGone, STOP_SIGNALS, type Ctx } from "../lib/cli/context"
import { Exit, FlowError, usage } from "../lib/cli/errors"
import { acquire } from "../lib/store/lock"
import { findProject, runLockTarget, type Project } from "../lib/cli/project"
import { EventBus } from "../lib/run/events"
import { selfArgv, writeFlowShim } from "../lib/run/flow-shim"
import { logLine } from "../lib/run/log"
import { recordRun } from "../lib/run/record"
import { answerer, openState, type StateDb } from "../lib/run/state-db"
import { colours } from "../lib/terminal/colour"
import { indexTasks } from "../lib/model/task-index"
import { readTasks } from "../lib/store/tasks"
import { startTui, type Tui } from "../lib/run/tui"
import { reviewCheckpoint } from "../lib/store/checkpoint-review"
import { formatChange } from "../lib/store/transitions"
import { Screen } from "../lib/terminal/screen"
import type { TaskSnapshot } from "../lib/run/tui-state"
import { orchestrate } from "../lib/run/orchestrator"
import type { RunSettings } from "../lib/run/settings"
import { ensureStateDir } from "../lib/store/valid-cache"
import { basename } from "node:path"

export const meta = {
  usage: "flow run [--agents <n> --cli <cli>] [--parallel <n>] [--yes] [--headless]",
  description: `Runs agents on the task graph until every task is done: each task in its own git worktree
and branch, merged into the target branch when done. Agents come from flow.yaml, or --agents N --cli <cli>
(N agents named <cli>-1 ... <cli>-N; cli 'script' runs the \`\`\`sh blocks of the instructions, offline).
Checkpoints wait for a person ('flow done <id>' from another terminal) unless --yes approves them.
In a terminal it shows a live screen: a pane per agent with its output, the questions waiting for an
answer ('a' answers the oldest), and what happened to tasks; elsewhere (piped, CI, --headless) it prints
a timestamped log line per event. Ctrl-C (or 'q' on the screen) stops the agents and leaves every task
to be resumed by the next 'flow run'.
Exit 0 when every task is done, 4 when the run ended with tasks blocked or not done, 130 when stopped.`,
  options: {
    agents: { type: "string", arg: "n", help: "how many agents to run (with --cli; overrides flow.yaml's agents)" },
    cli: { type: "string", arg: "cli", help: "the agent CLI for --agents: script, claude, codex, gemini, opencode, ..." },
    parallel: { type: "string", arg: "n", help: "at most this many tasks at once (default: every agent)" },
    yes: { type: "boolean", help: "approve checkpoints automatically" },
    headless: { type: "boolean", help: "plain timestamped log lines instead of the terminal UI (what a pipe or CI gets anyway)" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  const config = loadConfig(project.dir)
  const agents = agentsFrom(values, config.agents ?? [])
  // An unknown CLI, or a command agent without its template, fails before any work starts.
  for (const agent of agents) if (agent.cli !== "script") requireInstalled(agent, adapterFor(agent.cli, { command: agent.command }))
  const parallelism = values.parallel === undefined ? (config.parallelism ?? agents.length) : positiveInt(values.parallel, "--parallel")

  return startRun(ctx, project, {
    agents,
    parallelism,
    yes: Boolean(values.yes),
    headless: Boolean(values.headless),
    ...fromConfig(config),
  })
}

/** The run settings that come from flow.yaml alone. */
export function fromConfig(config: FlowConfig): Pick<RunSettings, "retries" | "defaults" | "publish" | "verify" | "fixAttempts" | "queueDepth" | "emptyDone"> {
  return {
    retries: config.retries ?? 1,
    defaults: { repo: config.repo, target: config.merge_target },
    publish: publishSettings(config),
    verify: config.verify === undefined ? [] : [config.verify].flat(),
    fixAttempts: config.fix_attempts ?? DEFAULT_FIX_ATTEMPTS,
    queueDepth: config.queue_depth,
    emptyDone: config.empty_done ?? "allow",
  }
}

/** How many times a failed check or a conflict goes back to the agent before the task is blocked. */
const DEFAULT_FIX_ATTEMPTS = 2

export type StartOptions = Pick<
  RunSettings,
  "agents" | "parallelism" | "yes" | "retries" | "defaults" | "publish" | "verify" | "fixAttempts" | "queueDepth" | "emptyDone"
> & {
  /** the log lines even in a terminal */
  headless?: boolean
}

/** Runs the orchestrator on a project, with the terminal UI or the headless log; returns the exit code. */
export async function startRun(ctx: Ctx, project: Project, options: StartOptions): Promise<number> {
  ensureStateDir(project.stateDir)
  let release: () => void
  try {
    release = await acquire(runLockTarget(project), { timeoutMs: 0, command: "flow run" })
  } catch (e) {
    throw new FlowError(
      `another 'flow run' is already working on this project (${(e as Error).message.replace(/^run is locked by /, "").replace(/; gave up.*$/, "")})`,
      Exit.failure,
      "wait for it to finish, or stop it with Ctrl-C",
    )
  }
  const controller = new AbortController()
  let ui: Tui | undefined
  let stops = 0
  const stop = () => {
    stops++
    if (stops > 1) process.exit(Exit.cancelled) // a second Ctrl-C: leave now (the exit hook restores the terminal)
    if (ui) ui.stopping()
    else ctx.stderr("stopping: agents are being stopped; their tasks will be resumed by the next 'flow run' (Ctrl-C again to quit at once)\n")
    controller.abort()
  }
  // SIGHUP: the terminal closed (or `kill -HUP`); stopping restores the screen if one is still there.
  for (const signal of STOP_SIGNALS) process.on(signal, stop)
  // `flow run | head -1`: the reader left. A stop like Ctrl-C (agents stopped, tasks resumable, exit 130),
  // never exit 0; each further write brings another SIGPIPE, which must not count as a second Ctrl-C.
  const readerLeft = () => {
    if (!controller.signal.aborted) stop()
  }
  process.on("SIGPIPE", readerLeft)
  onReaderGone(readerLeft)
  const bus = new EventBus()
  const terminal = options.headless ? undefined : ctx.terminal
  // On the screen the log lines are not printed; the last one (the summary) is, once the screen is left.
  let summaryLine: string | undefined
  bus.subscribe((event, at) => {
    const line = logLine(event, at)
    if (line === undefined) return
    if (!terminal) ctx.stdout(`${line}\n`)
    else if (event.type === "run-end") summaryLine = line
  })
  let db: StateDb | undefined
  let screen: Screen | undefined
  const restore = () => screen?.close()
  try {
    db = await openState(project)
    const flush = recordRun(bus, db)
    try {
      if (terminal) {
        // In raw mode Ctrl-C is a key, not a signal: the UI calls `stop` itself. An exit from anywhere
        // (a second Ctrl-C, a crash) still gives the terminal back.
        screen = new Screen(terminal.input, terminal.output)
        process.on("exit", restore)
        ui = startTui({
          bus,
          db,
          screen,
          colours: colours(ctx),
          project: basename(project.dir),
          agents: options.agents.map((a) => a.name),
          user: answerer(ctx.env),
          loadTasks: () => taskSnapshot(project),
          stop,
          review: async (id, decision, reason) => (await reviewCheckpoint(project, id, decision, reason, "flow run")).map(formatChange),
        })
      }
      writeFlowShim(project.stateDir, selfArgv())
      const summary = await orchestrate({ ...options, project, flowArgv: selfArgv(), bus, signal: controller.signal, db })
      if (summary.interrupted) return Exit.cancelled
      return summary.remaining === 0 ? Exit.ok : Exit.tasksFailed
    } finally {
      ui?.close()
      process.off("exit", restore)
      if (summaryLine !== undefined) ctx.stdout(`${summaryLine}\n`)
      await flush()
    }
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, stop)
    process.off("SIGPIPE", readerLeft)
    onReaderGone(undefined)
    db?.close()
    release()
  }
}

/** What the terminal UI shows of tasks.yaml. */
async function taskSnapshot(project: Project): Promise<TaskSnapshot> {
  const { data } = await readTasks(project)
  return new Map(
    [...indexTasks(data).values()].map(({ task }) => [task.id, { title: task.title, status: task.status, steps: (task.steps ?? []).map((s) => s.id) }]),
  )
}

function agentsFrom(values: { agents?: string; cli?: string }, configured: AgentConfig[]): AgentConfig[] {
  if (values.agents !== undefined || values.cli !== undefined) {
    const cli = values.cli ?? configured[0]?.cli
    if (!cli) throw usage("--agents needs --cli <cli> (or agents in flow.yaml)", "for example: flow run --agents 2 --cli script")
    if (!AGENT_NAME.test(cli)) throw usage(`--cli '${cli}' is not a CLI name`)
    const n = values.agents === undefined ? 1 : positiveInt(values.agents, "--agents")
    return Array.from({ length: n }, (_, i) => ({ name: `${cli}-${i + 1}`, cli }))
  }
  if (configured.length === 0) {
    throw usage(
      "no agents: flow.yaml lists none and no --agents/--cli was given",
      "for example: flow run --agents 2 --cli claude (see docs/RUN.md for flow.yaml)",
    )
  }
  return configured
}

/** A CLI that is not installed fails here, before any task is touched, not as a task blocked with exit 127. */
function requireInstalled(agent: AgentConfig, adapter: Adapter): void {
  const binary = adapter.binary
  // A path in a command template is resolved in the worktree when the agent starts; only bare names are looked up.
  if (binary.includes("/") || Bun.which(binary)) return
  throw new FlowError(`agent ${agent.name} needs '${binary}', which is not on PATH`, Exit.failure, adapter.install)
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1) throw usage(`${flag} must be a positive whole number (was '${text}')`)
  return n
}
