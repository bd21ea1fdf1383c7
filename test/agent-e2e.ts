// End to end with a real agent CLI: `flow run` (FLOW_BIN or the source) drives the CLI from test/agent-clis,
// configured in a temp HOME as its user would configure it, against the scripted model server on loopback
// (test/fixtures/model-server). Each CLI's test file calls agentE2E with how its user points it at a provider.
import { afterAll, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { QuestionsReport } from "../lib/model/json-shapes"
import { stepPrompt } from "../lib/prompts/prompt"
import type { Task } from "../lib/model/task-index"
import { CLIS_BIN, ensureAgentClis } from "./agent-clis/installed"
import { ASKS_SCRIPTS } from "./agent-e2e-tasks"
import { startModelServer, type ModelServer } from "./fixtures/model-server/server"
import { background, flow, git, tasksYaml, tempRepo, type TempDir } from "./helpers"

export type CliSetup = {
  cli: string
  /** Writes the user's config for a provider at `url` into `home`; returns what the user exports in their shell. */
  configure(home: string, url: string): Record<string, string>
  /** The one line the log and the block note give for a rejected API key. */
  authError: string
  /** Each launch of these CLIs takes seconds: the tests' time limits. */
  timeoutMs?: number
}

export type E2EProject = { dir: TempDir; env: Record<string, string>; [Symbol.asyncDispose]: () => Promise<void> }

/** A repository with `tasks`, agents of `setup.cli` in flow.yaml, and a HOME configured for `server`. */
export async function e2eProject(
  setup: CliSetup,
  server: ModelServer,
  tasks: Record<string, unknown>[],
  agent: { count?: number; args?: string[]; mcp?: boolean; sandbox?: boolean } = {},
): Promise<E2EProject> {
  ensureAgentClis()
  const dir = await tempRepo({ "tasks.yaml": tasksYaml(tasks) })
  const agents = Array.from(
    { length: agent.count ?? 1 },
    (_, i) =>
      `  - name: ${setup.cli}-${i + 1}\n    cli: ${setup.cli}\n${agent.args ? `    args: ${JSON.stringify(agent.args)}\n` : ""}${agent.mcp ? "    mcp: true\n" : ""}`,
  )
  dir.write("flow.yaml", `agents:\n${agents.join("")}${agent.sandbox ? "sandbox: true\n" : ""}`)
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qm", "flow project"])
  const home = mkdtempSync(join(tmpdir(), "flow-e2e-home-"))
  // The agent commits as its user would: with the identity in their git config.
  writeFileSync(join(home, ".gitconfig"), "[user]\n\tname = Agent User\n\temail = agent@flow.invalid\n")
  // TMPDIR in the temp HOME: Gemini CLI leaves an error report in the temp folder for each failed request.
  mkdirSync(join(home, "tmp"))
  const env = { HOME: home, TMPDIR: join(home, "tmp"), PATH: `${CLIS_BIN}:${process.env.PATH}`, ...setup.configure(home, server.url) }
  return { dir, env, [Symbol.asyncDispose]: async () => (await dir[Symbol.asyncDispose](), rmSync(home, { recursive: true, force: true })) }
}

export function writeJson(file: string, value: unknown): void {
  mkdirSync(join(file, ".."), { recursive: true })
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
}

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))
const notes = (yaml: string, id: string) =>
  (Bun.YAML.parse(yaml) as { tasks: { id: string; ai_notes?: string[] }[] }).tasks.find((t) => t.id === id)?.ai_notes ?? []

