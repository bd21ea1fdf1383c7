// Agent adapters: each CLI's stream parsed into flow's events (compared whole), junk, and argv with resume.
import { expect, test } from "bun:test"
import { join } from "node:path"
import { AGENT_CLIS, adapterFor, commandAdapter, type Adapter, type AgentEvent } from "../lib/agents"
import { promptTooLong } from "../lib/agents/prompt-limit"
import { FlowError } from "../lib/cli/errors"

const FIXTURES = join(import.meta.dir, "fixtures", "agents")

async function parseFixture(adapter: Adapter, name: string): Promise<AgentEvent[]> {
  const text = await Bun.file(join(FIXTURES, `${name}.jsonl`)).text()
  return text.split("\n").flatMap((line) => adapter.parseLine(line))
}

const CLAUDE_SESSION = "8f14e45f-ceea-4e5a-9f3b-6c1d2e3a4b5c"

test.concurrent("claude: init, text, tool calls and the result's usage and cost", async () => {
  expect(await parseFixture(adapterFor("claude"), "claude")).toEqual([
    { type: "session", id: CLAUDE_SESSION, model: "claude-sonnet-4-5" },
    { type: "text", text: "I'll run the tests first." },
    { type: "tool", name: "Bash", detail: "bun test --bail" },
    { type: "text", text: "Editing the store." },
    { type: "tool", name: "Edit", detail: "src/store.ts" },
    { type: "usage", inputTokens: 3040, outputTokens: 250, cacheReadTokens: 2000, cacheWriteTokens: 1000, costUsd: 0.0421, totals: ["cost"] },
  ])
})

test.concurrent("claude: an error result is an error event, with its usage still counted", async () => {
  expect(await parseFixture(adapterFor("claude"), "claude-error")).toEqual([
    { type: "error", message: "error_max_turns" },
    { type: "usage", inputTokens: 10, outputTokens: 5, costUsd: 1.5, totals: ["cost"] },
  ])
})

test.concurrent("codex: thread id, commands when they start, file changes, MCP calls, the message and the turn's usage", async () => {
  expect(await parseFixture(adapterFor("codex"), "codex")).toEqual([
    { type: "session", id: "0199a213-81c0-7800-8aa1-bbab2a035a53" },
    { type: "tool", name: "shell", detail: "bash -lc 'bun test'" },
    { type: "tool", name: "file_change", detail: "src/store.ts, src/new.ts" },
    { type: "tool", name: "docs.search", detail: "bun sqlite" },
    { type: "text", text: "Done: the store keeps links." },
    { type: "usage", inputTokens: 24763, outputTokens: 122, cacheReadTokens: 24448, totals: ["tokens"] },
  ])
  // Reconnecting notices and error items (warnings Codex went on after) are not errors.
  expect(await parseFixture(adapterFor("codex"), "codex-error")).toEqual([
    { type: "text", text: "warning: Model metadata for `m1` not found. Defaulting to fallback metadata; this can degrade performance and cause issues." },
    { type: "text", text: "Reconnecting... 1/5 (stream disconnected before completion)" },
    { type: "error", message: "stream disconnected before completion" },
    { type: "error", message: "exceeded retry limit, last status: 429 Too Many Requests" },
  ])
})

test.concurrent("gemini: init, assistant deltas (not the user's echo), tools, errors but not warnings, the result's tokens", async () => {
  expect(await parseFixture(adapterFor("gemini"), "gemini")).toEqual([
    { type: "session", id: "c3b0c7a8-2f1e-4d6b-9a35-0e8f1d2c3b4a", model: "gemini-2.5-pro" },
    { type: "text", text: "Let me look " },
    { type: "text", text: "at the tests." },
    { type: "tool", name: "run_shell_command", detail: "bun test" },
    { type: "tool", name: "replace", detail: "/work/repo/src/store.ts" },
    { type: "error", message: "Quota exceeded for gemini-2.5-pro" },
    { type: "usage", inputTokens: 1200, outputTokens: 120 },
  ])
})

