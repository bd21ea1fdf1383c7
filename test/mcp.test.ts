// `flow mcp` driven by the MCP SDK's own client, over stdio and over streamable HTTP: every tool returns what
// its command prints with --json, fails as the command fails (its message, its hint naming tools instead of
// commands, nothing written), and 50 concurrent writes lose nothing. test/mcp-http.test.ts has the HTTP server's own rules.
import { describe, expect, test } from "bun:test"
import { McpError } from "@modelcontextprotocol/sdk/types.js"
import { TASK_STATUSES } from "../lib/model/statuses"
import { ID_PATTERN, STEP_ID_PATTERN } from "../lib/model/schema"
import { MessageLimit, requestId } from "../lib/mcp/stdio"
import { TOOLS } from "../lib/mcp/tools"
import { NOTE_MAX_BYTES } from "../lib/store/note-limit"
import { projectAt } from "../lib/cli/project"
import { openState } from "../lib/state/state"
import { call, callFails, type Connected, connect, type Transport } from "./mcp-helpers"
import { flow, flowArgv, snapshot, tasksYaml, writesSettled, tempRepo, type TempDir } from "./helpers"

const TASKS = tasksYaml([
  { id: "setup", title: "Set up", status: "done", phase: 1, instructions: "x" },
  { id: "api", title: "API", status: "todo", phase: 1, depends_on: ["setup"], instructions: "Build the API.", acceptance_criteria: ["it answers"] },
  { id: "ui", title: "UI", status: "todo", phase: 2, depends_on: ["api"], instructions: "Draw it." },
  {
    id: "parent",
    title: "Parent",
    status: "todo",
    phase: 2,
    instructions: "Both halves.",
    subtasks: [
      { id: "half-a", title: "Half A", status: "todo", instructions: "a" },
      { id: "half-b", title: "Half B", status: "todo", instructions: "b" },
    ],
  },
  {
    id: "stepped",
    title: "Stepped",
    status: "todo",
    steps: [
      { id: "stepped.1", instruction: "First." },
      { id: "stepped.2", instruction: "Second." },
    ],
  },
])

const project = () =>
  tempRepo({
    "tasks.yaml": TASKS,
    "plan.md": "# Implementation Plan\n\n## Phase 1: Foundation\n\n## Phase 2: Surface\n",
    "PRD.md": "# Shop\n\n## Overview\n\nA shop.\n",
  })

