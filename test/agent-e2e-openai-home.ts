// End-to-end runs of Codex, OpenCode and Copilot (test/agents-e2e-openai.test.ts, agents-e2e-copilot.test.ts) against the
// scripted model server: a HOME per test holding the configuration a user would write to point the CLI at their own provider.
import { expect } from "bun:test"
import { Database } from "bun:sqlite"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { run } from "../lib/cli/proc"
import { type ModelServer, startModelServer } from "./fixtures/model-server/server"
import { ASKS, ASKS_SCRIPTS, LONG, LONG_SCRIPTS } from "./agent-e2e-tasks"
import { background, flow, ROOT, tempRepo, type TempDir } from "./helpers"
import { REAL_CLOCK } from "./agent-clis/installed"

export const AGENT_BIN = join(ROOT, "test", "agent-clis", "node_modules", ".bin")
export const API_KEY = "sk-scripted-test"

export type UserHome = { path: string; env: Record<string, string>; [Symbol.asyncDispose]: () => Promise<void> }

/**
 * A temp HOME for `cli` with its provider set to the model server at `url`, telemetry and updates off,
 * and a git identity (agents commit). `env` is what `flow run` needs: that HOME, the CLIs on PATH, the key.
 */
export async function userHome(cli: "codex" | "opencode" | "copilot", url: string): Promise<UserHome> {
  // The preload installs the CLIs before any test file loads: one missing fails its tests, never skips them.
  if (!existsSync(join(AGENT_BIN, cli))) throw new Error(`${cli} is not installed in test/agent-clis: run 'bash test/agent-clis/install.sh'`)
  const path = mkdtempSync(join(tmpdir(), `flow-home-${cli}-`))
  const write = (name: string, text: string) => {
    mkdirSync(dirname(join(path, name)), { recursive: true })
    writeFileSync(join(path, name), text)
  }
  write(".gitconfig", "[user]\n\tname = Agent User\n\temail = agent@example.invalid\n")
  if (cli === "codex") write(".codex/config.toml", codexConfig(url))
  else if (cli === "opencode") write(".config/opencode/opencode.json", opencodeConfig(url))
  const env: Record<string, string> = {
    HOME: path,
    PATH: `${AGENT_BIN}:${dirname(process.execPath)}:${process.env.PATH}`,
    SCRIPTED_API_KEY: API_KEY,
    ...REAL_CLOCK,
  }
  if (cli === "copilot") Object.assign(env, copilotEnv(url))
  const home = { path, env, [Symbol.asyncDispose]: async () => rmSync(path, { recursive: true, force: true }) }
  if (cli === "copilot") {
    // What a user's first `copilot` does: unpack the CLI into ~/.cache/copilot/pkg (about 235 MB, 20-25 s
    // on a loaded machine, measured with 1.0.102). Done once here so parallel agents do not each unpack it.
    const r = await run([join(AGENT_BIN, "copilot"), "--version"], { cwd: path, env })
    if (r.code !== 0) {
      await home[Symbol.asyncDispose]()
      throw new Error(`copilot --version exited ${r.code}: ${r.stderr}`)
    }
  }
  if (cli === "opencode") {
    // What a user does after writing the config: check the provider's models are listed. It also creates
    // the user's own OpenCode database, which a run's agents leave alone (each task has its own:
    // expectOwnDatabases below).
    const r = await run([join(AGENT_BIN, "opencode"), "models", "scripted"], { cwd: path, env })
    if (r.code !== 0) {
      await home[Symbol.asyncDispose]()
      throw new Error(`opencode models scripted exited ${r.code}: ${r.stderr}`)
    }
  }
  return home
}

type Task = { id: string; status: string; ai_notes?: string[]; steps?: { id: string; status?: string }[] }
export const tasksOf = (dir: TempDir) => (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: Task[] }).tasks
export const statuses = (dir: TempDir) => Object.fromEntries(tasksOf(dir).map((t) => [t.id, t.status]))
export const lastNote = (dir: TempDir, id: string) =>
  tasksOf(dir)
    .find((t) => t.id === id)
    ?.ai_notes?.at(-1) ?? ""
export const session = (dir: TempDir, id: string) =>
  (JSON.parse(readFileSync(join(dir.path, ".flow", "sessions", `${id}.json`), "utf8")) as { session: string }).session