test.concurrent("opencode: session from the first step, tools, text, step usage with cache and cost, errors", async () => {
  expect(await parseFixture(adapterFor("opencode"), "opencode")).toEqual([
    { type: "session", id: "ses_6a1b2c3d4e5fABCDEF" },
    { type: "tool", name: "bash", detail: "bun test" },
    { type: "tool", name: "edit", detail: "/work/repo/src/store.ts" },
    { type: "text", text: "The store is fixed." },
    { type: "usage", inputTokens: 1000, outputTokens: 80, cacheReadTokens: 100, costUsd: 0.0123 },
    { type: "error", message: "Rate limit reached" },
  ])
})

test.concurrent("cursor: init, assistant text (not the prompt's echo), tool calls once when started", async () => {
  expect(await parseFixture(adapterFor("cursor"), "cursor")).toEqual([
    { type: "session", id: "b5c2e8f0-1a2b-4c3d-8e9f-0a1b2c3d4e5f" },
    { type: "text", text: "Reading the store first." },
    { type: "tool", name: "read", detail: "src/store.ts" },
    { type: "tool", name: "shell", detail: "bun test" },
    { type: "tool", name: "web_search", detail: "bun sqlite wal" },
  ])
})

test.concurrent("copilot: session, whole messages (not deltas), tool starts, tokens without the premium multiplier, errors", async () => {
  const session: AgentEvent = { type: "session", id: "0cb916db-26aa-40f2-86b5-1ba81b225fd2" }
  expect(await parseFixture(adapterFor("copilot"), "copilot")).toEqual([
    session,
    { type: "text", text: "Running the tests." },
    { type: "tool", name: "bash", detail: "bun test" },
    { type: "usage", inputTokens: 5200, outputTokens: 140, cacheReadTokens: 4000, model: "gpt-5" },
    { type: "error", message: "Rate limit exceeded" },
    session,
  ])
})

test.concurrent("copilot: a stream recorded from 1.0.102 against a local endpoint (BYOK, offline): the text, the session from the result, no usage", async () => {
  // Recorded with COPILOT_OFFLINE=true and COPILOT_PROVIDER_BASE_URL on loopback (docs/AGENTS.md); the long
  // session.skills_loaded line was left out. The JSON output drops assistant.usage and session.start.
  expect(await parseFixture(adapterFor("copilot"), "copilot-byok")).toEqual([
    { type: "text", text: "hello from probe" },
    { type: "session", id: "5108781c-a377-4ccf-8ca2-d757191ac676" },
  ])
})

test.concurrent("goose: assistant text, tool requests, errors and the closing usage", async () => {
  expect(await parseFixture(adapterFor("goose"), "goose")).toEqual([
    { type: "text", text: "I'll check the tests." },
    { type: "tool", name: "developer__shell", detail: "bun test" },
    { type: "error", message: "Provider rate limited" },
    { type: "usage", inputTokens: 1400, outputTokens: 100, costUsd: 0.02 },
  ])
})

test.concurrent("junk never throws: plain text passes through, blank lines and unknown JSON give nothing", () => {
  const junk = [
    "",
    "   ",
    "Warning: something on stdout",
    "{not json",
    "[1,2]",
    "42",
    "null",
    '{"type":"unknown.event"}',
    "{}",
    '{"type":"assistant","message":"oops"}',
    '{"type":"result","usage":7}',
    '{"type":"item.completed","item":null}',
    '{"type":"tool_call","subtype":"started","tool_call":{}}',
  ]
  for (const cli of AGENT_CLIS) {
    const adapter = adapterFor(cli, { command: ["agent", "{prompt}"] })
    const events = junk.flatMap((line) => adapter.parseLine(line))
    const texts = events.filter((e) => e.type === "text").map((e) => (e as { text: string }).text)
    if (cli === "command") {
      expect(texts).toEqual(junk.filter((line) => line.trim() !== "").map((line) => line))
      continue
    }
    expect(texts).toEqual(["Warning: something on stdout", "{not json", "[1,2]", "42", "null"])
    expect(events.filter((e) => e.type !== "text" && e.type !== "usage" && e.type !== "error")).toEqual([])
  }
})

