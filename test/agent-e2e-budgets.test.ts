// Budgets and usage limits end to end (docs/BUDGETS.md): the real Claude Code (and Codex, for a fallback and
// the price table) under `flow run`, against the scripted model server, which reports the usage a turn should
// cost and refuses requests for a limit with its reset time.
import { afterAll, expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileSystemNow } from "../lib/cli/file-age"
import type { QuestionsReport, ShowReport } from "../lib/model/json-shapes"
import { REAL_CLOCK, ensureAgentClis } from "./agent-clis/installed"
import { until } from "./agent-e2e"
import { userHome } from "./agent-e2e-openai-home"
import { startModelServer } from "./fixtures/model-server/server"
import { background, flow, git, tasksYaml, tempRepo } from "./helpers"

const TIMEOUT = 300_000
// flow runs on the real clock in this file (REAL_CLOCK): the server reads its reset times on that clock too.
const server = startModelServer({}, { now: () => fileSystemNow(tmpdir()) })
afterAll(() => server.stop())

/** Claude Code's settings as its user writes them, pointing at the model server (one retry of a failed request). */
function claudeSettings(home: string): void {
  mkdirSync(join(home, ".claude"), { recursive: true })
  const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: "sk-ant-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", CLAUDE_CODE_MAX_RETRIES: "1" }
  writeFileSync(join(home, ".claude", "settings.json"), JSON.stringify({ env }))
}

/** A repository with these tasks and flow.yaml, committed, and a user HOME for Claude Code and Codex. */
async function project(tasks: Record<string, unknown>[], flowYaml: string) {
  ensureAgentClis()
  const home = await userHome("codex", server.url)
  claudeSettings(home.path)
  const dir = await tempRepo({ "tasks.yaml": tasksYaml(tasks), "flow.yaml": flowYaml })
  return {
    dir,
    env: { ...home.env, TMPDIR: home.path, ...REAL_CLOCK } as Record<string, string>,
    [Symbol.asyncDispose]: async () => {
      await dir[Symbol.asyncDispose]()
      await home[Symbol.asyncDispose]()
    },
  }
}

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))
const COMMIT = (file: string, text: string) => `printf '${text}\\n' > ${file} && git add ${file} && git commit -qm ${file}`

test(
  "claude: a task past its dollar budget raises the question, goes on in the same session after 'flow answer' with more, and lands",
  async () => {
    // The first turn costs what 20,000 tokens in and 500 out cost the model Claude Code runs, well past $0.01.
    server.model.script("paid", [
      { usage: { input: 20_000, output: 500, cacheRead: 10_000 }, commands: [COMMIT("paid.txt", "paid")], text: "The file is written; more to do." },
      { commands: ["flow done paid"], text: "Done." },
    ])
    await using p = await project(
      [{ id: "paid", title: "Paid", status: "todo", instructions: "Write paid.txt." }],
      "agents:\n  - name: claude-1\n    cli: claude\nbudget:\n  task: { usd: 0.01 }\n",
    )
    const run = background(p.dir.path, ["run", "--headless"], p.env)
    const question = await until(
      "the budget question",
      async () => {
        const r = await flow(p.dir.path, ["questions", "--json"], { env: p.env })
        return (JSON.parse(r.stdout || '{"questions":[]}') as QuestionsReport).questions.find((q) => q.task_id === "paid")
      },
      TIMEOUT,
    )
    expect(question.kind).toBe("budget:usd")
    expect(question.text).toMatch(/^task 'paid' spent \$\d+\.\d\d of \$0\.01: answer with the dollars to add \(5 or \$5\)/)
    // The work so far is on the branch before anyone answers; the target has none of it.
    expect(await git(p.dir.path, ["show", "flow/paid:paid.txt"])).toBe("paid\n")
    expect(await git(p.dir.path, ["ls-tree", "--name-only", "main"])).not.toContain("paid.txt")
    const refused = await flow(p.dir.path, ["answer", question.id, "lots"], { env: p.env })
    expect(refused).toEqual({
      code: 2,
      stdout: "",
      stderr: `error: ${question.id} asks for more budget: answer with the dollars to add (5 or $5) or 'block' (was "lots")\nhint: for example: flow answer ${question.id} 5\n`,
    })
    expect((await flow(p.dir.path, ["answer", question.id, "$5"], { env: p.env })).code).toBe(0)
    const end = await run.done()
    expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
    expect(end.stdout).toMatch(new RegExp(`paid: budget: it spent \\$\\d+\\.\\d\\d of \\$0\\.01; its work is committed and ${question.id} asks for more`))
    expect(end.stdout).toContain(`paid: ${question.id} answered: $5.00 more; its agent goes on in the same session`)
    expect(statuses(p.dir.read("tasks.yaml"))).toEqual({ paid: "done" })
    expect(p.dir.read("paid.txt")).toBe("paid\n")
    // The same session: the request after the answer carries the first prompt; the model worked two turns.
    const second = server.model.requests("paid").find((r) => r.turn === 2)!
    expect(second.prompts![0]).toContain("# Your task: paid: Paid")
    // Spend and budget side by side: the cap is the flow.yaml's plus the $5 granted.
    const show = JSON.parse((await flow(p.dir.path, ["show", "paid", "--json"], { env: p.env })).stdout) as ShowReport
    expect(show.budget?.usd?.cap).toBe(5.01)
    expect(show.budget?.usd?.spent).toBeCloseTo(show.usage!.cost_usd!, 5)
    expect((await flow(p.dir.path, ["show", "paid"], { env: p.env })).stdout).toMatch(/\nBudget: \$\d+\.\d\d of \$5\.01\n/)
    // One merge, journaled once.
    using db = new Database(join(p.dir.path, ".flow", "state.db"), { readonly: true })
    expect(db.query("SELECT task_id, outcome FROM merges").all()).toEqual([{ task_id: "paid", outcome: "merged" }])
  },
  TIMEOUT,
)