export const turnRequests = (server: ModelServer, task: string, turn: number) => server.model.requests(task).filter((r) => r.turn === turn)
export const seen = (server: ModelServer, task: string, text: string) => server.model.requests(task).some((r) => r.toolResults?.some((t) => t.includes(text)))

/** `more`: further lines of flow.yaml (a sandbox, test/sandbox-agents.test.ts). */
export function project(cli: string, tasks: string, more = "") {
  return tempRepo({ "tasks.yaml": tasks, "flow.yaml": `agents:\n  - name: ${cli}-1\n    cli: ${cli}\n  - name: ${cli}-2\n    cli: ${cli}\n${more}` })
}

/** Waits until `check` holds, polling (real CLIs take seconds to minutes per turn). */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 900_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(250)
  }
}

/** Answers the pending question whose text includes `about`, once it is asked. */
export async function answer(dir: TempDir, about: string, text: string): Promise<void> {
  let id: string | undefined
  await until(`the question '${about}'`, async () => {
    const pending = (JSON.parse((await flow(dir.path, ["questions", "--json"])).stdout) as { questions: { id: string; text: string }[] }).questions
    id = pending.find((q) => q.text.includes(about))?.id
    return id !== undefined
  })
  expect((await flow(dir.path, ["answer", id!, text])).code).toBe(0)
}

/**
 * The questions scenario (ASKS) with a real CLI: `port`'s answer is its ask command's output; `name`'s comes
 * once its agent has exited and the run waits; `early`'s comes while its agent works, which exits without
 * reading it. The run resumes both sessions with the answer, never as a retry. `prompt` takes off what the
 * CLI adds before a user message.
 */
export async function asksScenario(cli: "codex" | "opencode" | "copilot", ms: number, prompt = (p = "") => p, more = ""): Promise<void> {
  await using server = startModelServer({ ...ASKS_SCRIPTS })
  await using home = await userHome(cli, server.url)
  await using dir = await project(cli, ASKS, more)
  const r = background(dir.path, ["run"], home.env)
  await Promise.all([
    answer(dir, "Which port", "8080"),
    r.waitFor("name: waiting for the answer to", ms).then(() => answer(dir, "Which name", "Ada")),
    answer(dir, "Tabs or spaces", "Tabs"),
  ])
  const { code, stdout, stderr } = await r.done()
  try {
    expectAsked(server, dir, code, stdout, prompt)
  } catch (e) {
    // What the run printed, for whoever reads a failure (one seen in CI only, under load).
    console.error(`flow run exited ${code}:\n${stdout}\n${stderr}`)
    throw e
  }
  if (cli === "opencode") expectOwnDatabases(dir, home, ["port", "name", "early"])
}

/** The questions scenario's checks: each answer reached its session as an answer, never as a retry. */
function expectAsked(server: ModelServer, dir: TempDir, code: number, stdout: string, prompt: (p?: string) => string): void {
  expect({ code, statuses: statuses(dir) }).toEqual({ code: 0, statuses: { port: "done", name: "done", early: "done" } })
  expect(seen(server, "port", "8080")).toBe(true) // the answer was the ask command's output
  expect(turnRequests(server, "port", 2)).toEqual([])
  // flow's own retry of a turn (lib/run/log.ts), not the CLI's retry of a slow request, which its output lines
  // (`port | ... retrying 1/5`) may say on a loaded machine.
  expect(stdout).not.toMatch(/(^|\s)(port|name|early): retry \d+: /m)
  for (const [task, said, given] of [
    ["name", "Asked; waiting for the answer.", "Ada"],
    ["early", "Asked; exiting now.", "Tabs"],
  ]) {
    expect(stdout).toMatch(new RegExp(`${task}: q-\\d+ answered; resuming the session`))
    const next = turnRequests(server, task!, 2)[0]
    expect(prompt(next?.prompt)).toStartWith(`People answered the question you asked about task '${task}':`)
    expect(next?.prompt).toContain(`Answer: ${given}`)
    expect(JSON.stringify(next?.body)).toContain(said!)
  }
  // `early` never waited: its answer was there when its agent exited.
  expect(stdout).not.toContain("early: waiting for the answer to")
}