/** `flow <args> --json`, parsed; the command must succeed. */
async function cliJson(dir: TempDir, args: string[]): Promise<unknown> {
  const r = await flow(dir.path, [...args, "--json"])
  if (r.code !== 0 && !(args[0] === "validate" && r.code === 1)) throw new Error(`flow ${args.join(" ")} failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** What `flow <args>` says on stderr when it fails: the text a failed tool call carries, line for line. */
async function cliError(dir: TempDir, args: string[]): Promise<string> {
  const r = await flow(dir.path, args)
  if (r.code === 0) throw new Error(`flow ${args.join(" ")} succeeded`)
  return r.stderr.trimEnd()
}

/** A shell command in a hint: what a tool's error never tells an MCP client (`flow done x --force`, 'flow list'). */
const SHELL_WORDS = /\bflow [a-z]|--[a-z]/

/**
 * One failure through a tool and through its command: the message both print, and the hint as each says it,
 * the tool's without a shell command. `age`: the message holds an age that may tick between the two.
 */
async function failsBoth(
  server: Connected,
  dir: TempDir,
  [name, args, cli]: readonly [string, Record<string, unknown>, string[]],
  age = false,
): Promise<{ message: string; cli: string; tool: string }> {
  const said = await cliError(dir, cli)
  const error = await callFails(server.client, name, args)
  const [message = "", hint = ""] = said.split("\nhint: ")
  const [toolMessage = "", toolHint = ""] = error.split("\nhint: ")
  const timeless = (m: string) => (age ? m.replace(/\d+s ago/, "…") : m)
  expect({ name, message: timeless(toolMessage) }).toEqual({ name, message: timeless(message) })
  expect(error).not.toMatch(SHELL_WORDS)
  return { message, cli: hint, tool: toolHint }
}

const TRANSPORTS: Transport[] = ["stdio", "http"]

describe.each(TRANSPORTS)("over %s", (transport) => {
  test.concurrent("the read tools return exactly what their commands print with --json", async () => {
    await using dir = await project()
    await using server = await connect(transport, dir.path)
    const { client } = server
    // Listing the tools gives the client each outputSchema: the SDK's client then checks every result against it.
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name))
    const pairs: [string, Record<string, unknown>, string[]][] = [
      ["flow_list", {}, ["list"]],
      ["flow_list", { status: "todo" }, ["list", "todo"]],
      ["flow_show", { task_id: "api" }, ["show", "api"]],
      ["flow_show", { task_id: "half-a" }, ["show", "half-a"]],
      ["flow_next", {}, ["next"]],
      ["flow_next", { agent: "codex-2" }, ["next", "codex-2"]],
      ["flow_step_show", { task_id: "stepped" }, ["step", "show", "stepped"]],
      ["flow_step_list", { task_id: "stepped" }, ["step", "list", "stepped"]],
      ["flow_prompt", { task_id: "api" }, ["prompt", "api"]],
      ["flow_prompt", { task_id: "stepped", resume: true }, ["prompt", "stepped", "--resume"]],
      ["flow_questions", { all: true }, ["questions", "--all"]],
      ["flow_validate", {}, ["validate"]],
    ]
    for (const [name, args, cli] of pairs) {
      const result = await client.callTool({ name, arguments: args })
      expect({ name, result: result.structuredContent }).toEqual({ name, result: (await cliJson(dir, cli)) as Record<string, unknown> })
      // The text is the command's --json output itself, for clients that read only text.
      expect((result.content as { text: string }[])[0]!.text).toBe(JSON.stringify(result.structuredContent, null, 2))
    }
  })

  test.concurrent("the write tools make the commands' writes and return what they print with --json", async () => {
    // The same writes through the tools on one project and through `flow ... --json` on its twin: the same
    // reports and, but for the times, the same tasks.yaml.
    await using dir = await project()
    await using twin = await project()
    await using server = await connect(transport, dir.path)
    const { client } = server
    const writes: [string, Record<string, unknown>, string[]][] = [
      ["flow_start", { task_id: "ui" }, ["start", "ui"]],
      ["flow_note", { task_id: "api", text: "Chose REST." }, ["note", "api", "Chose REST."]],
      ["flow_done", { task_id: "api" }, ["done", "api"]],
      ["flow_done", { task_id: "api" }, ["done", "api"]],
      ["flow_block", { task_id: "ui", reason: "needs a design" }, ["block", "ui", "needs a design"]],
      ["flow_done", { task_id: "half-a" }, ["done", "half-a"]],
      ["flow_done", { task_id: "half-b" }, ["done", "half-b"]],
      ["flow_step_start", { step_id: "stepped.1" }, ["step", "start", "stepped.1"]],
      ["flow_step_done", { step_id: "stepped.1" }, ["step", "done", "stepped.1"]],
      ["flow_done", { task_id: "stepped", force: true }, ["done", "stepped", "--force"]],
    ]
    const timeless = (v: unknown) => JSON.parse(JSON.stringify(v).replace(/"\d{4}-\d\d-\d\dT[\d:]+Z"/g, '"T"'))
    const reports: Record<string, unknown>[] = []
    for (const [name, args, cli] of writes) {
      const report = await call(client, name, args)
      expect({ name, report: timeless(report) }).toEqual({ name, report: timeless(await cliJson(twin, cli)) })
      reports.push(report)
    }
    expect(dir.read("tasks.yaml").replace(/\d{4}-\d\d-\d\dT[\d:]+Z/g, "T")).toBe(twin.read("tasks.yaml").replace(/\d{4}-\d\d-\d\dT[\d:]+Z/g, "T"))
    // What the reports say, for the reader: a warning, a note, a cascade up to the parent.
    expect(reports[0]!.notes).toEqual(["ui depends on api (todo), not done yet; started anyway"])
    expect((reports[1]!.tasks as { ai_notes: string[] }[])[0]!.ai_notes).toEqual(["Chose REST."])
    expect(reports[3]!.changes).toEqual([])
    expect(reports[6]!.changes).toEqual([
      { id: "half-b", from: "todo", to: "done", reason: null },
      { id: "parent", from: "todo", to: "done", reason: "all subtasks done" },
    ])
    expect((reports[6]!.tasks as { id: string }[]).map((t) => t.id)).toEqual(["half-b", "parent"])
  })

  test.concurrent("questions: ask, list and answer; ask with wait returns the answer a person gives with flow answer", async () => {
    await using dir = await project()
    await using server = await connect(transport, dir.path, { FLOW_AGENT: "claude-1", USER: "alice" })
    const { client } = server
    const asked = await call(client, "flow_ask", { task_id: "api", text: "REST or GraphQL?" })
    expect(asked).toMatchObject({ id: "q-1", task_id: "api", agent: "claude-1", text: "REST or GraphQL?", answer: null })
    expect(await call(client, "flow_questions")).toEqual((await cliJson(dir, ["questions"])) as Record<string, unknown>)
    expect(await call(client, "flow_answer", { question_id: "1", text: "REST" })).toMatchObject({ id: "q-1", answer: "REST", answered_by: "alice" })
    expect(await call(client, "flow_questions")).toEqual({ questions: [] })

    const waiting = call(client, "flow_ask", { task_id: "ui", text: "Which colours?", wait: true })
    let answered: Awaited<ReturnType<typeof flow>> | undefined
    while (!answered) {
      const pending = (await cliJson(dir, ["questions"])) as { questions: { id: string }[] }
      if (pending.questions[0]) answered = await flow(dir.path, ["answer", pending.questions[0].id, "Blue", "and", "white"], { env: { USER: "bob" } })
    }
    expect(answered).toEqual({ code: 0, stdout: "Answered q-2 (task ui).\n", stderr: "" })
    expect(await waiting).toMatchObject({ id: "q-2", task_id: "ui", answer: "Blue and white", answered_by: "bob" })

    expect(await callFails(client, "flow_ask", { task_id: "ui", text: "Anyone?", wait: true, timeout: "1s" })).toBe(
      "error: no answer to q-3 within 1s\nhint: q-3 stays pending: `flow_questions` lists it, and `flow_questions` with all: true shows its answer once given",
    )
    expect(((await cliJson(dir, ["questions"])) as { questions: { id: string }[] }).questions.map((q) => q.id)).toEqual(["q-3"])
    const timedOut = await flow(dir.path, ["ask", "ui", "Anyone?", "--wait", "--timeout", "1s"])
    expect(timedOut.stderr).toEndWith(
      "\nerror: no answer to q-4 within 1s\nhint: q-4 stays pending: 'flow questions' lists it, and 'flow questions --all' shows its answer once given\n",
    )

    // An unknown question near a pending one, and one answered already: the tool's hint names the tool and its argument.
    expect(await failsBoth(server, dir, ["flow_answer", { question_id: "q-33", text: "x" }, ["answer", "q-33", "x"]])).toEqual({
      message: "error: no question 'q-33'",
      cli: "did you mean 'q-3'? 'flow questions' lists the pending ones",
      tool: "did you mean 'q-3'? `flow_questions` lists the pending ones",
    })
    expect(await failsBoth(server, dir, ["flow_answer", { question_id: "q-1", text: "GraphQL" }, ["answer", "q-1", "GraphQL"]], true)).toMatchObject({
      cli: "a waiting agent may have read that answer already; pass --force to replace it",
      tool: "a waiting agent may have read that answer already; pass force: true to replace it",
    })
    expect(await call(client, "flow_answer", { question_id: "q-1", text: "GraphQL", force: true })).toMatchObject({ id: "q-1", answer: "GraphQL" })
  })

  test.concurrent("a failed call is an isError result with the command's message and its hint naming tools, and writes nothing", async () => {
    await using dir = await project()
    await using server = await connect(transport, dir.path)
    const { client } = server
    await call(client, "flow_list") // the first read may add .flow/'s validation cache
    await writesSettled(dir.path)
    const before = snapshot(dir.path)
    // A hint that names no command is the command's, word for word.
    expect(await callFails(client, "flow_show", { task_id: "apx" })).toBe(await cliError(dir, ["show", "apx"]))
    // A hint that names commands: the tool's names the tools with their arguments, the command's says what it always said.
    const list: [string, string] = ["run 'flow list' to see the task ids", "call `flow_list` to see the task ids"]
    const hinted: [string, Record<string, unknown>, string[], string, string][] = [
      ["flow_done", { task_id: "nope" }, ["done", "nope"], ...list],
      [
        "flow_done",
        { task_id: "parent" },
        ["done", "parent"],
        "a parent completes when all its subtasks are done (flow done <subtask_id>); it then becomes done by itself ('flow done parent --force' marks it done with them open)",
        'a parent completes when all its subtasks are done (`flow_done` with task_id "<subtask_id>"); it then becomes done by itself (`flow_done` with task_id "parent" and force: true marks it done with them open)',
      ],
      [
        "flow_done",
        { task_id: "stepped" },
        ["done", "stepped"],
        "finish them in order with 'flow step done <step_id>' (next: stepped.1), then 'flow done stepped'; 'flow done stepped --force' marks it done with them open",
        'finish them in order with `flow_step_done` with step_id "<step_id>" (next: stepped.1), then `flow_done` with task_id "stepped"; `flow_done` with task_id "stepped" and force: true marks it done with them open',
      ],
      [
        "flow_step_done",
        { step_id: "stepped.2" },
        ["step", "done", "stepped.2"],
        "steps run in order: finish stepped.1 first (flow step done stepped.1)",
        'steps run in order: finish stepped.1 first (`flow_step_done` with step_id "stepped.1")',
      ],
      [
        "flow_step_start",
        { step_id: "api.1" },
        ["step", "start", "api.1"],
        "run 'flow step list <task_id>' to see a task's steps",
        'call `flow_step_list` with task_id "<task_id>" to see a task\'s steps',
      ],
      [
        "flow_step_show",
        { task_id: "api" },
        ["step", "show", "api"],
        "its work is described by its instructions: run 'flow show api'",
        'its work is described by its instructions: call `flow_show` with task_id "api"',
      ],
      [
        "flow_prompt",
        { task_id: "api", resume: true },
        ["prompt", "api", "--resume"],
        "run 'flow prompt api' for the task's prompt",
        'call `flow_prompt` with task_id "api" for the task\'s prompt',
      ],
      ["flow_note", { task_id: "zzz", text: "lost" }, ["note", "zzz", "lost"], ...list],
      [
        "flow_answer",
        { question_id: "q-7", text: "no" },
        ["answer", "q-7", "no"],
        "agents ask with 'flow ask <task_id> <text>'",
        'agents ask with `flow_ask` with task_id "<task_id>" and text "<text>"',
      ],
      ["flow_ask", { task_id: "nope", text: "why?" }, ["ask", "nope", "why?"], ...list],
    ]
    for (const [name, args, cli, shell, tools] of hinted) {
      const { message: _, ...hints } = await failsBoth(server, dir, [name, args, cli])
      expect({ name, ...hints }).toEqual({ name, cli: shell, tool: tools })
    }
    // Arguments are checked against the schema of tasks.yaml before anything runs.
    expect(await callFails(client, "flow_done", { task_id: "stepped.1" })).toBe(
      `error: invalid arguments to flow_done: task_id must be a task id (subtasks' too): lowercase letters and digits in words joined by '-', such as api-layer (was "stepped.1")\nhint: flow_done takes task_id, force; its inputSchema says what each must be`,
    )
    // An argument the tool does not take is refused, not dropped: a misspelt force must not mark anything done.
    expect(await callFails(client, "flow_done", { task_id: "api", forse: true })).toBe(
      "error: invalid arguments to flow_done: forse must be removed\nhint: flow_done takes task_id, force; its inputSchema says what each must be",
    )
    expect(await callFails(client, "flow_validate", { strict: true })).toBe(
      "error: invalid arguments to flow_validate: strict must be removed\nhint: flow_validate takes no arguments",
    )
    expect(await callFails(client, "flow_list", { status: "doing" })).toStartWith("error: invalid arguments to flow_list: status must be ")
    expect(await callFails(client, "flow_note", { task_id: "api", text: "   " })).toStartWith(
      "error: invalid arguments to flow_note: text must be a text that is not empty",
    )
    expect(await callFails(client, "flow_show", {})).toStartWith("error: invalid arguments to flow_show: task_id must be")
    expect(await callFails(client, "flow_ask", { task_id: "api", text: "x", wait: true, timeout: "soon" })).toBe(
      "error: timeout: 'soon' is not a duration\nhint: write a positive whole number with a unit: 90s, 30m, 2h, 1d, or combined largest first, like 1h30m",
    )
    // An unknown tool is the protocol's error, not a tool's; its words come once, after the client's one prefix.
    const unknown = await client.callTool({ name: "flow_merge", arguments: {} }).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(McpError)
    expect((unknown as McpError).message).toBe(`MCP error -32602: no tool 'flow_merge'; flow's tools: ${TOOLS.map((t) => t.name).join(", ")}`)
    const resource = await client.readResource({ uri: "flow://nothing" }).catch((e: unknown) => e)
    expect((resource as McpError).message).toStartWith("MCP error -32002: no resource 'flow://nothing'")
    await writesSettled(dir.path)
    expect(snapshot(dir.path)).toEqual(before)

    // An invalid tasks.yaml: every tool says what `flow` says (exit 3's message), and nothing is written.
    dir.write("tasks.yaml", TASKS.replace("status: todo", "status: doing"))
    await writesSettled(dir.path)
    const broken = snapshot(dir.path)
    const invalid = await failsBoth(server, dir, ["flow_list", {}, ["list"]])
    expect(invalid).toMatchObject({
      cli: "run 'flow validate' to see every problem, fix them, and try again",
      tool: "call `flow_validate` to see every problem, fix them, and try again",
    })
    expect(invalid.message).toContain("tasks.yaml is invalid")
    const invalidCall = `${invalid.message}\nhint: ${invalid.tool}`
    expect(await callFails(client, "flow_done", { task_id: "api" })).toBe(invalidCall)
    expect(await callFails(client, "flow_note", { task_id: "api", text: "x" })).toBe(invalidCall)
    const report = await call(client, "flow_validate")
    expect(report).toEqual((await cliJson(dir, ["validate"])) as Record<string, unknown>)
    expect(report.valid).toBe(false)
    await writesSettled(dir.path)
    expect(snapshot(dir.path)).toEqual(broken)
  })

  test.concurrent("a note or a block reason is at most 512 KiB: longer, the tool refuses it as the command does and nothing is written", async () => {
    await using dir = await project()
    await using server = await connect(transport, dir.path)
    const { client } = server
    await call(client, "flow_list")
    // At the bound exactly: written, by a tool call as by a person's words (each argument far under Linux's 128 KiB).
    const atBound = "n".repeat(NOTE_MAX_BYTES)
    expect(((await call(client, "flow_note", { task_id: "ui", text: atBound })).tasks as { ai_notes: string[] }[])[0].ai_notes).toEqual([atBound])
    const words = (text: string) => {
      const out: string[] = []
      let rest = text
      for (let cut = rest.lastIndexOf(" ", 100_000); rest.length > 100_000; cut = rest.lastIndexOf(" ", 100_000)) {
        out.push(rest.slice(0, cut))
        rest = rest.slice(cut + 1)
      }
      return [...out, rest]
    }
    // 5 words of 100,000 bytes, their 5 spaces, and 24,283 bytes of two-byte letters and one more: 524,288 bytes.
    const person = [..."abcde"].map((c) => c.repeat(100_000)).concat(`${"é".repeat(12_141)}x`)
    expect((await flow(dir.path, ["note", "ui", ...person])).code).toBe(0)
    await writesSettled(dir.path)
    const before = snapshot(dir.path)
    // One byte more: refused, with what a person does instead.
    const over = `${"word ".repeat(104_857)}wxyz`
    expect(Buffer.byteLength(over)).toBe(NOTE_MAX_BYTES + 1)
    const refused = {
      message: `error: the note is ${(NOTE_MAX_BYTES + 1).toLocaleString("en")} bytes, more than a note may hold (524,288 bytes, 512 KiB): notes go into the prompts of agents`,
      cli: "put the long text in a file of the repository and name that file in the note",
      tool: "put the long text in a file of the repository and name that file in the note",
    }
    expect(await failsBoth(server, dir, ["flow_note", { task_id: "ui", text: over }, ["note", "ui", ...words(over)]])).toEqual(refused)
    const reason = { ...refused, message: refused.message.replace("the note", "the reason") }
    expect(await failsBoth(server, dir, ["flow_block", { task_id: "ui", reason: over }, ["block", "ui", ...words(over)]])).toEqual(reason)
    expect((await flow(dir.path, ["note", "ui", ...words(over)])).code).toBe(2)
    await writesSettled(dir.path)
    expect(snapshot(dir.path)).toEqual(before)
  })

  test.concurrent("50 concurrent done and note calls, with flow notes from the shell at the same time, lose nothing", async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `t-${i + 1}`)
    await using dir = await tempRepo({ "tasks.yaml": tasksYaml(ids.map((id) => ({ id, title: id, status: "todo", instructions: "x" }))) })
    await using server = await connect(transport, dir.path)
    const { client } = server
    const calls = ids.flatMap((id) => [call(client, "flow_note", { task_id: id, text: `note of ${id}` }), call(client, "flow_done", { task_id: id })])
    const shell = ids.slice(0, 10).map((id) => flow(dir.path, ["note", id, `shell note of ${id}`]))
    const results = await Promise.all(calls)
    expect((await Promise.all(shell)).map((r) => r.code)).toEqual(ids.slice(0, 10).map(() => 0))
    expect(results.filter((r) => (r.changes as unknown[]).length === 1)).toHaveLength(25)
    const tasks = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { id: string; status: string; ai_notes: string[] }[] }).tasks
    expect(tasks.map((t) => [t.id, t.status, [...t.ai_notes].sort()])).toEqual(
      ids.map((id, i) => [id, "done", (i < 10 ? [`note of ${id}`, `shell note of ${id}`] : [`note of ${id}`]).sort()]),
    )
    expect((await flow(dir.path, ["validate"])).code).toBe(0)
  })

  test.concurrent("resources: tasks.yaml, plan.md, PRD.md and each task's prompt", async () => {
    await using dir = await project()
    await using server = await connect(transport, dir.path)
    const { client } = server
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(["flow://project/tasks.yaml", "flow://project/plan.md", "flow://project/PRD.md"])
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual(["flow://tasks/{task_id}/prompt"])
    const read = async (uri: string) => ((await client.readResource({ uri })).contents[0] as { text: string }).text
    expect(await read("flow://project/tasks.yaml")).toBe(dir.read("tasks.yaml"))
    expect(await read("flow://project/PRD.md")).toBe(dir.read("PRD.md"))
    expect(await read("flow://tasks/api/prompt")).toBe((await flow(dir.path, ["prompt", "api"])).stdout)
    const missing = await client.readResource({ uri: "flow://tasks/apx/prompt" }).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(McpError)
    expect((missing as McpError).message).toContain("no task 'apx' in tasks.yaml")
    const far = await client.readResource({ uri: "flow://tasks/zzz/prompt" }).catch((e: unknown) => e)
    expect((far as McpError).data).toEqual({ uri: "flow://tasks/zzz/prompt", hint: "call `flow_list` to see the task ids" })
  })
})