const NEW = { prompt: "Do the task.", cwd: "/w" }
const RESUME = { prompt: "Next step.", cwd: "/w", sessionId: "S1", model: "m1", extraArgs: ["--x", "y"] }

test.concurrent("argv of every adapter: a new session, and a resumed one with a model and extra args", () => {
  const argv = (cli: string) => [adapterFor(cli).argv(NEW), adapterFor(cli).argv(RESUME)]
  expect(argv("claude")).toEqual([
    ["claude", "--print", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--allowedTools", "Bash"],
    [
      "claude",
      "--print",
      "--output-format",
      "stream-json",
      "--verbose",
      "--permission-mode",
      "acceptEdits",
      "--allowedTools",
      "Bash",
      "--model",
      "m1",
      "--resume",
      "S1",
      "--x",
      "y",
    ],
  ])
  expect(argv("codex")).toEqual([
    ["codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "-c", "allow_login_shell=false", "--", "-"],
    [
      "codex",
      "exec",
      "resume",
      "--json",
      "--dangerously-bypass-approvals-and-sandbox",
      "-c",
      "allow_login_shell=false",
      "--model",
      "m1",
      "--x",
      "y",
      "--",
      "S1",
      "-",
    ],
  ])
  expect(argv("gemini")).toEqual([
    ["gemini", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust"],
    ["gemini", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust", "--model", "m1", "--resume", "S1", "--x", "y"],
  ])
  // The CLIs that read a prompt from stdin get it there: one argument is capped at 128 KiB (OpenCode also rewrites argv messages).
  expect(argv("opencode")).toEqual([
    ["opencode", "run", "--format", "json", "--auto"],
    ["opencode", "run", "--format", "json", "--auto", "--model", "m1", "--session", "S1", "--x", "y"],
  ])
  expect(AGENT_CLIS.filter((cli) => cli !== "command" && adapterFor(cli).promptOnStdin)).toEqual(["claude", "codex", "gemini", "opencode", "copilot"])
  expect(argv("cursor")).toEqual([
    ["cursor-agent", "--print", "--output-format", "stream-json", "--force", "--", "Do the task."],
    ["cursor-agent", "--print", "--output-format", "stream-json", "--force", "--model", "m1", "--resume=S1", "--x", "y", "--", "Next step."],
  ])
  expect(argv("copilot")).toEqual([
    ["copilot", "--output-format", "json", "--allow-all-tools", "--no-ask-user", "--no-auto-update"],
    ["copilot", "--output-format", "json", "--allow-all-tools", "--no-ask-user", "--no-auto-update", "--model", "m1", "--session-id=S1", "--x", "y"],
  ])
  // A new Copilot session gets the id flow chose (the runner records it before the CLI starts).
  expect(
    adapterFor("copilot")
      .argv({ ...NEW, newSessionId: "N1" })
      .at(-1),
  ).toBe("--session-id=N1")
  expect(
    adapterFor("copilot")
      .argv({ ...RESUME, newSessionId: "N1" })
      .join(" "),
  ).not.toContain("N1")
  expect(AGENT_CLIS.filter((cli) => cli !== "command" && adapterFor(cli).choosesSessionId)).toEqual(["copilot"])
  expect(adapterFor("goose").argv({ ...NEW, model: "m1" })).toEqual(["goose", "run", "--text=Do the task.", "--output-format", "stream-json", "--model", "m1"])
  expect(() => adapterFor("goose").argv(RESUME)).toThrow("goose cannot resume")
  for (const cli of AGENT_CLIS.filter((c) => c !== "command")) {
    const adapter = adapterFor(cli)
    expect([adapter.cli, adapter.argv(NEW)[0], adapter.canResume]).toEqual([cli, adapter.binary, cli !== "goose"])
  }
})

test.concurrent("a prompt that starts with a dash stays one argument, never a flag", () => {
  for (const cli of AGENT_CLIS.filter((c) => c !== "command" && !adapterFor(c).promptOnStdin)) {
    const argv = adapterFor(cli).argv({ prompt: "--help me", cwd: "/w" })
    const at = argv.indexOf("--help me")
    if (at >= 0)
      expect(argv[at - 1]).toBe("--") // an operand after the end of the options
    else expect(argv.filter((a) => /^--(prompt|text)=--help me$/.test(a)).length).toBe(1) // the value of an = flag
  }
})

test.concurrent("a prompt goes where it can be long: on stdin, or in one argument no longer than Linux starts a program with", () => {
  const limits = Object.fromEntries(AGENT_CLIS.filter((c) => c !== "command").map((cli) => [cli, adapterFor(cli).promptLimit?.bytes]))
  expect(limits).toEqual({ claude: 10_485_760, codex: 1_048_576, gemini: 8_388_608, opencode: undefined, cursor: 131_071, copilot: undefined, goose: 131_064 })
  const prompt = "x".repeat(200_000)
  for (const cli of AGENT_CLIS.filter((c) => c !== "command" && adapterFor(c).promptOnStdin)) {
    expect(
      adapterFor(cli)
        .argv({ prompt, cwd: "/w", sessionId: "S1" })
        .some((a) => a.includes("xxx")),
    ).toBe(false)
  }
  const template = commandAdapter(["agent", "--task={prompt} (in {cwd})"])
  expect(template.promptLimit?.bytes).toBe(131_071 - "--task= (in )".length)
  // At its limit the argument starts a program; one byte more and Linux refuses it (E2BIG).
  for (const adapter of [adapterFor("cursor"), adapterFor("goose"), template]) {
    const limit = adapter.promptLimit!.bytes
    const [, ...args] = adapter.argv({ prompt: "é".repeat(limit / 2) + (limit % 2 ? "x" : ""), cwd: "" })
    expect(Bun.spawnSync(["true", ...args]).exitCode).toBe(0)
    expect(promptTooLong(adapter, "x".repeat(limit))).toBeUndefined()
    const [, ...over] = adapter.argv({ prompt: "x".repeat(limit + 1), cwd: "" })
    expect(() => Bun.spawnSync(["true", ...over])).toThrow(/E2BIG|argument list too long/i)
  }
  expect(promptTooLong(adapterFor("cursor"), `${"x".repeat(131_070)}é`)).toBe(
    "the prompt is 131,072 bytes (128 KiB), more than cursor takes (131,071 bytes (127 KiB): the prompt is one argument of its command line, and Linux takes at most 128 KiB in one)",
  )
  expect(promptTooLong(adapterFor("opencode"), "x".repeat(20_000_000))).toBeUndefined()
})

test.concurrent("command: placeholders filled; {session} and {model} dropped with their flag when absent", () => {
  const adapter = commandAdapter(["my-agent", "--cwd={cwd}", "--model", "{model}", "--prompt", "{prompt}", "--session", "{session}", "--tag=s-{session}"])
  expect(adapter.canResume).toBe(true)
  expect(adapter.binary).toBe("my-agent")
  expect(adapter.argv({ prompt: "Do it", cwd: "/w" })).toEqual(["my-agent", "--cwd=/w", "--prompt", "Do it"])
  expect(adapter.argv({ prompt: "Next", cwd: "/w", sessionId: "S1", model: "m1", extraArgs: ["-v"] })).toEqual([
    "my-agent",
    "--cwd=/w",
    "--model",
    "m1",
    "--prompt",
    "Next",
    "--session",
    "S1",
    "--tag=s-S1",
    "-v",
  ])
  // a positional {session} (no flag before it) goes alone
  expect(commandAdapter(["a", "{prompt}", "{session}"]).argv({ prompt: "p", cwd: "/w" })).toEqual(["a", "p"])
  expect(commandAdapter(["a", "{prompt}"]).canResume).toBe(false)
  expect(adapter.parseLine("flow-session: abc-123")).toEqual([{ type: "session", id: "abc-123" }])
  expect(adapter.parseLine("working on it\n")).toEqual([{ type: "text", text: "working on it" }])
})

function flowError(fn: () => unknown): { message: string; exit: number; hint?: string } {
  try {
    fn()
  } catch (e) {
    if (e instanceof FlowError) return { message: e.message, exit: e.exit, hint: e.hint }
    throw e
  }
  throw new Error("no error")
}

test.concurrent("bad templates and unknown clis are errors that say how to fix them", () => {
  expect(flowError(() => commandAdapter(["a", "{promt}"]))).toEqual({
    message: "the command agent's template uses an unknown placeholder {promt} in '{promt}'",
    exit: 3,
    hint: "use {prompt}, {session}, {model}, {cwd}",
  })
  expect(flowError(() => commandAdapter(["a", "--go"])).message).toBe("the command agent's template never passes the prompt")
  expect(flowError(() => commandAdapter([])).message).toBe("the command agent's template is empty")
  expect(flowError(() => adapterFor("command")).message).toBe("the command agent needs an argv template")
  expect(flowError(() => adapterFor("cladue"))).toEqual({
    message: "unknown agent cli 'cladue' (known: script, claude, codex, gemini, opencode, cursor, copilot, goose, command)",
    exit: 2,
    hint: "did you mean 'claude'?",
  })
  expect(flowError(() => adapterFor("aider")).hint).toBe("use one of script, claude, codex, gemini, opencode, cursor, copilot, goose, command")
})

// The fake CLIs the orchestrator's tests use speak the same stream the adapters read, and run their commands.
for (const cli of ["claude", "codex"] as const) {
  test.concurrent(`fake-${cli}: the adapter's argv in, the adapter's events out, commands run in the cwd, resume keeps the session`, async () => {
    const { mkdtempSync, existsSync, readFileSync, rmSync } = await import("node:fs")
    const { tmpdir } = await import("node:os")
    const { run } = await import("../lib/cli/proc")
    const dir = mkdtempSync(join(tmpdir(), `flow-fake-${cli}-`))
    try {
      const adapter = adapterFor(cli)
      const fake = join(import.meta.dir, "fixtures", "fake-agents", `fake-${cli}.ts`)
      const launch = async (sessionId: string | undefined, exit: number) => {
        const [, ...flags] = adapter.argv({ prompt: "Do the task.", cwd: dir, sessionId, model: "m1" })
        const env = {
          FAKE_AGENT_COMMANDS: JSON.stringify([["touch", "made-by-agent"], ["false"]]),
          FAKE_AGENT_EXIT: String(exit),
          FAKE_AGENT_RECORD: join(dir, "record.jsonl"),
        }
        const r = await run([process.execPath, fake, ...flags], { cwd: dir, env, stdin: adapter.promptOnStdin ? "Do the task." : undefined })
        return { code: r.code, stderr: r.stderr, events: r.stdout.split("\n").flatMap((line) => adapter.parseLine(line)) }
      }
      const first = await launch(undefined, 0)
      expect(existsSync(join(dir, "made-by-agent"))).toBe(true)
      const session = first.events.find((e) => e.type === "session") as AgentEvent & { type: "session" }
      const tool = cli === "claude" ? "Bash" : "shell"
      const said: AgentEvent[] = [{ type: "text", text: cli === "claude" ? "Working on it." : "Done." }]
      const expected: AgentEvent[] = [
        session,
        ...(cli === "claude" ? said : []),
        { type: "tool", name: tool, detail: "touch made-by-agent" },
        { type: "tool", name: tool, detail: "false" },
        ...(cli === "codex" ? said : []),
        cli === "claude"
          ? { type: "usage", inputTokens: 100, outputTokens: 50, costUsd: 0.0123, totals: ["cost"] }
          : { type: "usage", inputTokens: 1000, outputTokens: 60, cacheReadTokens: 800, totals: ["tokens"] },
      ]
      expect(first).toEqual({ code: 0, stderr: "", events: expected })
      const second = await launch(session.id, 3)
      expect(second.code).toBe(3)
      expect(second.events[0]).toEqual(session)
      expect(second.events.filter((e) => e.type === "error").length).toBe(1)
      const records = readFileSync(join(dir, "record.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
      expect(records.map((r) => [r.prompt, r.sessionId === session.id, r.resumed])).toEqual([
        ["Do the task.", true, false],
        ["Do the task.", true, true],
      ])
      const unknown = await run([process.execPath, fake, ...(cli === "codex" ? ["exec"] : []), "--no-such-flag"], { cwd: dir })
      expect(unknown.code).toBe(2)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
}