/**
 * OpenCode's sessions, with two agents at once: each task's alone in a database of its own under the run's
 * state (OPENCODE_DB, lib/agents/opencode.ts), none in the one the user's own OpenCode uses (the HOME's,
 * made by userHome).
 */
export function expectOwnDatabases(dir: TempDir, home: UserHome, tasks: string[]): void {
  const sessionsIn = (file: string) => {
    const db = new Database(file, { readonly: true })
    try {
      return db.query<{ id: string; directory: string }, []>("SELECT id, directory FROM session").all()
    } finally {
      db.close()
    }
  }
  const own = Object.fromEntries(tasks.map((t) => [t, sessionsIn(join(dir.path, ".flow", "sessions", t, "opencode.db"))]))
  expect(own).toEqual(Object.fromEntries(tasks.map((t) => [t, [{ id: session(dir, t), directory: join(dir.path, ".flow", "worktrees", t) }]])))
  expect(sessionsIn(join(home.path, ".local", "share", "opencode", "opencode.db"))).toEqual([])
}

/**
 * The stop scenario (LONG) with a real CLI: SIGTERM mid-command stops the run (exit 130) with the task in
 * progress; the next run resumes the same session, whose history holds the stopped command. (Copilot's
 * stream names the session only in its closing line, which a stopped turn never writes: its adapter picks the
 * id itself with --session-id, so the stopped turn's session is saved all the same.)
 */
export async function stopScenario(cli: "codex" | "opencode" | "copilot", more = ""): Promise<void> {
  await using server = startModelServer({ ...LONG_SCRIPTS })
  await using home = await userHome(cli, server.url)
  await using dir = await project(cli, LONG, more)
  const first = background(dir.path, ["run"], home.env)
  const started = join(dir.path, ".flow", "worktrees", "long", "started.txt")
  await until("the long command to start", () => Bun.file(started).exists())
  first.proc.kill("SIGTERM")
  expect((await first.done()).code).toBe(130)
  expect(statuses(dir)).toEqual({ long: "in_progress" })
  const before = session(dir, "long")
  const second = await flow(dir.path, ["run"], { env: home.env })
  expect({ code: second.code, statuses: statuses(dir) }).toEqual({ code: 0, statuses: { long: "done" } })
  expect(second.stdout).toContain("long: resumed by")
  expect(session(dir, "long")).toBe(before)
  expect(JSON.stringify(turnRequests(server, "long", 2)[0]?.body)).toContain("touch started.txt && sleep 300")
  if (cli === "opencode") expectOwnDatabases(dir, home, ["long"]) // resumed from the task's own database
}

// $CODEX_HOME/config.toml (CODEX_HOME defaults to ~/.codex): a provider speaking the Responses API.
function codexConfig(url: string): string {
  return `model = "gpt-scripted"
model_provider = "scripted"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.scripted]
name = "Scripted model server"
base_url = "${url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
`
}

// Copilot takes a provider from its environment, no file (its bundled source: "bring your own key"): a
// Chat Completions endpoint at COPILOT_PROVIDER_BASE_URL, the key, the model; COPILOT_OFFLINE=true: no
// GitHub login, no telemetry, no update check.
function copilotEnv(url: string): Record<string, string> {
  return {
    COPILOT_PROVIDER_BASE_URL: `${url}/v1`,
    COPILOT_PROVIDER_TYPE: "openai",
    COPILOT_PROVIDER_WIRE_API: "completions",
    COPILOT_PROVIDER_API_KEY: API_KEY,
    COPILOT_MODEL: "gpt-scripted",
    COPILOT_OFFLINE: "true",
  }
}

// ~/.config/opencode/opencode.json: an OpenAI-compatible provider (Chat Completions at baseURL).
function opencodeConfig(url: string): string {
  return `${JSON.stringify(
    {
      $schema: "https://opencode.ai/config.json",
      autoupdate: false,
      share: "disabled",
      provider: {
        scripted: {
          npm: "@ai-sdk/openai-compatible",
          name: "Scripted model server",
          options: { baseURL: `${url}/v1`, apiKey: "{env:SCRIPTED_API_KEY}" },
          models: { "scripted-model": { name: "Scripted model" } },
        },
      },
      model: "scripted/scripted-model",
    },
    null,
    2,
  )}\n`
}
