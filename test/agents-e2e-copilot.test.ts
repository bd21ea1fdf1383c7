// `flow run` with the real GitHub Copilot CLI (test/agent-clis), pointed as a user would (its BYOK
// environment: COPILOT_PROVIDER_BASE_URL, COPILOT_OFFLINE=true; see userHome) at the scripted model server's
// Chat Completions on loopback. The model plays a script of shell commands per task (Copilot's `bash` tool).
import { describe, expect, test } from "bun:test"
import { startModelServer } from "./fixtures/model-server/server"
import { asksScenario, stopScenario, lastNote, project, seen, session, statuses, turnRequests, userHome } from "./agent-e2e-openai-home"
import { CHAIN, CHAIN_SCRIPTS } from "./agent-e2e-tasks"
import { flow } from "./helpers"

const SLOW = 900_000 // a real CLI, several turns (20-60 s a turn on a loaded machine)
const run = test.concurrent

/** Copilot puts `<current_datetime>…</current_datetime>` and a blank line before every user message it sends. */
const unstamped = (prompt = "") => prompt.replace(/^<current_datetime>[^<]*<\/current_datetime>\n\n/, "")

describe("copilot, for real, against the scripted model server", () => {
  run(
    "copilot: a chain with steps in one session, a forgotten 'flow done' retried then blocked, a 401 as a one-line reason",
    async () => {
      await using server = startModelServer({ ...CHAIN_SCRIPTS })
      await using home = await userHome("copilot", server.url)
      await using dir = await project("copilot", CHAIN)
      const lazyPrompt = (await flow(dir.path, ["prompt", "lazy"])).stdout
      const r = await flow(dir.path, ["run"], { env: home.env })
      expect({ statuses: statuses(dir), code: r.code, out: r.stdout }).toMatchObject({
        statuses: { api: "done", web: "done", lazy: "blocked", denied: "blocked" },
        code: 4,
      })

      // The chain: both steps in one session (the second turn carries the first's history), merged, and the
      // dependent saw its dependency's file.
      expect(dir.read("api.txt")).toBe("api 1\napi 2\n")
      expect(dir.read("web.txt")).toBe("web\n")
      expect(JSON.stringify(turnRequests(server, "api", 2)[0]?.body)).toContain("Step 1 done.")
      expect(r.stdout).toContain(`api: step api.2 (session ${session(dir, "api")})`)
      expect(seen(server, "web", "api 1\napi 2")).toBe(true)

      // The prompt arrives byte for byte as `flow prompt` shows it, after Copilot's date stamp and with its
      // trailing newline trimmed (Copilot trims the message).
      expect(unstamped(server.model.requests("lazy")[0]?.prompt)).toBe(lazyPrompt.trimEnd())
      // Forgotten `flow done`: retried once in the same session, then blocked with the agent's last words.
      expect(unstamped(turnRequests(server, "lazy", 2)[0]?.prompt)).toStartWith("the agent exited (code 0) without 'flow done lazy' or 'flow block lazy'")
      expect(JSON.stringify(turnRequests(server, "lazy", 2)[0]?.body)).toContain("I looked around.")
      expect(lastNote(dir, "lazy")).toStartWith("the agent exited (code 0) without 'flow done' or 'flow block'; its last output:\n")
      expect(lastNote(dir, "lazy")).toEndWith("\nStill looking around.")

      // A 401: the reason on one line, logged once per attempt, and the block note's one line: the CLI's last
      // output is that same error, so it is not said twice.
      const reason = /^the agent exited \(code 1: (.*)\) without 'flow done' or 'flow block'$/.exec(lastNote(dir, "denied"))?.[1]
      expect(reason).toBeDefined()
      // Copilot says it in its own words, not the API's (its session.error for a provider's 401).
      expect(reason).toBe(
        `Authentication failed with provider at ${server.url}/v1 (HTTP 401). Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or COPILOT_PROVIDER_BEARER_TOKEN.`,
      )
      const errors = r.stdout.split("\n").filter((l) => l.includes("denied | error:"))
      expect(errors.length).toBe(2) // two attempts, one line each
      expect(errors.every((l) => l.endsWith(reason!))).toBe(true)
    },
    SLOW,
  )

  run(
    "copilot: 'flow ask --wait' gets its answer in the same command; 'flow ask' answered before or after the exit is handed over",
    () => asksScenario("copilot", SLOW, unstamped),
    SLOW,
  )

  run("copilot: SIGTERM stops the agent mid-command; the next run resumes the same session", () => stopScenario("copilot"), SLOW)
})
