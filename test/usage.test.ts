// Tokens and cost: per-turn deltas where a CLI reports session totals (kept across a stopped run), and the
// sums per task, agent and run that `flow show`, `flow agents`, `flow dashboard` and `flow view` print.
import { expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { adapterFor } from "../lib/agents"
import { AgentsReport, DashboardReport, RunUsage, ShowReport } from "../lib/model/json-shapes"
import { TurnStream, UsageMeter, turnUsage } from "../lib/budget/usage-meter"
import { addUsage, usageCell, usageText } from "../lib/budget/usage"
import { background, flow, ROOT, tempRepo, type TempDir } from "./helpers"

test("a report of session totals becomes the turn's usage: the difference from the totals last seen", () => {
  const report = { type: "usage", inputTokens: 300, outputTokens: 30, costUsd: 0.0369, totals: ["cost"] } as const
  // Nothing seen yet: the whole report is the turn's; only the fields reported as totals are remembered.
  const first = turnUsage(report, undefined, "claude", "s1")
  expect(first).toEqual({
    usage: { type: "usage", inputTokens: 300, outputTokens: 30, costUsd: 0.0369 },
    seen: { cli: "claude", session: "s1", costUsd: 0.0369 },
  })
  const second = turnUsage({ ...report, costUsd: 0.0492 }, first.seen, "claude", "s1")
  expect(second).toEqual({
    usage: { type: "usage", inputTokens: 300, outputTokens: 30, costUsd: 0.0123 },
    seen: { cli: "claude", session: "s1", costUsd: 0.0492 },
  })
  // A resumed session that got a new id carries its totals on: measured from the resumed one's.
  expect(turnUsage({ ...report, costUsd: 0.06 }, second.seen, "claude", "s1-new", "s1")).toEqual({
    usage: { type: "usage", inputTokens: 300, outputTokens: 30, costUsd: 0.0108 },
    seen: { cli: "claude", session: "s1-new", costUsd: 0.06 },
  })
  // Another session, or another CLI, starts from nothing.
  expect(turnUsage({ ...report, costUsd: 0.05 }, second.seen, "claude", "s2").usage.costUsd).toBe(0.05)
  expect(turnUsage({ ...report, costUsd: 0.05 }, second.seen, "codex", "s1").usage.costUsd).toBe(0.05)
  // Below the last total: the CLI counted afresh, so the report is the turn's and becomes the new total.
  expect(turnUsage({ ...report, costUsd: 0.01 }, second.seen, "claude", "s1")).toEqual({
    usage: { type: "usage", inputTokens: 300, outputTokens: 30, costUsd: 0.01 },
    seen: { cli: "claude", session: "s1", costUsd: 0.01 },
  })
  // A zeroed total (a crash result) and an unchanged one add nothing, and the last total stays.
  expect(turnUsage({ ...report, costUsd: 0 }, second.seen, "claude", "s1")).toEqual({
    usage: { type: "usage", inputTokens: 300, outputTokens: 30, costUsd: 0 },
    seen: second.seen,
  })
  expect(turnUsage({ ...report, costUsd: 0.0492 }, second.seen, "claude", "s1").usage.costUsd).toBe(0)
  // Tokens as totals (Codex); a report without totals passes as it is.
  const tokens = { type: "usage", inputTokens: 3000, outputTokens: 180, totals: ["tokens"] } as const
  const seen = { cli: "codex", session: "t", inputTokens: 2000, outputTokens: 120 }
  expect(turnUsage(tokens, seen, "codex", "t").usage).toEqual({ type: "usage", inputTokens: 1000, outputTokens: 60 })
  expect(turnUsage({ type: "usage", inputTokens: 5 }, seen, "codex", "t")).toEqual({ usage: { type: "usage", inputTokens: 5 }, seen })
})

test("the totals last seen survive the process: a new meter on the same file subtracts them", () => {
  const dir = mkdtempSync(join(tmpdir(), "flow-usage-"))
  try {
    const file = join(dir, "sessions", "api.usage.json")
    const report = (cost: number) => ({ type: "usage", costUsd: cost, totals: ["cost"] }) as const
    expect(new UsageMeter("claude", file).turn(report(0.02), "s")).toEqual({ type: "usage", costUsd: 0.02 })
    expect(new UsageMeter("claude", file).turn(report(0.05), "s")).toEqual({ type: "usage", costUsd: 0.03 })
    expect(Bun.file(file).json()).resolves.toEqual({ cli: "claude", session: "s", costUsd: 0.05 })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test("a process's totals (Claude Code before 2.1.277) are measured within the process: a new process counts whole, the file is untouched", () => {
  const dir = mkdtempSync(join(tmpdir(), "flow-usage-"))
  try {
    const file = join(dir, "sessions", "api.usage.json")
    const report = (cost: number) => ({ type: "usage", costUsd: cost, totals: ["cost"] }) as const
    const first = new UsageMeter("claude", file)
    expect(first.turn(report(0.02), "s", undefined, "process")).toEqual({ type: "usage", costUsd: 0.02 })
    // A second result of the same process: its running total grew by 0.01.
    expect(first.turn(report(0.03), "s", undefined, "process")).toEqual({ type: "usage", costUsd: 0.01 })
    // The resumed session's next process reports its own 0.02 again: all of it is this turn's.
    expect(new UsageMeter("claude", file).turn(report(0.02), "s", "s", "process")).toEqual({ type: "usage", costUsd: 0.02 })
    expect(Bun.file(file).exists()).resolves.toBe(false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test("claude's running cost is the process's before 2.1.277 and the session's from it, or when the stream names no version", () => {
  const per = adapterFor("claude").totalsPer!
  expect(["2.1.197", "2.1.276", "2.0.999", "1.9.0", "2.1.277", "2.1.330", "3.0.0", undefined].map(per)).toEqual([
    "process",
    "process",
    "process",
    "process",
    "session",
    "session",
    "session",
    "session",
  ])
  const init = JSON.stringify({ type: "system", subtype: "init", session_id: "s1", claude_code_version: "2.1.197" })
  expect(adapterFor("claude").parseLine(init)).toEqual([{ type: "session", id: "s1", version: "2.1.197" }])
})

/** The usage events of a session's processes (real Claude Code output, each process's stream from its init line on). */
function replayedCosts(fixture: string): (number | undefined)[] {
  const dir = mkdtempSync(join(tmpdir(), "flow-usage-"))
  try {
    const file = join(dir, "sessions", "t.usage.json")
    const lines = readFileSync(join(ROOT, "test", "fixtures", "agents", fixture), "utf8")
      .trim()
      .split("\n")
    const costs: (number | undefined)[] = []
    let stream: TurnStream | undefined
    let session: string | undefined
    for (const line of lines) {
      // Each process: a new stream, resuming the session the first one started, as the runner launches it.
      if (line.includes('"subtype":"init"')) stream = new TurnStream(adapterFor("claude"), file, session)
      // Rounded as the sums are: the CLI's own figures carry binary noise (0.009177000000000001).
      for (const e of stream!.parse(line)) if (e.type === "usage") costs.push(e.costUsd === undefined ? undefined : Math.round(e.costUsd * 1e10) / 1e10)
      session ??= stream!.sessionId
    }
    return costs
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test("claude, recorded for real: a session over three processes counts each turn's own cost, whichever total the version reports", () => {
  // 2.1.197 (npm's on Node 20): total_cost_usd 0.011115, 0.011688, 0.005934, each the process's alone.
  expect(replayedCosts("claude-2.1.197-resumed.jsonl")).toEqual([0.011115, 0.011688, 0.005934])
  // 2.1.330: total_cost_usd 0.01701, 0.034923, 0.0441, the session's; model_usage_since_last_result gives each turn's.
  expect(replayedCosts("claude-2.1.330-resumed.jsonl")).toEqual([0.01701, 0.017913, 0.009177])
})

test("claude: model_usage_since_last_result, when the CLI writes it, is the turn's cost (no subtraction needed)", () => {
  const line = JSON.stringify({
    type: "result",
    subtype: "success",
    is_error: false,
    session_id: "s",
    total_cost_usd: 0.5,
    usage: { input_tokens: 10, cache_creation_input_tokens: 20, cache_read_input_tokens: 30, output_tokens: 5 },
    model_usage_since_last_result: {
      "claude-sonnet-4-5": { inputTokens: 10, outputTokens: 5, costUSD: 0.02 },
      "claude-haiku-4-5": { inputTokens: 1, outputTokens: 1, costUSD: 0.001 },
    },
  })
  expect(adapterFor("claude").parseLine(line)).toEqual([
    { type: "usage", inputTokens: 60, outputTokens: 5, cacheReadTokens: 30, cacheWriteTokens: 20, costUsd: 0.021 },
  ])
  const none = JSON.parse(line)
  none.model_usage_since_last_result = {}
  expect(adapterFor("claude").parseLine(JSON.stringify(none))).toEqual([
    { type: "usage", inputTokens: 60, outputTokens: 5, cacheReadTokens: 30, cacheWriteTokens: 20, costUsd: 0 },
  ])
})

test("usage as text: only what was reported, thousands separated; sums keep absent fields absent", () => {
  expect(usageText({ input_tokens: 1234567, output_tokens: 89, cost_usd: 0.0421 })).toBe("tokens 1,234,567 in, 89 out, $0.0421")
  expect(usageText({ input_tokens: 10 })).toBe("tokens 10 in")
  expect(usageText({ cost_usd: 1.5 })).toBe("$1.5000")
  expect([usageText({}), usageText(null)]).toEqual([undefined, undefined])
  expect([usageCell({ input_tokens: 1000, output_tokens: 290 }), usageCell({ input_tokens: 1, cost_usd: 0.25 }), usageCell(null)]).toEqual([
    "1,290 tok",
    "$0.2500",
    "",
  ])
  expect(addUsage([{ input_tokens: 1, cost_usd: 0.1 }, null, { input_tokens: 2, cost_usd: 0.2 }])).toEqual({ input_tokens: 3, cost_usd: 0.3 })
  expect(addUsage([null, {}])).toBeNull()
})

/** A project whose agent is the fake CLI `cli` on PATH; returns the env for `flow run`. */
function fakeAgent(dir: TempDir, cli: "claude" | "codex", env: Record<string, string> = {}): Record<string, string> {
  const bin = join(dir.path, ".test-bin") // untracked, and removed with the folder
  mkdirSync(bin, { recursive: true })
  symlinkSync(join(ROOT, "test", "fixtures", "fake-agents", `fake-${cli}.ts`), join(bin, cli))
  dir.write("flow.yaml", `agents:\n  - name: ${cli}-a\n    cli: ${cli}\n`)
  return {
    PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`,
    FAKE_AGENT_RECORD: join(bin, "launches.jsonl"),
    FAKE_AGENT_FOLLOW_PROMPT: "1",
    ...env,
  }
}

async function json<T>(dir: TempDir, args: string[]): Promise<T> {
  const r = await flow(dir.path, [...args, "--json"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  return JSON.parse(r.stdout) as T
}

test.concurrent("claude: a session stopped and resumed in a new run counts each turn's cost once, per task, agent and run", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": "tasks:\n  - id: db\n    title: Pick a database\n    status: todo\n    instructions: Ask which database.\n",
  })
  const env = fakeAgent(dir, "claude", { FAKE_AGENT_ASK_AND_EXIT: "Postgres or SQLite?" })
  // The fake reports total_cost_usd as Claude Code does: 0.0123 a turn, summed over the session.
  const first = background(dir.path, ["run", "--agents", "1", "--cli", "claude"], env)
  await first.waitFor("db: waiting for the answer to q-1")
  first.proc.kill("SIGTERM")
  expect((await first.done()).code).toBe(130)
  const second = background(dir.path, ["run", "--agents", "1", "--cli", "claude"], env)
  await second.waitFor("db: waiting for the answer to q-1")
  expect((await flow(dir.path, ["answer", "q-1", "SQLite"])).code).toBe(0)
  const end = await second.done()
  expect(end.code).toBe(0)
  // The resumed turn reported a session total of 0.0246; its own cost is the difference.
  expect(end.stdout).toContain("db | tokens 100 in, 50 out, $0.0123\n")

  const turn2 = { input_tokens: 200, output_tokens: 100, cost_usd: 0.0246 }
  const show = await json<ShowReport>(dir, ["show", "db"])
  expect(ShowReport(show)).toEqual(show)
  expect(show.usage).toEqual(turn2)
  expect((await flow(dir.path, ["show", "db"])).stdout).toContain("\nUsage: tokens 200 in, 100 out, $0.0246\n")
  const agents = await json<AgentsReport>(dir, ["agents"])
  expect(AgentsReport(agents)).toEqual(agents)
  expect(agents.agents.map((a) => [a.name, a.usage])).toEqual([
    ["claude-a", null],
    ["claude-1", turn2],
  ])
  expect((await flow(dir.path, ["agents"])).stdout).toContain(
    "  claude-1 (claude)\n    Current: none\n    Completed: 1 tasks\n    Usage: tokens 200 in, 100 out, $0.0246\n",
  )
  const dashboard = await json<DashboardReport>(dir, ["dashboard"])
  expect(DashboardReport(dashboard)).toEqual(dashboard)
  // The last run is the second: it ran one turn.
  expect(dashboard.usage).toEqual({ run: { input_tokens: 100, output_tokens: 50, cost_usd: 0.0123 }, total: turn2, budget: null })
  expect((await flow(dir.path, ["dashboard"], { env: { COLUMNS: "100" } })).stdout).toContain(
    "\nUsage: last run tokens 100 in, 50 out, $0.0123; all runs tokens 200 in, 100 out, $0.0246\n",
  )
})

for (const version of ["2.1.330", "2.1.197"]) {
  test.concurrent(`claude ${version}: steps resume one session; each turn counts its own cost, whatever total the CLI reports`, async () => {
    await using dir = await tempRepo({
      "tasks.yaml":
        "tasks:\n  - id: api\n    title: API\n    status: todo\n    steps:\n      - id: api.1\n        instruction: Routes\n      - id: api.2\n        instruction: Errors\n",
    })
    // 2.1.330 reports total_cost_usd 0.0123 then 0.0246 (the session's), 2.1.197 0.0123 twice (each process's).
    const env = fakeAgent(dir, "claude", { FAKE_CLAUDE_VERSION: version })
    const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "claude"], { env })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout.match(/api \| tokens .*/g)).toEqual(["api | tokens 100 in, 50 out, $0.0123", "api | tokens 100 in, 50 out, $0.0123"])
    expect((await json<ShowReport>(dir, ["show", "api"])).usage).toEqual({ input_tokens: 200, output_tokens: 100, cost_usd: 0.0246 })
  })
}

test.concurrent("codex: steps resume one thread whose token counts are cumulative; each turn counts its own", async () => {
  await using dir = await tempRepo({
    "tasks.yaml":
      "tasks:\n  - id: api\n    title: API\n    status: todo\n    steps:\n      - id: api.1\n        instruction: Routes\n      - id: api.2\n        instruction: Errors\n",
  })
  const env = fakeAgent(dir, "codex")
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "codex"], { env })
  expect(r.code).toBe(0)
  // The second turn reported the thread's 2000 in and 120 out: 1000 and 60 are its own.
  expect(r.stdout.match(/api \| tokens .*/g)).toEqual(["api | tokens 1000 in, 60 out", "api | tokens 1000 in, 60 out"])
  expect((await json<ShowReport>(dir, ["show", "api"])).usage).toEqual({ input_tokens: 2000, output_tokens: 120 })
  const dashboard = await json<DashboardReport>(dir, ["dashboard"])
  expect(RunUsage(dashboard.usage)).toEqual({
    run: { input_tokens: 2000, output_tokens: 120 },
    total: { input_tokens: 2000, output_tokens: 120 },
    budget: null,
  })
})

test.concurrent("no usage recorded: null in every --json, and no Usage line in show, agents or the dashboard", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": "tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: |\n      ```sh\n      flow done a\n      ```\n",
  })
  dir.write("flow.yaml", "agents:\n  - name: s\n    cli: script\n")
  expect((await flow(dir.path, ["run"])).code).toBe(0)
  expect((await json<ShowReport>(dir, ["show", "a"])).usage).toBeNull()
  expect((await json<AgentsReport>(dir, ["agents"])).agents.map((a) => a.usage)).toEqual([null])
  expect((await json<DashboardReport>(dir, ["dashboard"])).usage).toEqual({ run: null, total: null, budget: null })
  for (const args of [["show", "a"], ["agents"], ["dashboard"]]) expect((await flow(dir.path, args)).stdout).not.toContain("Usage")
})
