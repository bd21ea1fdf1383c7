import { adapterFor, MCP_CLIS } from "../lib/agents"
import { parse } from "../lib/cli/args"
import { AGENT_NAME, loadConfig, publishSettings, type AgentConfig, type FlowConfig } from "../lib/config/config"
import { onReaderGone, STOP_SIGNALS, type Ctx } from "../lib/cli/context"
import { Exit, FlowError, usage } from "../lib/cli/errors"
import { acquire } from "../lib/store/lock"
import { findProject, runLockTarget, type Project } from "../lib/cli/project"
import { doctor } from "../lib/ops/doctor"
import { authorsOf, reviewAgents, reviewersOf } from "../lib/ops/review-agent"
import { reviewDecide } from "../lib/ops/review"
import { sandboxOf, withSandbox } from "../lib/config/sandbox-config"
import { confineCommands } from "../lib/sandbox/commands"
import { batchOf } from "../lib/config/queue-config"
import { EventBus } from "../lib/run/events"
import { selfArgv, writeFlowShim } from "../lib/run/flow-shim"
import { logLine } from "../lib/run/log"
import { notifyRun } from "../lib/notify/run-notify"
import { DEFAULT_LIMIT_BACKOFF_MS } from "../lib/budget/parking"
import { recordRun } from "../lib/run/record"
import { RUN_ID } from "../lib/cli/run-id"
import { startRunLog, type RunLog } from "../lib/run/run-log"
import { answerer, type RunState } from "../lib/state/run-state"
import { openExistingState, openState } from "../lib/state/state"
import { colours } from "../lib/terminal/colour"
import { indexTasks } from "../lib/model/task-index"
import { lockSharedRun, openForRun, openStore } from "../lib/store/open"
import { storeSetting } from "../lib/store/setting"
import type { TaskStore } from "../lib/store/store"
import { startTui, type Tui } from "../lib/tui/tui"
import { answerCheck } from "../lib/budget/budget-answer"
import { reviewCheckpoint } from "../lib/store/checkpoint-review"
import { formatChange } from "../lib/store/transitions"
import { Screen } from "../lib/terminal/screen"
import type { TaskSnapshot } from "../lib/tui/tui-state"
import { orchestrate } from "../lib/run/orchestrator"
import type { RunSettings } from "../lib/run/settings"
import { ensureStateDir } from "../lib/store/valid-cache"
import { tmpdir } from "node:os"
import { basename, join, relative } from "node:path"
import { prepareSettings } from "../lib/worktree/prepare"
import { diskFullError, isDiskFull } from "../lib/store/disk-full"
import { parseDuration } from "../lib/cli/duration"
import { priceOf, priceTable } from "../lib/budget/prices"
import { budgetWarnings, forecast, forecastLines } from "../lib/budget/forecast"
import { spendByTask } from "../lib/budget/budget-meter"

