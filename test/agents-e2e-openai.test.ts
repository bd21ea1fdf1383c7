// `flow run` with the real Codex and OpenCode CLIs (test/agent-clis), each pointed by the configuration a
// user would write at the scripted model server on loopback (Codex: the Responses API; OpenCode: an
// OpenAI-compatible provider, Chat Completions). The model plays a script of shell commands per task.
import { describe, expect, test } from "bun:test"
import { startModelServer } from "./fixtures/model-server/server"
import { asksScenario, stopScenario, lastNote, project, seen, session, statuses, turnRequests, userHome } from "./agent-e2e-openai-home"
import { CHAIN, CHAIN_SCRIPTS } from "./agent-e2e-tasks"
import { flow } from "./helpers"

const CLIS = ["codex", "opencode"] as const
const SLOW = 900_000 // real CLIs, several turns each (OpenCode: up to a minute a turn on a loaded machine)

describe.each(CLIS)("%s, for real, against the scripted model server", (cli) => {
  const run = test.concurrent

  run(
    `${cli}: a chain with steps in one session, a forgotten 'flow done' retried then blocked, a 401 as a one-line reason`,
    async () => {
      await using server = startModelServer({ ...CHAIN_SCRIPTS })
      await using home = await userHome(cli, server.url)
      await using dir = await project(cli, CHAIN)
      const lazyPrompt = (await flow(dir.path, ["prompt", "lazy"])).stdout
      const r = await flow(dir.path, ["run"], { env: home.env })
      expect({ statuses: statuses(dir), code: r.code }).toEqual({ statuses: { api: "done", web: "done", lazy: "blocked", denied: "blocked" }, code: 4 })

      // The chain: both steps in one session (the second turn carries the first's history), merged, and the
      // dependent saw its dependency's file.
      expect(dir.read("api.txt")).toBe("api 1\napi 2\n")
      expect(dir.read("web.txt")).toBe("web\n")
      expect(JSON.stringify(turnRequests(server, "api", 2)[0]?.body)).toContain("Step 1 done.")
      expect(r.stdout).toContain(`api: step api.2 (session ${session(dir, "api")})`)
      expect(seen(server, "web", "api 1\napi 2")).toBe(true)

      // The prompt arrives byte for byte as `flow prompt` shows it (quotes and runs of spaces included).
      expect(server.model.requests("lazy")[0]?.prompt).toBe(lazyPrompt)
      // Forgotten `flow done`: retried once in the same session, then blocked with the agent's last words
      // (never the CLI's stderr warnings).
      expect(turnRequests(server, "lazy", 2)[0]?.prompt).toStartWith("the agent exited (code 0) without 'flow done lazy' or 'flow block lazy'")
      expect(lastNote(dir, "lazy")).toStartWith("the agent exited (code 0) without 'flow done' or 'flow block'; its last output:\n")
      expect(lastNote(dir, "lazy")).toEndWith("\nStill looking around.")
      expect(lastNote(dir, "lazy")).not.toMatch(/WARNING|Reading additional input/)

      // A 401: the reason on one line, logged once per attempt, and the block note's one line: the CLI's last
      // output is that same error, so it is not said twice.
      const reason = /^the agent exited \(code 1: (.*)\) without 'flow done' or 'flow block'$/.exec(lastNote(dir, "denied"))?.[1]
      expect(reason).toBeDefined()
      expect(reason!).toContain("Incorrect API key provided: sk-bad") // Codex adds "unexpected status 401 Unauthorized: "
      const errors = r.stdout.split("\n").filter((l) => l.includes("denied | error:"))
      expect(errors.length).toBe(2) // two attempts, one line each
      expect(r.stdout.split("\n").filter((l) => /denied \| .*Reconnecting/.test(l) && l.includes("error:"))).toEqual([])
    },
    SLOW,
  )
})

describe.each(CLIS)("%s asks and is stopped, for real", (cli) => {
  const run = test.concurrent

  run(
    `${cli}: 'flow ask --wait' gets its answer in the same command; 'flow ask' answered before or after the exit is handed over`,
    () => asksScenario(cli, SLOW),
    SLOW,
  )

  run(`${cli}: SIGTERM stops the agent mid-command; the next run resumes the same session`, () => stopScenario(cli), SLOW)
})
