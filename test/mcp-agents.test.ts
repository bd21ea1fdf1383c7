// What `flow run` gives an agent CLI with `mcp: true` (lib/agents/*.ts `mcp`, lib/run/worker/agent-runner.ts), checked
// by the real CLIs of test/agent-clis: each lists flow's server from the arguments, environment and files flow
// hands it, and Gemini CLI and OpenCode start it and connect. Claude Code's is driven end to end in
// test/mcp-agent-claude.test.ts.
import { expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { adapterFor, MCP_CLIS } from "../lib/agents"
import { indexTasks, type TaskFile } from "../lib/model/task-index"
import { mcpHandOver } from "../lib/run/worker/agent-runner"
import { budgetNote } from "../lib/budget/budget-gate"
import { stepPrompt, taskPrompt } from "../lib/prompts/prompt"
import { writeFlowShim } from "../lib/run/flow-shim"
import { CLIS_BIN, ensureAgentClis, REAL_CLOCK } from "./agent-clis/installed"
import { flow, flowArgv, tasksYaml, tempRepo, type TempDir } from "./helpers"

/** A project with a task worktree folder, the flow launcher and a HOME of its own; the server flow would hand over. */
async function setup(): Promise<{
  dir: TempDir
  cwd: string
  home: string
  server: Parameters<typeof mcpHandOver>[1]
  [Symbol.asyncDispose]: () => Promise<void>
}> {
  ensureAgentClis()
  const dir = await tempRepo({ "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "x" }]) })
  const stateDir = join(dir.path, ".flow")
  const bin = writeFlowShim(stateDir, flowArgv())
  const cwd = join(stateDir, "worktrees", "api")
  mkdirSync(cwd, { recursive: true })
  const home = mkdtempSync(join(tmpdir(), "flow-mcp-home-"))
  const env = { FLOW_PROJECT: dir.path, FLOW_TASK_ID: "api", FLOW_AGENT: "agent-1", FLOW_RUN_ID: "run-1" }
  return {
    dir,
    cwd,
    home,
    server: { server: { name: "flow", command: join(bin, "flow"), args: ["mcp"], env }, dir: join(stateDir, "mcp", "api") },
    [Symbol.asyncDispose]: async () => (await dir[Symbol.asyncDispose](), rmSync(home, { recursive: true, force: true })),
  }
}

async function cli(argv: string[], cwd: string, env: Record<string, string>): Promise<string> {
  const proc = Bun.spawn([join(CLIS_BIN, argv[0]!), ...argv.slice(1)], {
    cwd,
    env: { ...process.env, NO_COLOR: "1", PATH: `${CLIS_BIN}:${process.env.PATH}`, ...REAL_CLOCK, ...env },
    stdout: "pipe",
    stderr: "pipe",
  })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return `${out}${err}`
}

test("flow hands its server to claude, codex, gemini and opencode, and to no other CLI", () => {
  expect([...MCP_CLIS].sort()).toEqual(["claude", "codex", "gemini", "opencode"])
})

test.concurrent("codex: the -c overrides define the flow server, with its environment, a minute to start and a day for a waiting call", async () => {
  await using s = await setup()
  const handOver = mcpHandOver(adapterFor("codex"), s.server, s.cwd)
  const listed = JSON.parse((await cli(["codex", ...handOver.args!, "mcp", "list", "--json"], s.cwd, { HOME: s.home })).replace(/^WARNING:.*\n/gm, ""))
  expect(listed).toEqual([
    expect.objectContaining({
      name: "flow",
      enabled: true,
      transport: expect.objectContaining({ type: "stdio", command: s.server.server.command, args: ["mcp"], env: s.server.server.env }),
      tool_timeout_sec: 86400,
      startup_timeout_sec: 60,
    }),
  ])
}, 60_000)

test.concurrent("gemini: a self-ignoring .gemini folder in the worktree; Gemini CLI connects to the server", async () => {
  await using s = await setup()
  const handOver = mcpHandOver(adapterFor("gemini"), s.server, s.cwd)
  expect(readFileSync(join(s.cwd, ".gemini", ".gitignore"), "utf8")).toBe("*\n")
  // The hand-over trusts the worktree, as --skip-trust means to, but early enough for its settings file.
  expect(handOver.env).toEqual({ GEMINI_CLI_TRUST_WORKSPACE: "true" })
  expect(await cli(["gemini", "mcp", "list"], s.cwd, { HOME: s.home, ...handOver.env })).toContain(`✓ flow: ${s.server.server.command} mcp (stdio) - Connected`)
  // The next turn writes it again; a .gemini folder of the repository itself is never written into.
  mcpHandOver(adapterFor("gemini"), s.server, s.cwd)
  rmSync(join(s.cwd, ".gemini", ".gitignore"))
  expect(() => mcpHandOver(adapterFor("gemini"), s.server, s.cwd)).toThrow(`the worktree ${s.cwd} has its own .gemini folder`)
}, 60_000)

test.concurrent("opencode: OPENCODE_CONFIG_CONTENT adds the server; OpenCode connects to it", async () => {
  await using s = await setup()
  const handOver = mcpHandOver(adapterFor("opencode"), s.server, s.cwd)
  expect(await cli(["opencode", "mcp", "list"], s.cwd, { HOME: s.home, ...handOver.env })).toMatch(/✓ flow \S*connected/)
}, 60_000)

test.concurrent("claude: an --mcp-config file naming the launcher, and its tools allowed", async () => {
  await using s = await setup()
  const handOver = mcpHandOver(adapterFor("claude"), s.server, s.cwd)
  const file = join(s.server.dir, "claude-mcp.json")
  expect(handOver.args).toEqual(["--mcp-config", file, "--allowedTools", "mcp__flow"])
  expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
    mcpServers: { flow: { type: "stdio", command: s.server.server.command, args: ["mcp"], env: s.server.server.env, timeout: 86_400_000 } },
  })
})

test.concurrent("a CLI flow cannot hand its server to is refused before the run starts", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "x" }]),
    "flow.yaml": "agents:\n  - name: bot\n    cli: script\n    mcp: true\n",
  })
  expect(await flow(dir.path, ["run", "--headless"])).toEqual({
    code: 3,
    stdout: "",
    stderr:
      "error: agent bot has 'mcp: true', but flow cannot hand its MCP server to script\nhint: 'mcp: true' works with claude, codex, gemini, opencode; remove it from that agent in flow.yaml\n",
  })
})

