// Gemini CLI (the real CLI) at a usage limit under `flow run`, against the scripted model server answering
// its first requests with Google's quota error. Gemini CLI saves a session only once a request got through,
// so each resume of the session its refused turn announced fails ("No previous sessions found"): the task
// starts afresh with its whole prompt, and the back-off doubles for each limit in a row of the task.
import { afterAll, expect, test } from "bun:test"
import { e2eProject } from "./agent-e2e"
import { gemini } from "./agent-e2e-gemini-setup"
import { startModelServer } from "./fixtures/model-server/server"
import { flow } from "./helpers"

const TIMEOUT = 600_000 // seven Gemini CLI launches, 13-20 s each on a loaded machine
const server = startModelServer()
afterAll(() => server.stop())

// What Google's API says to a key whose quota for the model is none (Gemini CLI 0.61.0 gives up on it at once:
// "limit: 0" is a TerminalQuotaError), and no time it resets.
const QUOTA = "Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-scripted"

test(
  "gemini: a quota on the first turn parks the task with a back-off doubling per limit in a row (1s, 2s, 4s), each try a fresh session with the whole prompt, then it finishes",
  async () => {
    server.model.script("quota", [
      {
        fail: { status: 429, message: QUOTA, times: 3 },
        commands: ["printf 'quota\\n' > quota.txt && git add quota.txt && git commit -qm quota", "flow done quota"],
      },
    ])
    await using p = await e2eProject(gemini, server, [{ id: "quota", title: "Quota", status: "todo", instructions: "Write quota.txt." }])
    p.dir.write("flow.yaml", `${p.dir.read("flow.yaml")}limit_backoff: 1s\n`)
    const r = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    const parked = r.stdout.split("\n").filter((l) => l.includes("quota: gemini-1's usage limit is reached"))
    expect(parked.map((l) => /parked until \d\d:\d\d (\(.*?\)), then/.exec(l)?.[1])).toEqual([
      "(no reset time named: back-off 1s)",
      "(no reset time named: back-off 2s, limit 2 in a row)",
      "(no reset time named: back-off 4s, limit 3 in a row)",
    ])
    expect(parked[0]).toContain(`usage limit is reached ([API Error: ${QUOTA}] Please wait and try again later.`)
    expect(p.dir.read("quota.txt")).toBe("quota\n")
    // Three refused requests, each from a fresh session given the whole task (a resume the CLI refused sent none).
    const turns = server.model.requests("quota")
    expect(turns.filter((q) => q.action?.kind === "fail").length).toBe(3)
    expect(turns.filter((q) => (q.toolResults ?? []).length === 0).map((q) => q.prompt?.includes("# Your task: quota: Quota"))).toEqual([
      true,
      true,
      true,
      true,
    ])
    // No request for the task's own session ever needed the earlier ones: every resume was refused, so the
    // turn that worked has one prompt, the task's.
    expect(turns.at(-1)!.prompts!.filter((x) => x.includes("# Your task: quota"))).toHaveLength(1)
  },
  TIMEOUT,
)
