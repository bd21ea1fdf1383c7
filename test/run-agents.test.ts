// `flow run` with agent CLIs: fake `claude` and `codex` scripts that speak the real stream formats, run the
// flow commands their prompt names, ask questions, and exit without finishing.
import { expect, test } from "bun:test"
import { chmodSync, mkdirSync, readFileSync, symlinkSync } from "node:fs"
import { dirname, join } from "node:path"
import { background, flow, flowArgv, ROOT, tempRepo, type TempDir } from "./helpers"

type Launch = { cli: string; prompt: string; sessionId: string; resumed: boolean; cwd: string }

/** A project whose agents are fake CLIs on PATH; returns the env for `flow run` and the launch record. */
function fakeAgents(dir: TempDir, cli: "claude" | "codex", env: Record<string, string> = {}) {
  const bin = join(dir.path, ".test-bin") // untracked, and removed with the folder
  mkdirSync(bin, { recursive: true })
  symlinkSync(join(ROOT, "test", "fixtures", "fake-agents", `fake-${cli}.ts`), join(bin, cli))
  const record = join(bin, "launches.jsonl")
  dir.write("flow.yaml", `agents:\n  - name: ${cli}-a\n    cli: ${cli}\n`)
  return {
    env: { PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`, FAKE_AGENT_RECORD: record, ...env },
    launches: (): Launch[] =>
      readFileSync(record, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
  }
}

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

const TASKS = `tasks:
  - id: api
    title: API
    status: todo
    steps:
      - id: api.1
        instruction: Routes
      - id: api.2
        instruction: Errors
  - id: web
    title: Web
    status: todo
    depends_on: [api]
    instructions: Build the page.
`

test.concurrent("claude: steps share one resumed session, the agent runs the commands its prompt names, work is merged", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  const fake = fakeAgents(dir, "claude", {
    FAKE_AGENT_FOLLOW_PROMPT: "1",
    FAKE_AGENT_COMMANDS: JSON.stringify([["sh", "-c", 'echo "$FLOW_TASK_ID by $FLOW_AGENT" >> "$FLOW_TASK_ID.txt"']]),
  })
  const r = await flow(dir.path, ["run"], { env: fake.env })
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ api: "done", web: "done" })

  const [first, second, third] = fake.launches()
  expect(fake.launches()).toHaveLength(3)
  // api's first prompt is the whole task with step 1; the second resumes that session with step 2.
  expect(first.resumed).toBe(false)
  expect(first.prompt).toContain("This task has 2 steps, done one at a time in this session. Do only step 1 now.")
  expect(first.prompt).toContain("- `flow step done api.1` when this step is finished and committed; then exit.")
  expect(second).toMatchObject({ resumed: true, sessionId: first.sessionId })
  expect(second.prompt).toStartWith("The previous step is done. Continue with step 2 of 2 of task 'api'.")
  expect(third.resumed).toBe(false)
  expect(third.prompt).toContain("- `flow done web` when every acceptance criterion is met")
  expect(third.cwd).toEndWith("/.flow/worktrees/web")

  // The log shows the stream: tool calls, tokens and cost; the work of both tasks is on main.
  expect(r.stdout).toContain("api | tool Bash: flow step done api.1")
  expect(r.stdout).toMatch(/api \| tokens 100 in, 50 out, \$0\.0123/)
  expect(r.stdout).toContain(`api: step api.2 (session ${first.sessionId})`)
  expect(dir.read("api.txt")).toBe("api by claude-a\napi by claude-a\n")
  expect(dir.read("web.txt")).toBe("web by claude-a\n")
  const yaml = dir.read("tasks.yaml")
  expect(yaml).toMatch(/- id: api\.1\n {8}instruction: Routes\n {8}status: done\n {8}started_at: "?\d{4}-\d\d-\d\dT[\d:]+Z"?\n {8}completed_at: /)
})

test.concurrent("codex: an agent that asks waits for a person's answer and goes on with it", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - id: port\n    title: Pick a port\n    status: todo\n    instructions: Ask which port.\n" })
  const fake = fakeAgents(dir, "codex", { FAKE_AGENT_FOLLOW_PROMPT: "1", FAKE_AGENT_ASK: "Which port should the server use?" })
  const proc = Bun.spawn([...flowArgv(), "run"], { cwd: dir.path, env: { ...process.env, ...fake.env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" })
  let questions = ""
  for (let i = 0; i < 300 && !questions.includes("q-1"); i++) {
    await Bun.sleep(100)
    questions = (await flow(dir.path, ["questions"])).stdout
  }
  expect(questions).toContain("Which port should the server use?")
  expect(questions).toMatch(/^q-1 {2}task: port {2}agent: codex-a {2}asked \d+s ago\n/)
  expect((await flow(dir.path, ["answer", "q-1", "8080"])).code).toBe(0)
  expect(await proc.exited).toBe(0)
  expect(dir.read("tasks.yaml")).toContain("answer: 8080")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ port: "done" })
  expect((await flow(dir.path, ["questions"])).stdout).toBe("No pending questions.\n")
})

test.concurrent("claude: an agent that asks without --wait and exits is resumed in its session with the answer", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": "tasks:\n  - id: db\n    title: Pick a database\n    status: todo\n    instructions: Ask which database.\n",
  })
  const fake = fakeAgents(dir, "claude", { FAKE_AGENT_FOLLOW_PROMPT: "1", FAKE_AGENT_ASK_AND_EXIT: "Postgres or SQLite?" })
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "claude"], fake.env)
  // The answer must come after the run has seen its agent exit with the question open: answered earlier, the
  // run would rightly resume at once, with no wait to report (under load the agent's exit can take a while).
  await run.waitFor("db: waiting for the answer to q-1 before the agent goes on: 'flow answer q-1 <text>'\n")
  const questions = (await flow(dir.path, ["questions"])).stdout
  expect(questions).toMatch(/^q-1 {2}task: db {2}agent: claude-1 {2}asked \d+s ago\n {2}Postgres or SQLite\?\n/)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ db: "in_progress" })
  expect(fake.launches()).toHaveLength(1) // waiting, not retrying
  expect((await flow(dir.path, ["answer", "q-1", "SQLite, in .data/app.db"])).code).toBe(0)
  const end = await run.done()
  expect(end.code).toBe(0)
  expect(end.stdout).toContain("db: q-1 answered; resuming the session\n")
  expect(end.stdout).not.toContain("retry")
  const [first, second] = fake.launches()
  expect(second).toMatchObject({ resumed: true, sessionId: first.sessionId })
  expect(second.prompt).toStartWith(
    "People answered the question you asked about task 'db':\n\n- q-1: Postgres or SQLite?\n  Answer: SQLite, in .data/app.db\n\nContinue the task using this answer.\n",
  )
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ db: "done" })
  expect(dir.read("tasks.yaml")).toContain("answer: SQLite, in .data/app.db")
  // The answered question is part of the task's full prompt from now on (flow prompt shows it too).
  expect((await flow(dir.path, ["prompt", "db"])).stdout).toContain(
    "## Questions already answered\n\n- q-1: Postgres or SQLite?\n  Answer: SQLite, in .data/app.db\n",
  )
})

test.concurrent("a run stopped while its agent waits for an answer: the next run waits too, then resumes the session with it", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": "tasks:\n  - id: db\n    title: Pick a database\n    status: todo\n    instructions: Ask which database.\n",
  })
  const fake = fakeAgents(dir, "claude", { FAKE_AGENT_FOLLOW_PROMPT: "1", FAKE_AGENT_ASK_AND_EXIT: "Postgres or SQLite?" })
  const first = background(dir.path, ["run", "--agents", "1", "--cli", "claude"], fake.env)
  await first.waitFor("db: waiting for the answer to q-1")
  first.proc.kill("SIGTERM")
  expect((await first.done()).code).toBe(130)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ db: "in_progress" })
  const second = background(dir.path, ["run", "--agents", "1", "--cli", "claude"], fake.env)
  await second.waitFor("db: waiting for the answer to q-1")
  expect(fake.launches()).toHaveLength(1) // nothing launched while the question is open
  expect((await flow(dir.path, ["answer", "q-1", "SQLite"])).code).toBe(0)
  const end = await second.done()
  expect(end.code).toBe(0)
  expect(end.stdout).toContain("db: q-1 answered; resuming the session\n")
  const [launch1, launch2] = fake.launches()
  expect(fake.launches()).toHaveLength(2)
  expect(launch2).toMatchObject({ resumed: true, sessionId: launch1.sessionId })
  expect(launch2.prompt).toStartWith("People answered the question you asked about task 'db':\n\n- q-1: Postgres or SQLite?\n  Answer: SQLite\n")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ db: "done" })
})

test.concurrent("an agent that exits without done is resumed once, then its task is blocked with its last output", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - id: lazy\n    title: Lazy\n    status: todo\n    instructions: Do it.\n" })
  const fake = fakeAgents(dir, "claude")
  const r = await flow(dir.path, ["run"], { env: fake.env })
  expect(r.code).toBe(4)
  const [first, second] = fake.launches()
  expect(fake.launches()).toHaveLength(2)
  expect(second).toMatchObject({ resumed: true, sessionId: first.sessionId })
  expect(second.prompt).toStartWith("the agent exited (code 0) without 'flow done lazy' or 'flow block lazy'.")
  expect(r.stdout).toContain("lazy: retry 2: the agent exited (code 0) without 'flow done lazy' or 'flow block lazy'")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ lazy: "blocked" })
  expect(dir.read("tasks.yaml")).toContain("the agent exited (code 0) without 'flow done' or 'flow block'; its last output:")
})

test.concurrent("an agent that blocks its task and exits 0 leaves it blocked and unmerged", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - id: stuck\n    title: Stuck\n    status: todo\n    instructions: Do it.\n" })
  const fake = fakeAgents(dir, "claude", {
    FAKE_AGENT_COMMANDS: JSON.stringify([
      ["sh", "-c", "echo half > half.txt && git add -A && git -c user.name=a -c user.email=a@a commit -qm half"],
      ["flow", "block", "stuck", "the API key is missing"],
    ]),
  })
  const r = await flow(dir.path, ["run"], { env: fake.env })
  expect(r.code).toBe(4)
  expect(fake.launches()).toHaveLength(1)
  expect(r.stdout).not.toContain("merged")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ stuck: "blocked" })
  expect(dir.read("tasks.yaml")).toContain("Blocked: the API key is missing")
  expect(() => dir.read("half.txt")).toThrow()
})

test.concurrent("a CLI that refuses to start says why on stderr only: that line is the error in the log and the block note", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - id: refused\n    title: Refused\n    status: todo\n    instructions: Do it.\n" })
  const fake = fakeAgents(dir, "claude")
  dir.write("flow.yaml", "agents:\n  - name: claude-a\n    cli: claude\n    args: [--bogus]\n")
  const r = await flow(dir.path, ["run"], { env: fake.env })
  expect(r.code).toBe(4)
  expect(r.stdout).toContain("refused | error: claude: error: unknown option '--bogus'\n")
  expect(r.stdout).toContain("refused: claude-a exited 2 after")
  expect(dir.read("tasks.yaml")).toContain("the agent exited (code 2: claude: error: unknown option '--bogus') without 'flow done' or 'flow block'")
})

test.concurrent("a prompt longer than the agent's CLI takes never starts it: the task is blocked at once, saying how long and why", async () => {
  await using dir = await tempRepo({
    "tasks.yaml":
      "tasks:\n  - id: big\n    title: Big\n    status: todo\n    instructions: Read the note.\n  - id: small\n    title: Small\n    status: todo\n    instructions: Go.\n",
    // The prompt is one argument of the program (its $0): Linux's 128 KiB cap applies.
    "flow.yaml":
      'agents:\n  - name: c-1\n    cli: command\n    command: ["sh", "-c", "echo \\"$FLOW_TASK_ID\\" >> \\"$FLOW_PROJECT/launched.txt\\"; flow done \\"$FLOW_TASK_ID\\"", "{prompt}"]\n',
  })
  // A person's 140 KB note, in words of 35 KB (each argument of flow note under the cap).
  expect((await flow(dir.path, ["note", "big", ...Array.from({ length: 4 }, () => "n".repeat(35_000))])).code).toBe(0)
  const prompt = Buffer.byteLength((await flow(dir.path, ["prompt", "big"])).stdout)
  const r = await flow(dir.path, ["run", "--headless"])
  expect(r.code).toBe(4)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ big: "blocked", small: "done" })
  expect(dir.read("launched.txt")).toBe("small\n") // big's agent never started
  const why = `the prompt is ${prompt.toLocaleString("en")} bytes (${Math.floor(prompt / 1024)} KiB), more than command takes (131,071 bytes (127 KiB): the prompt is one argument of its command line, and Linux takes at most 128 KiB in one)`
  expect(r.stdout).toContain(`big | error: ${why}\n`)
  expect(r.stdout).not.toContain("big: retry")
  const notes = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { id: string; ai_notes?: string[] }[] }).tasks[0].ai_notes
  expect(notes?.at(-1)).toBe(
    `flow run: ${why}; shorten what the prompt holds ('flow prompt big' shows it: the task's instructions and notes, its dependencies' notes), or give the task an agent whose CLI takes it`,
  )
})

test.concurrent("copilot: a first launch that failed before it had a session leaves none to resume: the retry gets the whole task", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - id: fresh\n    title: Fresh\n    status: todo\n    instructions: Do it.\n" })
  const bin = join(dir.path, ".test-bin")
  mkdirSync(bin, { recursive: true })
  // A copilot that dies at once the first time (as a broken install or a refused login does), saying nothing on
  // stdout; then, as Copilot 1.0.102 does, reads its prompt from stdin and names its session in its result line.
  dir.write(
    ".test-bin/copilot",
    `#!/usr/bin/env bun
import { appendFileSync, existsSync } from "node:fs"
if (process.argv[2] === "--version") { console.log("1.0.102"); process.exit(0) }
const log = ${JSON.stringify(join(bin, "launches.jsonl"))}
const first = !existsSync(log)
const session = process.argv.find((a) => a.startsWith("--session-id="))?.slice(13)
appendFileSync(log, JSON.stringify({ session, prompt: await Bun.stdin.text() }) + "\\n")
if (first) { console.error("copilot: could not start"); process.exit(1) }
Bun.spawnSync(["flow", "done", "fresh"], { stdout: "ignore" })
console.log(JSON.stringify({ type: "result", sessionId: session, exitCode: 0 }))
`,
  )
  chmodSync(join(bin, "copilot"), 0o755)
  dir.write("flow.yaml", "agents:\n  - name: copilot-1\n    cli: copilot\n")
  const r = await flow(dir.path, ["run", "--headless"], { env: { PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}` } })
  expect({ code: r.code, statuses: statuses(dir.read("tasks.yaml")) }).toEqual({ code: 0, statuses: { fresh: "done" } })
  const [first, second] = readFileSync(join(bin, "launches.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { session: string; prompt: string })
  expect(first.prompt).toContain("# Your task: fresh: Fresh")
  // The retry is a new session, with the task and the reason for the retry, not the reminder alone.
  expect(second.session).not.toBe(first.session)
  expect(second.prompt).toStartWith(first.prompt)
  expect(second.prompt).toContain("the agent exited (code 1) without 'flow done fresh' or 'flow block fresh'")
})