/** Polls `check` (each poll runs flow or reads a file, so it is the wait's own pace) until it gives a value. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, ms: number): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(250)
  }
}

const COMMIT = (file: string, message: string) => `git add ${file} && git commit -q -m "${message}"`

const CHAIN_TASKS = [
  {
    id: "alpha",
    title: "Alpha",
    status: "todo",
    steps: [
      { id: "alpha.1", instruction: "Write alpha.txt." },
      { id: "alpha.2", instruction: "Add a line to alpha.txt." },
    ],
  },
  { id: "beta", title: "Beta", status: "todo", depends_on: ["alpha"], instructions: "Copy alpha.txt to beta.txt." },
  { id: "lazy", title: "Lazy", status: "todo", instructions: "Look around." },
  { id: "asker", title: "Asker", status: "todo", instructions: "Ask which port, and wait for the answer." },
  { id: "later", title: "Later", status: "todo", instructions: "Ask which database; do not wait." },
  { id: "early", title: "Early", status: "todo", instructions: "Ask about indentation, then exit." },
  { id: "broken", title: "Broken", status: "todo", instructions: "Anything: the provider rejects the key." },
]

function chainScripts(server: ModelServer): void {
  const m = server.model
  m.script("alpha", [
    { commands: ["printf 'one\\n' > alpha.txt", COMMIT("alpha.txt", "alpha one"), "flow step done alpha.1"], text: "Step 1 is done." },
    { commands: ["printf 'two\\n' >> alpha.txt", COMMIT("alpha.txt", "alpha two"), "flow step done alpha.2"], text: "Step 2 is done." },
  ])
  m.script("beta", [{ commands: ["cp alpha.txt beta.txt", COMMIT("beta.txt", "beta"), "flow done beta"], text: "Copied." }])
  m.script("lazy", [{ commands: ["ls"], text: "I looked around." }]) // and forgets `flow done`, twice
  m.script("asker", [{ commands: ['flow ask asker "Which port should the server use?" --wait', "flow done asker"], text: "Using the answer." }])
  m.script("later", [
    { commands: ['flow ask later "Postgres or SQLite?"'], text: "I asked; I exit to wait for the answer." },
    { commands: ["flow done later"], text: "Done with the answer." },
  ])
  m.script("early", ASKS_SCRIPTS.early!) // answered while its agent works, which exits without reading it
  m.script("broken", [{ fail: { status: 401, message: "invalid x-api-key" } }])
}

/**
 * The tests every CLI passes; with `sandbox`, the same with flow.yaml's `sandbox: true` (docs/SANDBOX.md): the
 * chain's steps, questions and a resume then go through the sandbox's flow command door.
 */