test("the prompt of an agent with mcp: true names flow's tools with the task's ids where others name commands", () => {
  const file = Bun.YAML.parse(
    tasksYaml([
      { id: "api", title: "API", status: "todo", instructions: "x" },
      { id: "check", title: "Check", status: "todo", instructions: "y", validation_task_id: "api" },
      { id: "steps", title: "Steps", status: "todo", steps: [{ id: "steps.1", instruction: "one" }] },
    ]),
  ) as TaskFile
  const index = indexTasks(file)
  const talk = (taskId: string, tools: boolean) => taskPrompt({ index, taskId, projectName: "p", tools }).split("## Talking to flow\n\n")[1]
  expect(talk("api", true)).toBe(
    [
      "Call these tools of the flow MCP server (your CLI may show their names with a prefix, such as mcp__flow__flow_done):",
      '- `flow_note` with task_id "api" and the text, to record a decision or finding for the people and agents after you.',
      '- `flow_ask` with task_id "api", the question as text and wait: true when something is unclear: it waits for a person\'s answer and returns it.',
      "  If you cannot wait that long, call it without wait and exit: you will be resumed in this session with the answer.",
      '- `flow_block` with task_id "api" and reason "<reason>" when you cannot go on; then exit.',
      '- `flow_done` with task_id "api" when every acceptance criterion is met, the tests pass and your work is committed; then exit.',
      "",
    ].join("\n"),
  )
  expect(talk("api", false)).toContain("- `flow done api` when every acceptance criterion is met")
  expect(taskPrompt({ index, taskId: "api", projectName: "p", tools: true })).not.toContain("`flow ")
  expect(talk("steps", true)).toContain('- `flow_step_done` with step_id "steps.1" when this step is finished and committed')
  expect(stepPrompt(index.get("steps")!.task, index.get("steps")!.task.steps![0]!, true)).toContain('`flow_step_done` with step_id "steps.1"')
  // `check` names `api` as its validation task: api's prompt has it check that work, and block with the tool.
  expect(taskPrompt({ index, taskId: "api", projectName: "p", tools: true })).toContain(
    'If it falls short, call `flow_block` with task_id "api" and reason "<what is wrong>" instead of fixing it yourself.',
  )
  // What a session is told when it goes on (here after a budget stopped its turn) names the same tools, in the
  // same words; an agent without them is told the commands.
  expect(budgetNote("api", "over budget", true)).toBe(
    'Your last turn was stopped (over budget). Go on with task \'api\' where you left off; when it is finished, call `flow_done` with task_id "api", or `flow_block` with task_id "api" and reason "<reason>" if you cannot finish it.\n',
  )
  expect(budgetNote("api", "over budget")).toBe(
    `Your last turn was stopped (over budget). Go on with task 'api' where you left off; when it is finished, run 'flow done api', or 'flow block api "<reason>"' if you cannot finish it.\n`,
  )
})