test(
  "claude: a run's dollar budget stops new starts once reached; the forecast counts what the finished task spent",
  async () => {
    server.model.script("first", [{ usage: { input: 20_000, output: 500 }, commands: [COMMIT("first.txt", "first"), "flow done first"] }])
    server.model.script("second", [{ commands: ["flow done second"] }])
    await using p = await project(
      [
        { id: "first", title: "First", status: "todo", instructions: "Write first.txt." },
        { id: "second", title: "Second", status: "todo", depends_on: ["first"], instructions: "Anything." },
      ],
      "agents:\n  - name: claude-1\n    cli: claude\nbudget:\n  run: { usd: 0.01 }\n",
    )
    const r = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
    expect(r.stdout).toContain("run: forecast: 2 tasks to do\n")
    expect(r.stdout).toMatch(/run: the run's budget is reached \(spent \$\d+\.\d\d of \$0\.01\): nothing new starts; agents at work finish their turn\n/)
    expect(statuses(p.dir.read("tasks.yaml"))).toEqual({ first: "done", second: "ready_for_agent" })
    expect(server.model.requests("second")).toEqual([])
    const dry = await flow(p.dir.path, ["run", "--dry-run"], { env: p.env })
    expect(dry.code).toBe(0)
    expect(dry.stdout).toMatch(
      /^flow run --dry-run: nothing is started\nAgents: claude-1 \(claude\); at most 1 at once\nForecast: 1 task to do\n {2}spent by the finished tasks: first \$(\d+\.\d\d), [\d,]+ tokens, \d+s \(in all .*\)\n {2}estimate for the rest: \$\1, [\d,]+ tokens, \d+s \(1 task at the mean of the 1 finished .*\)\n {2}budget: \$0\.01 for the run\n$/,
    )
  },
  TIMEOUT,
)

test(
  "claude: an agent whose CLI says its usage limit is reached is parked, not failed, and resumed in the same session after the reset",
  async () => {
    // Both tries of the first request (Claude Code retries once) are refused with the reset 8 s ahead.
    server.model.script("limited", [
      {
        fail: { status: 429, message: "usage limit reached · resets at {reset}", times: 2, resetInSeconds: 8 },
        commands: [COMMIT("limited.txt", "limited"), "flow done limited"],
      },
    ])
    await using p = await project(
      [{ id: "limited", title: "Limited", status: "todo", instructions: "Write limited.txt." }],
      "agents:\n  - name: claude-1\n    cli: claude\n",
    )
    const run = background(p.dir.path, ["run", "--headless"], p.env)
    await run.waitFor("limited: claude-1's usage limit is reached (", TIMEOUT)
    const agents = await flow(p.dir.path, ["agents"], { env: p.env })
    expect(agents.stdout).toMatch(
      /\n {4}Parked until \d\d:\d\d: API Error: Request rejected \(429\) · usage limit reached · resets at \S+ \(its task limited waits\)\n/,
    )
    const end = await run.done()
    expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
    expect(end.stdout).toMatch(
      /limited: claude-1's usage limit is reached \(API Error: Request rejected \(429\) · usage limit reached · resets at \S+\): parked until \d\d:\d\d, then resumed in the same session\n/,
    )
    expect(end.stdout).not.toContain("limited: retry")
    expect(end.stdout).not.toMatch(/limited: .*→ blocked/)
    expect(statuses(p.dir.read("tasks.yaml"))).toEqual({ limited: "done" })
    expect(p.dir.read("limited.txt")).toBe("limited\n")
    const resumed = server.model.requests("limited").filter((r) => r.action?.kind !== "fail")
    expect(resumed[0]!.prompt).toContain("Your last turn on task 'limited' was stopped by a usage limit of your provider (API Error: Request rejected (429)")
    // The same session: Claude Code kept one transcript for the worktree, the one flow resumed.
    const session = (JSON.parse(p.dir.read(".flow/sessions/limited.json")) as { session: string }).session
    const projects = join(p.env.HOME, ".claude", "projects")
    const transcripts = readdirSync(projects)
      .filter((d) => d.endsWith("-limited"))
      .flatMap((d) => readdirSync(join(projects, d)).filter((f) => f.endsWith(".jsonl")))
    expect(transcripts).toEqual([`${session}.jsonl`])
    // No request before the reset time.
    const refused = server.model.requests("limited").filter((r) => r.action?.kind === "fail")
    expect(refused.length).toBe(2)
  },
  TIMEOUT,
)

test(
  "claude to codex: a limited task falls back to an agent of another CLI at once, a fresh session with the branch's work, and lands once; Codex's tokens are priced by the table",
  async () => {
    server.model.script("moved", [
      {
        fail: { status: 429, message: "usage limit reached · resets at {reset}", times: 2, resetInSeconds: 600 },
        commands: ["git log --oneline", COMMIT("moved.txt", "moved"), "flow done moved"],
        usage: { input: 40_000, output: 1_000, cacheRead: 30_000 },
      },
    ])
    await using p = await project(
      [{ id: "moved", title: "Moved", status: "todo", instructions: "Write moved.txt." }],
      [
        "agents:",
        "  - name: claude-1",
        "    cli: claude",
        "    fallback: codex-1",
        "  - name: codex-1",
        "    cli: codex",
        "    model: gpt-scripted",
        "prices:",
        "  gpt-scripted: { input: 2, output: 8, cached_input: 0.5 }",
        "",
      ].join("\n"),
    )
    const r = await flow(p.dir.path, ["run", "--headless", "--parallel", "1"], { env: p.env })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout).toContain("moved: claude-1's usage limit is reached (API Error: Request rejected (429) · usage limit reached · resets at ")
    expect(r.stdout).toMatch(/\): the task moves to codex-1\n/)
    expect(r.stdout).toContain("moved: resumed by codex-1 on flow/moved")
    expect(statuses(p.dir.read("tasks.yaml"))).toEqual({ moved: "done" })
    expect(p.dir.read("moved.txt")).toBe("moved\n")
    // Claude's two refused tries, then only Codex worked, in a session of its own started with the whole task.
    const requests = server.model.requests("moved")
    expect(requests.filter((q) => q.protocol === "anthropic").map((q) => q.action?.kind)).toEqual(["fail", "fail"])
    const codex = requests.filter((q) => q.protocol === "openai-responses")
    expect(codex[0]!.prompt).toContain("# Your task: moved: Moved")
    expect(codex[0]!.prompt).toContain("## Work so far\n\nAgent claude-1 (claude) worked on this task before you and was stopped by its provider's usage limit")
    // Landed once: one merge journaled, one merge commit on main.
    using db = new Database(join(p.dir.path, ".flow", "state.db"), { readonly: true })
    expect(db.query("SELECT task_id, outcome FROM merges").all()).toEqual([{ task_id: "moved", outcome: "merged" }])
    expect((await git(p.dir.path, ["log", "--oneline", "--merges", "main"])).trim().split("\n").length).toBe(1)
    // Codex reports tokens without dollars: 4 responses (3 commands, the last words) of 40,000 in (30,000 of
    // them cached) and 1,000 out each, at $2 / $0.50 cached / $8 per million: (10,000 × 2 + 30,000 × 0.5 +
    // 1,000 × 8) / 1e6 = $0.043 a response. Claude's refused turn reported nothing but zeros.
    const show = JSON.parse((await flow(p.dir.path, ["show", "moved", "--json"], { env: p.env })).stdout) as ShowReport
    expect(show.usage).toEqual({ cost_usd: 0.172, cost_estimated: true, input_tokens: 160_000, output_tokens: 4_000 })
    expect((await flow(p.dir.path, ["show", "moved"], { env: p.env })).stdout).toContain("\nUsage: tokens 160,000 in, 4,000 out, $0.1720 (estimated)\n")
  },
  TIMEOUT,
)