export function agentE2E(setup: CliSetup, o: { sandbox?: boolean } = {}): void {
  const timeout = setup.timeoutMs ?? 240_000
  const server = startModelServer()
  afterAll(() => server.stop())
  const name = o.sandbox ? `${setup.cli} in the sandbox` : setup.cli

  test(
    `${name}: a dependency chain with steps in one session, a forgotten 'flow done', questions with and without --wait, a rejected key`,
    async () => {
      chainScripts(server)
      await using p = await e2eProject(setup, server, CHAIN_TASKS, { count: 3, sandbox: o.sandbox })
      const run = background(p.dir.path, ["run", "--headless"], p.env)
      const answer = async (task: string, text: string) => {
        const q = await until(
          `${task}'s question`,
          async () => {
            const r = await flow(p.dir.path, ["questions", "--json"], { env: p.env })
            return (JSON.parse(r.stdout || '{"questions":[]}') as QuestionsReport).questions.find((q) => q.task_id === task)
          },
          timeout,
        )
        expect((await flow(p.dir.path, ["answer", q.id, text], { env: p.env })).code).toBe(0)
      }
      // `later` asks without --wait: its answer comes once its agent has exited to wait, as a person's would.
      await Promise.all([
        answer("asker", "8080"),
        run.waitFor("later: waiting for the answer to", timeout).then(() => answer("later", "SQLite")),
        answer("early", "Tabs"),
      ])
      const end = await run.done()
      const log = end.stdout
      expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 4, stderr: "" })
      const yaml = p.dir.read("tasks.yaml")
      expect(statuses(yaml)).toEqual({ alpha: "done", beta: "done", lazy: "blocked", asker: "done", later: "done", early: "done", broken: "blocked" })

      // The chain: both steps in one session, the dependent saw its dependency's file, all merged.
      expect(p.dir.read("alpha.txt")).toBe("one\ntwo\n")
      expect(p.dir.read("beta.txt")).toBe("one\ntwo\n")
      const alpha = server.model.requests("alpha")
      const step2 = alpha.find((r) => r.turn === 2)!
      // Byte for byte what flow wrote (the server trims the ends: CLIs add context around the prompt).
      const alphaTask = (Bun.YAML.parse(yaml) as { tasks: Task[] }).tasks.find((t) => t.id === "alpha")!
      expect(step2.prompt).toBe(stepPrompt(alphaTask, alphaTask.steps![1]!).trim())
      expect(step2.prompts![0]).toContain("This task has 2 steps, done one at a time in this session. Do only step 1 now.")
      expect(alpha.find((r) => r.turn === 1)!.prompt).toContain("# Your task: alpha: Alpha")
      expect(log).toMatch(/alpha: step alpha\.2 \(session \S+\)/)
      expect(log).toContain("alpha | tool ")
      expect(log).toMatch(/beta: merged \S+ into main/)

      // A forgotten `flow done`: resumed once in the same session, then blocked.
      expect(log).toContain("lazy: retry 2: the agent exited (code 0) without 'flow done lazy' or 'flow block lazy'")
      const lazy = server.model.requests("lazy").find((r) => r.turn === 2)!
      expect(lazy.prompt).toBe(
        `the agent exited (code 0) without 'flow done lazy' or 'flow block lazy'. Finish the task, then run 'flow done lazy', or run 'flow block lazy "<reason>"' if you cannot.`,
      )
      expect(lazy.prompts![0]).toContain("# Your task: lazy: Lazy")
      expect(notes(yaml, "lazy").at(-1)).toStartWith("the agent exited (code 0) without 'flow done' or 'flow block'; its last output:")

      // `flow ask --wait` printed the answer to the model; without --wait the session was resumed with it.
      expect(
        server.model
          .requests("asker")
          .flatMap((r) => r.toolResults ?? [])
          .join("\n"),
      ).toContain("8080")
      const later = server.model.requests("later").find((r) => r.turn === 2)!
      expect(later.prompt).toStartWith("People answered the question you asked about task 'later':\n\n- q-")
      expect(later.prompt).toContain("  Answer: SQLite\n")
      expect(later.prompts![0]).toContain("# Your task: later: Later")
      // An answer given while the agent worked, which it never read: handed over when it exits, not a retry.
      const early = server.model.requests("early").find((r) => r.turn === 2)!
      expect(early.prompt).toStartWith("People answered the question you asked about task 'early':\n\n- q-")
      expect(early.prompt).toContain("  Answer: Tabs\n")
      expect(log).toMatch(/early: q-\d+ answered; resuming the session/)
      expect(log).not.toContain("early: waiting for the answer to")
      expect(log).not.toContain("early: retry")

      // A rejected key: one line in the log and in the block note, and no other errors logged.
      expect(log).toContain(`broken | error: ${setup.authError}\n`)
      expect(notes(yaml, "broken").at(-1)).toMatch(
        new RegExp(`^the agent exited \\(code \\d+: ${escapeRegExp(setup.authError)}\\) without 'flow done' or 'flow block'`),
      )
      expect(log.split("\n").filter((l) => l.includes("| error:") && !l.includes("broken |"))).toEqual([])
    },
    timeout,
  )

  test(
    `${name}: a run stopped by SIGTERM mid-command resumes the same session in the next run`,
    async () => {
      server.model.script("slow", [
        { commands: ["echo started > started.txt", "sleep 100"] },
        { commands: [COMMIT("started.txt", "slow"), "flow done slow"], text: "Finished after the restart." },
      ])
      await using p = await e2eProject(setup, server, [{ id: "slow", title: "Slow", status: "todo", instructions: "Take your time." }], { sandbox: o.sandbox })
      const first = background(p.dir.path, ["run", "--headless"], p.env)
      await first.waitFor("slow | tool ", timeout / 2)
      await until(
        "the agent's first command",
        async () => (Bun.file(join(p.dir.path, ".flow", "worktrees", "slow", "started.txt")).size > 0 ? true : undefined),
        timeout / 2,
      )
      await first.waitFor("sleep 100", timeout / 2)
      first.proc.kill("SIGTERM")
      expect((await first.done()).code).toBe(130)
      expect(statuses(p.dir.read("tasks.yaml"))).toEqual({ slow: "in_progress" })

      const second = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
      expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" })
      expect(second.stdout).toContain("slow: resumed by")
      expect(statuses(p.dir.read("tasks.yaml"))).toEqual({ slow: "done" })
      expect(p.dir.read("started.txt")).toBe("started\n")
      const resumed = server.model.requests("slow").find((r) => r.turn === 2)!
      expect(resumed.prompts!.length).toBeGreaterThanOrEqual(2) // the same conversation, not a new one
      expect(resumed.prompts![0]).toContain("# Your task: slow: Slow")
    },
    timeout,
  )
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
}