test.concurrent("a budget question answered with flow_answer is refused and taken as flow answer does; flow_show has the task's budget", async () => {
  await using dir = await project()
  dir.write("flow.yaml", "budget:\n  task: { usd: 5 }\n")
  {
    using db = await openState(projectAt(dir.path))
    await db.events.append({ kind: "agent.usage", task_id: "api", agent: "claude-1", data: { type: "usage", costUsd: 5.2 } })
    await db.questions.ask({ task_id: "api", text: "task 'api' spent $5.20 of $5.00: ...", kind: "budget:usd" })
    await db.questions.ask({ task_id: "ui", text: "task 'ui' spent 80 minutes of 60: ...", kind: "budget:minutes" })
  }
  await using server = await connect("stdio", dir.path, { USER: "alice" })
  const { client } = server
  await call(client, "flow_list") // the first read may add .flow/'s validation cache
  await writesSettled(dir.path)
  const before = snapshot(dir.path)
  // Neither an amount of its unit nor 'block': the command's words (exit 2), and nothing written, through either.
  for (const [id, text, example, words] of [
    ["q-1", "lots", "5", "asks for more budget: answer with "],
    ["q-1", "10 minutes", "5", 'asks for more dollars, and "10 minutes" is minutes: answer with '],
    ["q-2", "$5", "30", 'asks for more minutes, and "$5" is dollars: answer with '],
  ] as const) {
    const said = await failsBoth(server, dir, ["flow_answer", { question_id: id, text }, ["answer", id, text]])
    expect(said.message).toStartWith(`error: ${id} ${words}`)
    expect(said).toMatchObject({
      cli: `for example: flow answer ${id} ${example}`,
      tool: `for example: \`flow_answer\` with question_id "${id}" and text "${example}"`,
    })
  }
  // Too little to take the task back under its cap: refused, saying what clears it.
  const short = await failsBoth(server, dir, ["flow_answer", { question_id: "q-1", text: "$0.10" }, ["answer", "q-1", "$0.10"]])
  expect(short).toMatchObject({
    message: "error: q-1: $0.10 more leaves task 'api' over its budget (it spent $5.20 of $5.10); more than $0.20 clears it",
    cli: "for example: flow answer q-1 $1, or flow answer q-1 block to block the task",
    tool: 'for example: `flow_answer` with question_id "q-1" and text "$1", or `flow_answer` with question_id "q-1" and text "block" to block the task',
  })
  await writesSettled(dir.path)
  expect(snapshot(dir.path)).toEqual(before)
  expect(await call(client, "flow_answer", { question_id: "1", text: "$10" })).toMatchObject({ id: "q-1", kind: "budget:usd", answer: "$10" })
  expect(await call(client, "flow_answer", { question_id: "q-2", text: "block too slow" })).toMatchObject({ id: "q-2", answer: "block too slow" })
  expect(await call(client, "flow_questions", { all: true })).toEqual((await cliJson(dir, ["questions", "--all"])) as Record<string, unknown>)
  // The answer is the grant: $5 from flow.yaml and $10 answered.
  const shown = await call(client, "flow_show", { task_id: "api" })
  expect(shown.budget).toEqual({ usd: { spent: 5.2, cap: 15 } })
  expect(shown).toEqual((await cliJson(dir, ["show", "api"])) as Record<string, unknown>)
})

