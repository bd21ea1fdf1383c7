// A task whose prompt is far past one argument's 128 KiB (a person's 300 KB note), under `flow run` with each
// real agent CLI against the scripted model server: every CLI starts, gets the whole prompt byte for byte
// (on stdin), and finishes the task.
import { afterAll, expect, test } from "bun:test"
import { claude } from "./agent-e2e-claude-setup"
import { e2eProject } from "./agent-e2e"
import { gemini } from "./agent-e2e-gemini-setup"
import { project, userHome } from "./agent-e2e-openai-home"
import { startModelServer, type ModelServer } from "./fixtures/model-server/server"
import { flow, type TempDir } from "./helpers"

const SLOW = 900_000 // a real CLI reading a 300 KB prompt, on a loaded machine
const tasks = (id: string) =>
  `tasks:\n  - id: ${id}\n    title: Big\n    status: todo\n    instructions: Write big.txt; the note holds the log to read first.\n`

/** About 300 KB of log, as a person pastes one into a note: lines of words, a few quotes and symbols. */
const NOTE = Array.from(
  { length: 4_000 },
  (_, i) =>
    `${String(i).padStart(4, "0")} 2026-11-24T10:${String(i % 60).padStart(2, "0")}:00Z worker "w-${i % 7}" retried job #${i * 13} after 'timeout' (exit 124) $HOME`,
).join("\n")

/** Where two long texts first differ, briefly ("" when equal): a failed comparison must not print 300 KB. */
function difference(got: string, want: string): string {
  if (got === want) return ""
  let i = 0
  while (i < got.length && got[i] === want[i]) i++
  return `lengths ${got.length} and ${want.length}; ends ${JSON.stringify(got.slice(-60))} and ${JSON.stringify(want.slice(-60))}; first difference at ${i}: ${JSON.stringify(got.slice(i, i + 80))} where ${JSON.stringify(want.slice(i, i + 80))} was expected`
}

/** The note as a person's `flow note` arguments: words the shell split, each well under one argument's cap. */
function noteArgs(text: string, parts = 4): string[] {
  const out: string[] = []
  let rest = text
  for (let i = parts - 1; i > 0; i--) {
    const cut = rest.indexOf(" ", Math.floor(rest.length / (i + 1)))
    out.push(rest.slice(0, cut))
    rest = rest.slice(cut + 1)
  }
  return [...out, rest]
}

type Setup = { dir: TempDir; env: Record<string, string>; [Symbol.asyncDispose]: () => Promise<void> }

/** The project (one task, agents of `cli`) and the user's HOME pointed at `server`, as each CLI's user writes it. */
async function setup(cli: string, server: ModelServer, yaml: string): Promise<Setup> {
  if (cli === "claude" || cli === "gemini") {
    const p = await e2eProject(cli === "claude" ? claude : gemini, server, (Bun.YAML.parse(yaml) as { tasks: Record<string, unknown>[] }).tasks)
    return { dir: p.dir, env: p.env, [Symbol.asyncDispose]: p[Symbol.asyncDispose] }
  }
  const home = await userHome(cli as "codex" | "opencode" | "copilot", server.url)
  const dir = await project(cli, yaml)
  // Copilot assumes 128,000 tokens of prompt for a provider's model it does not know (1.0.102 refuses a
  // 300 KB prompt: "Request exceeds the model's prompt budget"); a user whose model reads more says so.
  const env = cli === "copilot" ? { ...home.env, COPILOT_PROVIDER_MAX_PROMPT_TOKENS: "1000000" } : home.env
  return { dir, env, [Symbol.asyncDispose]: async () => (await dir[Symbol.asyncDispose](), await home[Symbol.asyncDispose]()) }
}

const server = startModelServer()
afterAll(() => server.stop())

for (const cli of ["claude", "codex", "gemini", "opencode", "copilot"]) {
  test.concurrent(
    `${cli}: a task with a 300 KB note starts, gets its whole prompt and finishes`,
    async () => {
      // One server for all: each CLI's task has an id of its own, so the scripts do not mix.
      const id = `big-${cli}`
      server.model.script(id, [{ commands: [`printf 'big\\n' > big.txt && git add big.txt && git commit -qm big`, `flow done ${id}`], text: "Done." }])
      await using p = await setup(cli, server, tasks(id))
      expect((await flow(p.dir.path, ["note", id, ...noteArgs(NOTE)], { env: p.env })).code).toBe(0)
      const prompt = (await flow(p.dir.path, ["prompt", id], { env: p.env })).stdout
      expect([prompt.includes("3999 2026-11-24T10:39:00Z"), Buffer.byteLength(prompt) > 300_000]).toEqual([true, true])

      const r = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
      expect({ code: r.code, stderr: r.stderr, error: r.stdout.split("\n").filter((l) => l.includes("| error:")) }).toEqual({ code: 0, stderr: "", error: [] })
      expect(p.dir.read("big.txt")).toBe("big\n")
      // The model read the prompt as `flow prompt` prints it, after what the CLI puts first in the same message
      // (Copilot's date stamp, Gemini CLI's session context).
      const first = (server.model.requests(id)[0]?.prompt ?? "").trim()
      const want = prompt.trim()
      expect(difference(first.slice(Math.max(0, first.length - want.length)), want)).toBe("")
    },
    SLOW,
  )
}