export const meta = {
  usage: "flow run [--agents <n> --cli <cli>] [--parallel <n>] [--checks <n>] [--yes] [--headless] [--dry-run]",
  description: `Runs agents on the task graph until every task is done: each task in its own git worktree
and branch, merged into the target branch when done. Agents come from flow.yaml, or --agents N --cli <cli>
(N agents named <cli>-1 ... <cli>-N; cli 'script' runs the \`\`\`sh blocks of the instructions, offline).
Checkpoints wait for a person ('flow done <id>' from another terminal) unless --yes approves them.
In a terminal it shows a live screen: a pane per agent with its output, the questions waiting for an
answer ('a' answers the oldest), and what happened to tasks; elsewhere (piped, CI, --headless) it prints
a timestamped log line per event. Ctrl-C (or 'q' on the screen) stops the agents and leaves every task
to be resumed by the next 'flow run'. flow.yaml's budget caps what tasks, agents and the run spend
(docs/BUDGETS.md); --dry-run prints the forecast (tasks to do, spend so far, an estimate of the rest) and
starts nothing.
Exit 0 when every task is done, 4 when the run ended with tasks blocked or not done, 130 when stopped.`,
  options: {
    agents: { type: "string", arg: "n", help: "how many agents to run (with --cli; overrides flow.yaml's agents)" },
    cli: { type: "string", arg: "cli", help: "the agent CLI for --agents: script, claude, codex, gemini, opencode, ..." },
    parallel: { type: "string", arg: "n", help: "at most this many tasks at once (default: every agent)" },
    checks: {
      type: "string",
      arg: "n",
      help: "at most this many merge-queue checks at once on this machine (default: as many as tasks; 0, on a shared project: other machines run them)",
    },
    yes: { type: "boolean", help: "approve checkpoints automatically" },
    headless: { type: "boolean", help: "plain timestamped log lines instead of the terminal UI (what a pipe or CI gets anyway)" },
    "dry-run": { type: "boolean", help: "print the agents and the forecast of the run (tasks to do, spend so far, an estimate of the rest), start nothing" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  await openForRun(project)
  const config = loadConfig(project.dir)
  // flow.yaml's reviewers (review: <agent>) work on no task: the rest are the run's authors (docs/REVIEW.md).
  const agents = await authorsOf(withSandbox(agentsFrom(values, config.agents ?? []), config.sandbox), config.review, project)
  const reviewers = reviewersOf(config)
  // An unknown CLI, a command agent without its template, or 'mcp: true' on a CLI that cannot take it, fails
  // before any work starts.
  for (const agent of agents) {
    if (agent.mcp && !MCP_CLIS.includes(agent.cli)) {
      throw new FlowError(
        `agent ${agent.name} has 'mcp: true', but flow cannot hand its MCP server to ${agent.cli}`,
        Exit.invalid,
        `'mcp: true' works with ${MCP_CLIS.join(", ")}; remove it from that agent in flow.yaml`,
      )
    }
    // flow's MCP server runs inside the agent's sandbox, where the project's state is read-only: its tools have no door.
    if (agent.mcp && agent.sandbox !== undefined && agent.sandbox !== false) {
      throw new FlowError(
        `agent ${agent.name} has both 'mcp: true' and a sandbox, and flow's MCP server cannot reach the project's state from inside one`,
        Exit.invalid,
        "remove 'mcp: true' from that agent (its prompt then names the flow commands, which reach the run through the sandbox's door; docs/SANDBOX.md)",
      )
    }
    if (agent.cli !== "script") adapterFor(agent.cli, { command: agent.command })
  }
  // flow doctor's checks (a CLI not installed, git too old, ...) stop the run before any task is touched, not
  // as every task blocked; warnings (a CLI older than flow was checked against) are said once.
  const lines = await doctor({ project, config, agents: [...agents, ...reviewers], env: ctx.env, flowArgv: selfArgv() })
  for (const line of lines) if (line.state === "warn") ctx.stderr(`warning: ${line.what}\n`)
  const failed = lines.filter((l) => l.state === "fail")
  if (failed.length === 1) throw new FlowError(failed[0].what, Exit.failure, failed[0].hint)
  if (failed.length > 1)
    throw new FlowError(
      `flow run cannot start:\n${failed.map((f) => `  ${f.what}`).join("\n")}`,
      Exit.failure,
      "'flow doctor' lists each check with what to fix",
    )
  const parallelism = values.parallel === undefined ? (config.parallelism ?? agents.length) : positiveInt(values.parallel, "--parallel")
  const checks = values.checks === undefined ? undefined : await checkSlots(project, values.checks)
  if (values["dry-run"]) return dryRun(ctx, project, agents, parallelism, config)

  return startRun(ctx, project, {
    agents,
    reviewers,
    parallelism,
    checks,
    yes: Boolean(values.yes),
    headless: Boolean(values.headless),
    ...fromConfig(config, ctx.env),
  })
}

/** The run settings that come from flow.yaml. */
type ConfigSettings = Pick<
  RunSettings,
  | "retries"
  | "taskTimeoutMs"
  | "leaseMs"
  | "limitBackoffMs"
  | "defaults"
  | "publish"
  | "verify"
  | "fixAttempts"
  | "queueDepth"
  | "queueBatch"
  | "emptyDone"
  | "review"
  | "prepare"
  | "budget"
  | "prices"
> & { notify?: FlowConfig["notify"] }

/** The run settings that come from flow.yaml (and FLOW_PORTS_DIR, where the locks of ports are shared). */
export function fromConfig(config: FlowConfig, env: Ctx["env"]): ConfigSettings {
  return {
    budget: config.budget,
    prices: priceTable(config.prices),
    prepare: { ...prepareSettings(config, env.FLOW_PORTS_DIR || join(tmpdir(), "flow-ports")), confine: confineCommands(sandboxOf({}, config.sandbox)) },
    retries: config.retries ?? 1,
    taskTimeoutMs: config.task_timeout === undefined ? undefined : parseDuration(config.task_timeout, "flow.yaml: task_timeout"),
    leaseMs: config.lease === undefined ? DEFAULT_LEASE_MS : parseDuration(config.lease, "flow.yaml: lease"),
    limitBackoffMs: config.limit_backoff === undefined ? DEFAULT_LIMIT_BACKOFF_MS : parseDuration(config.limit_backoff, "flow.yaml: limit_backoff"),
    defaults: { repo: config.repo, target: config.merge_target },
    publish: publishSettings(config),
    verify: config.verify === undefined ? [] : [config.verify].flat(),
    fixAttempts: config.fix_attempts ?? DEFAULT_FIX_ATTEMPTS,
    queueDepth: config.queue_depth,
    queueBatch: batchOf(config.queue),
    emptyDone: config.empty_done ?? "allow",
    notify: config.notify,
    review: config.review,
  }
}

/** How long a claim of a shared graph's task holds without a renewal, unless flow.yaml's `lease` says. */
const DEFAULT_LEASE_MS = 60_000

/** How many times a failed check or a conflict goes back to the agent before the task is blocked. */
const DEFAULT_FIX_ATTEMPTS = 2

export type StartOptions = Pick<RunSettings, "agents" | "parallelism" | "checks" | "yes"> &
  ConfigSettings & {
    /** the log lines even in a terminal */
    headless?: boolean
    /** the agents flow.yaml's `review` names, started on the reviews that wait for them (lib/ops/review-agent.ts) */
    reviewers?: AgentConfig[]
  }

/** Runs the orchestrator on a project, with the terminal UI or the headless log; returns the exit code. */
export async function startRun(ctx: Ctx, project: Project, options: StartOptions): Promise<number> {
  const release = await lockRun(project)
  const controller = new AbortController()
  let releaseShared: (() => Promise<void>) | undefined
  let lost: string | undefined
  try {
    releaseShared = await lockShared(project, (heldBy) => {
      lost = `this run lost its lock when its connection to the database closed, and meanwhile ${heldBy}: this run stopped`
      stop()
    })
  } catch (e) {
    release()
    throw e
  }
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
  const { log, summaryLine } = logEvents(ctx, project, bus, terminal !== undefined)
  let db: RunState | undefined
  let screen: Screen | undefined
  const restore = () => screen?.close()
  try {
    db = await openState(project)
    const store = await openStore(project)
    const flush = recordRun(bus, db)
    const endBeside = besideRun(ctx, project, options, { bus, db, store, signal: controller.signal })
    try {
      if (terminal) {
        // In raw mode Ctrl-C is a key, not a signal: the UI calls `stop` itself. An exit from anywhere
        // (a second Ctrl-C, a crash) still gives the terminal back.
        screen = new Screen(terminal.input, terminal.output)
        process.on("exit", restore)
        ui = runTui(ctx, project, options.agents, { bus, db, screen, store, stop })
      }
      writeFlowShim(project.stateDir, selfArgv())
      const summary = await orchestrate({ ...options, project, flowArgv: selfArgv(), bus, signal: controller.signal, db, store })
      if (lost !== undefined) throw new FlowError(lost, Exit.failure, "its tasks wait for the next 'flow run' ('flow list' shows them)")
      if (summary.interrupted) return Exit.cancelled
      return summary.remaining === 0 ? Exit.ok : Exit.tasksFailed
    } finally {
      ui?.close()
      process.off("exit", restore)
      const summary = summaryLine()
      if (summary !== undefined) ctx.stdout(`${summary}\n`)
      // The screen is gone: say where its lines are.
      if (terminal && log) ctx.stdout(`the run's log: 'flow log' (${relative(project.dir, log.file)})\n`)
      await endBeside().then(flush)
    }
  } catch (e) {
    // A full disk before the agents start (the state database, recovery): nothing started, one clean error.
    // During the run it is waited out (lib/run/space-wait.ts).
    if (!(e instanceof FlowError) && isDiskFull(e)) throw diskFullError(project.stateDir, e, "flow run stopped")
    throw e
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, stop)
    process.off("SIGPIPE", readerLeft)
    onReaderGone(undefined)
    db?.close()
    log?.close()
    await releaseShared?.()
    release()
  }
}

/** What works beside the orchestrator on its events: notifications, agent reviewers; returns what ends both. */
function besideRun(
  ctx: Ctx,
  project: Project,
  options: StartOptions,
  run: { bus: EventBus; db: RunState; store: TaskStore; signal: AbortSignal },
): () => Promise<void> {
  const endNotify = notifyRun({ bus: run.bus, project, destinations: options.notify, db: run.db, env: ctx.env })
  const endReviews = reviewAgents({ project, ...run, agents: options.reviewers ?? [], timeoutMs: options.taskTimeoutMs })
  return async () => {
    await endReviews()
    await endNotify()
  }
}

/** The project's run lock, taken at once or refused, naming the run that holds it. */
async function lockRun(project: Project): Promise<() => void> {
  try {
    ensureStateDir(project.stateDir)
    return await acquire(runLockTarget(project), { timeoutMs: 0, command: "flow run" })
  } catch (e) {
    if (isDiskFull(e)) throw diskFullError(project.stateDir, e, "flow run cannot start")
    throw new FlowError(
      `another 'flow run' is already working on this project (${(e as Error).message.replace(/^run is locked by /, "").replace(/; gave up.*$/, "")})`,
      Exit.failure,
      "wait for it to finish, or stop it with Ctrl-C",
    )
  }
}

/**
 * A shared project: every run is a peer and shares the database's lock; only 'flow unshare' holds it alone,
 * and a run waits for nothing: refused meanwhile (docs/FLEET.md). A lock lost with its connection and
 * refused when taken again (an unshare took it meanwhile) stops this run (`onLost`).
 */
function lockShared(project: Project, onLost: (heldBy: string) => void): Promise<(() => Promise<void>) | undefined> {
  return lockSharedRun(
    project,
    "flow run",
    { run: RUN_ID },
    (heldBy, machines) =>
      new FlowError(
        `${heldBy}: no run starts while the project moves out of the database`,
        Exit.failure,
        `wait for it to finish${machines.length ? ` on ${machines.join(", ")}` : ""}; then 'git pull' and see whether flow.yaml still shares the project`,
      ),
    onLost,
  )
}

/**
 * Every line goes to the run's log file too, so the screen's run can be read afterwards (flow log). On the
 * screen the log lines are not printed; the last one (the summary) is, once the screen is left.
 */
function logEvents(ctx: Ctx, project: Project, bus: EventBus, onScreen: boolean): { log?: RunLog; summaryLine: () => string | undefined } {
  let log: RunLog | undefined
  try {
    log = startRunLog(project)
  } catch {
    // A .flow that takes no new file (full, read-only) costs the log, never the run.
  }
  let summaryLine: string | undefined
  bus.subscribe((event, at) => {
    const line = logLine(event, at)
    if (line === undefined) return
    log?.write(line)
    if (!onScreen) ctx.stdout(`${line}\n`)
    else if (event.type === "run-end") summaryLine = line
  })
  return { log, summaryLine: () => summaryLine }
}

/** The run's terminal UI on `screen`: its keys answer questions and review checkpoints and merges as the commands do. */
function runTui(
  ctx: Ctx,
  project: Project,
  agents: AgentConfig[],
  run: { bus: EventBus; db: RunState; screen: Screen; store: TaskStore; stop: () => void },
): Tui {
  const { bus, db, screen, store, stop } = run
  return startTui({
    bus,
    db,
    screen,
    colours: colours(ctx),
    project: basename(project.dir),
    agents: agents.map((a) => a.name),
    user: answerer(ctx.env),
    answerCheck: (id) => answerCheck(project, db, id),
    loadTasks: () => taskSnapshot(store),
    stop,
    review: async (id, decision, reason) => (await reviewCheckpoint(project, id, decision, reason, "flow run")).map(formatChange),
    decideLanding: async (id, decision, comment) => void (await reviewDecide(project, id, decision, comment, ctx.env)),
  })
}

/** `flow run --dry-run`: who would work and what the rest may cost; nothing is started, no file is written. */
async function dryRun(ctx: Ctx, project: Project, agents: AgentConfig[], parallelism: number, config: FlowConfig): Promise<number> {
  const index = indexTasks((await (await openStore(project)).read()).data)
  const db = await openExistingState(project)
  const spends = db ? await spendByTask(db).finally(() => db.close()) : new Map()
  const prices = priceTable(config.prices)
  const out = [
    "flow run --dry-run: nothing is started",
    `Agents: ${agents.map((a) => `${a.name} (${a.cli})`).join(", ")}; at most ${parallelism} at once`,
    ...forecastLines(forecast(index, spends, config.budget), config.budget).map((line, i) => (i === 0 ? `Forecast: ${line}` : `  ${line}`)),
  ]
  for (const warning of budgetWarnings(agents, config.budget, (m) => priceOf(prices, m) !== undefined)) ctx.stderr(`warning: ${warning}\n`)
  ctx.stdout(`${out.join("\n")}\n`)
  return Exit.ok
}

/** What the terminal UI shows of tasks.yaml. */
async function taskSnapshot(store: TaskStore): Promise<TaskSnapshot> {
  const { data } = await store.read()
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
      "for example: flow run --agents 2 --cli claude, or agents in flow.yaml ('flow help config' shows how)",
    )
  }
  return configured
}

/** `--checks`: a whole number; 0 only on a shared project, whose other machines run the checks (docs/RUN.md, "Merge queue"). */
async function checkSlots(project: Project, text: string): Promise<number> {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 0) throw usage(`--checks must be a whole number (was '${text}')`)
  if (n === 0 && (await storeSetting(project)).kind === "file")
    throw usage("--checks 0 leaves the merge queue's checks to other machines, and a project in files has none", "give --checks 1 or more, or leave it out")
  return n
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1) throw usage(`${flag} must be a positive whole number (was '${text}')`)
  return n
}