test.concurrent("the input schemas come from the schema of tasks.yaml: the id patterns and the status enum", async () => {
  await using dir = await project()
  await using server = await connect("stdio", dir.path)
  const tools = new Map((await server.client.listTools()).tools.map((t) => [t.name, t]))
  const property = (tool: string, name: string) => (tools.get(tool)!.inputSchema.properties as Record<string, Record<string, unknown>>)[name]!
  expect(property("flow_done", "task_id").pattern).toBe(ID_PATTERN.source)
  expect(property("flow_step_done", "step_id").pattern).toBe(STEP_ID_PATTERN.source)
  expect([...(property("flow_list", "status").enum as string[])].sort()).toEqual([...TASK_STATUSES].sort())
  expect(tools.get("flow_done")!.inputSchema.required).toEqual(["task_id"])
  // Every tool says it takes nothing but its own arguments.
  expect([...tools.values()].filter((t) => t.inputSchema.additionalProperties !== false).map((t) => t.name)).toEqual([])
  expect(tools.get("flow_list")!.annotations).toMatchObject({ readOnlyHint: true })
  expect(tools.get("flow_done")!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false })
})

test.concurrent("a waiting flow_ask cancelled by its client leaves the question pending", async () => {
  await using dir = await project()
  await using server = await connect("stdio", dir.path)
  const cancel = new AbortController()
  const waiting = server.client.callTool({ name: "flow_ask", arguments: { task_id: "api", text: "Still there?", wait: true } }, undefined, {
    signal: cancel.signal,
  })
  const settled = waiting.catch((e: unknown) => e)
  let pending: { questions: { id: string; answer: string | null }[] } = { questions: [] }
  while (pending.questions.length === 0) pending = (await cliJson(dir, ["questions"])) as typeof pending
  cancel.abort()
  expect(await settled).toBeInstanceOf(Error)
  expect(((await cliJson(dir, ["questions"])) as typeof pending).questions.map((q) => [q.id, q.answer])).toEqual([["q-1", null]])
})

test.concurrent("on stdio, nothing but protocol goes to stdout, and the server exits 0 when its client closes stdin", async () => {
  await using dir = await project()
  const proc = Bun.spawn([...flowArgv(), "mcp"], { cwd: dir.path, stdin: "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } })
  const init = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  }
  proc.stdin.write(`${JSON.stringify(init)}\n`)
  proc.stdin.end()
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  expect(code).toBe(0)
  expect(stderr).toBe(`flow mcp: serving ${dir.path} on stdin and stdout (an MCP client starts this command; see docs/MCP.md)\n`)
  const lines = stdout.trimEnd().split("\n")
  expect(lines).toHaveLength(1)
  expect(JSON.parse(lines[0]!)).toMatchObject({ jsonrpc: "2.0", id: 1, result: { protocolVersion: "2025-06-18", serverInfo: { name: "flow" } } })
})

test.concurrent("on stdio, a message over 10 MiB is answered with an error, as HTTP answers 413, and the server goes on", async () => {
  await using dir = await project()
  await using server = await connect("stdio", dir.path)
  const before = dir.read("tasks.yaml")
  // The SDK's client writes the id last, after the params: the error still reaches the call that sent it.
  const big = await server.client.callTool({ name: "flow_note", arguments: { task_id: "api", text: "x".repeat(11 * 1024 * 1024) } }).catch((e: unknown) => e)
  expect(big).toBeInstanceOf(McpError)
  expect({ code: (big as McpError).code, message: (big as McpError).message }).toEqual({
    code: -32000,
    message: "MCP error -32000: Payload Too Large: a message on stdio must not exceed 10485760 bytes; it was dropped, and the server goes on",
  })
  expect(dir.read("tasks.yaml")).toBe(before)
  expect(server.stderr()).toContain("flow mcp: Payload Too Large: a message on stdio must not exceed 10485760 bytes")
  // Served on: the next calls are answered, one of a message just under the bound (its padding in _meta, so the
  // answer stays small: the client has a bound of its own).
  const padded = await server.client.callTool({ name: "flow_show", arguments: { task_id: "api" }, _meta: { padding: "y".repeat(10 * 1024 * 1024 - 300) } })
  expect(padded.structuredContent).toMatchObject({ task: { id: "api" } })
  expect(await call(server.client, "flow_note", { task_id: "api", text: "after" })).toMatchObject({ changes: [] })
})

test("the id of a dropped message is read from its first or last members only", () => {
  const params = `"params":{"name":"flow_note","arguments":{"id":"not-this","text":"${"x".repeat(100)}"}}`
  const line = (json: string) => [json.slice(0, 60), json.slice(-60)] as const
  expect(requestId(...line(`{"method":"tools/call",${params},"jsonrpc":"2.0","id":7}`))).toBe(7)
  expect(requestId(...line(`{"jsonrpc":"2.0","id":"req-1",${params}}\r`))).toBe("req-1")
  expect(requestId(...line(`{"method":"notifications/x",${params},"jsonrpc":"2.0"}`))).toBeNull()
  expect(requestId(...line(`{"method":"tools/call",${params}}`))).toBeNull()
})

test("a long line is passed on whole when it fits and dropped as it comes when it does not", async () => {
  const dropped: (number | string | null)[] = []
  const limit = new MessageLimit(20, (id) => dropped.push(id))
  const out: string[] = []
  limit.on("data", (chunk: Buffer) => out.push(chunk.toString()))
  const ended = new Promise((resolve) => limit.on("end", resolve))
  for (const piece of ['{"id":1}\n{"id":2,"a":"', "0123456789", '0123456789"}\n{"id":3}', "\n"]) limit.write(Buffer.from(piece))
  limit.end()
  await ended
  expect({ out, dropped }).toEqual({ out: ['{"id":1}\n', '{"id":3}\n'], dropped: [2] })
})

test.concurrent("outside a project flow mcp fails at once, as every command does (exit 3)", async () => {
  await using dir = await tempRepo()
  const r = await flow(dir.path, ["mcp"])
  expect(r.code).toBe(3)
  expect(r.stderr).toStartWith("error: no flow project here")
})
