// `flow ask`, `flow questions` and `flow answer` through the real CLI: exact output, a waiting agent getting
// its answer from another process, timeouts and Ctrl-C leaving the question pending, errors that write
// nothing, and 20 agents asking at once.
import { expect, test } from "bun:test"
import { existsSync, readdirSync } from "node:fs"
import { type } from "arktype"
import { parseDuration } from "../lib/cli/duration"
import { ErrorReport, QuestionsReport } from "../lib/model/json-shapes"
import { projectAt } from "../lib/cli/project"
import { budgetKind, budgetQuestion } from "../lib/budget/budget"
import { openState } from "../lib/state/state"
import { flow, flowArgv, tasksYaml, tempRepo, type TempDir } from "./helpers"

const StrictReport = QuestionsReport.onDeepUndeclaredKey("reject")
const StrictError = ErrorReport.onDeepUndeclaredKey("reject")

const TASKS = tasksYaml([
  { id: "setup", title: "Set up", status: "done", instructions: "x" },
  { id: "api-layer", title: "API layer", status: "in_progress", instructions: "y", depends_on: ["setup"] },
])

const project = () => tempRepo({ "tasks.yaml": TASKS })
const ALICE = { USER: "alice" }

/** Ages change with the clock: `asked 3s ago` → `asked Ns ago`. */
const normal = (text: string) => text.replace(/\b\d+s ago\b/g, "Ns ago")

/** A `flow ask --wait ...` left running: resolves `asked` with the id once its stderr announces it. */
function askInBackground(dir: TempDir, args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([...flowArgv(), "ask", "--wait", ...args], {
    cwd: dir.path,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  })
  const asked = Promise.withResolvers<string>()
  let stderr = ""
  const stderrDone = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stderr) {
      stderr += decoder.decode(chunk)
      const id = /^Asked (q-\d+);/m.exec(stderr)?.[1]
      if (id) asked.resolve(id)
    }
    asked.reject(new Error(`the ask ended without announcing its question: ${stderr}`))
  })()
  const done = (async () => {
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited, stderrDone])
    return { code, stdout, stderr, at: performance.now() }
  })()
  return { proc, asked: asked.promise, done }
}

test.concurrent("ask prints the id; questions lists it; answer records it and the list is empty again", async () => {
  await using dir = await project()
  expect(await flow(dir.path, ["ask", "api-layer", "Which", "database?"])).toEqual({ code: 0, stdout: "q-1\n", stderr: "" })
  expect(await flow(dir.path, ["ask", "setup", "Keep the old\nconfig?"], { env: { FLOW_AGENT: "claude" } })).toEqual({ code: 0, stdout: "q-2\n", stderr: "" })
  const listed = await flow(dir.path, ["questions"])
  expect({ ...listed, stdout: normal(listed.stdout) }).toEqual({
    code: 0,
    stderr: "",
    stdout: `q-1  task: api-layer  asked Ns ago
  Which database?

q-2  task: setup  agent: claude  asked Ns ago
  Keep the old
  config?
`,
  })
  expect(await flow(dir.path, ["answer", "q-1", "Postgres,", "version 17"], { env: ALICE })).toEqual({
    code: 0,
    stdout: "Answered q-1 (task api-layer).\n",
    stderr: "",
  })
  // A bare number names the question too.
  expect(await flow(dir.path, ["answer", "2", "yes"], { env: { USER: "" } })).toEqual({ code: 0, stdout: "Answered q-2 (task setup).\n", stderr: "" })
  expect(await flow(dir.path, ["questions"])).toEqual({ code: 0, stdout: "No pending questions.\n", stderr: "" })
  const all = await flow(dir.path, ["questions", "--all"])
  expect({ ...all, stdout: normal(all.stdout) }).toEqual({
    code: 0,
    stderr: "",
    stdout: `q-1  task: api-layer  asked Ns ago  answered Ns ago by alice
  Which database?
  answer: Postgres, version 17

q-2  task: setup  agent: claude  asked Ns ago  answered Ns ago by person
  Keep the old
  config?
  answer: yes
`,
  })
  const json = await flow(dir.path, ["questions", "--all", "--json"])
  const report = JSON.parse(json.stdout)
  expect(StrictReport(report)).not.toBeInstanceOf(type.errors)
  expect(report.questions.map(({ asked_at, answered_at, ...rest }: Record<string, unknown>) => rest)).toEqual([
    { id: "q-1", task_id: "api-layer", agent: null, text: "Which database?", kind: null, answer: "Postgres, version 17", answered_by: "alice" },
    { id: "q-2", task_id: "setup", agent: "claude", text: "Keep the old\nconfig?", kind: null, answer: "yes", answered_by: "person" },
  ])
  for (const q of report.questions) expect(Date.parse(q.answered_at)).toBeGreaterThanOrEqual(Date.parse(q.asked_at))
  expect(await flow(dir.path, ["questions", "--json"])).toEqual({ code: 0, stdout: `{\n  "questions": []\n}\n`, stderr: "" })
})

test.concurrent("questions on a project with no state creates nothing", async () => {
  await using dir = await project()
  expect(await flow(dir.path, ["questions"])).toEqual({ code: 0, stdout: "No pending questions.\n", stderr: "" })
  expect(await flow(dir.path, ["questions", "--all"])).toEqual({ code: 0, stdout: "No questions.\n", stderr: "" })
  expect(await flow(dir.path, ["questions", "--json"])).toEqual({ code: 0, stdout: `{\n  "questions": []\n}\n`, stderr: "" })
  expect(readdirSync(dir.path).sort()).toEqual([".git", "tasks.yaml"])
})

test.concurrent("a waiting ask prints the answer given by another process, and exits 0 within a second", async () => {
  await using dir = await project()
  const waiting = askInBackground(dir, ["api-layer", "Which port?"], { FLOW_AGENT: "codex" })
  const id = await waiting.asked
  expect(id).toBe("q-1")
  const listed = await flow(dir.path, ["questions"])
  expect(normal(listed.stdout)).toBe("q-1  task: api-layer  agent: codex  asked Ns ago\n  Which port?\n")
  expect(await flow(dir.path, ["answer", id, "8080"], { env: ALICE })).toEqual({ code: 0, stdout: "Answered q-1 (task api-layer).\n", stderr: "" })
  const answeredAt = performance.now()
  const result = await waiting.done
  expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
    code: 0,
    stdout: "8080\n",
    stderr: "Asked q-1; waiting for the answer ('flow answer q-1 <text>')\n",
  })
  expect(result.at - answeredAt).toBeLessThan(1000)
})

test.concurrent("--timeout gives up with exit 1 and leaves the question pending", async () => {
  await using dir = await project()
  const started = performance.now()
  const result = await flow(dir.path, ["ask", "api-layer", "Anyone?", "--wait", "--timeout", "1s"])
  expect(performance.now() - started).toBeGreaterThanOrEqual(1000)
  expect(result).toEqual({
    code: 1,
    stdout: "",
    stderr: `Asked q-1; waiting for the answer ('flow answer q-1 <text>')
error: no answer to q-1 within 1s
hint: q-1 stays pending: 'flow questions' lists it, and 'flow questions --all' shows its answer once given
`,
  })
  expect(normal((await flow(dir.path, ["questions"])).stdout)).toBe("q-1  task: api-layer  asked Ns ago\n  Anyone?\n")
})

test.concurrent("Ctrl-C while waiting exits 130 and leaves the question pending", async () => {
  await using dir = await project()
  const waiting = askInBackground(dir, ["api-layer", "Still there?"])
  expect(await waiting.asked).toBe("q-1")
  waiting.proc.kill("SIGINT")
  const result = await waiting.done
  expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
    code: 130,
    stdout: "",
    stderr: `Asked q-1; waiting for the answer ('flow answer q-1 <text>')
error: cancelled while waiting for the answer to q-1
hint: q-1 stays pending: 'flow questions' lists it, and 'flow questions --all' shows its answer once given
`,
  })
  expect(normal((await flow(dir.path, ["questions"])).stdout)).toBe("q-1  task: api-layer  asked Ns ago\n  Still there?\n")
})

test.concurrent("ask about an unknown task fails naming the closest id, and creates no database", async () => {
  await using dir = await project()
  expect(await flow(dir.path, ["ask", "api-layr", "Hm?"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: no task 'api-layr' in tasks.yaml\nhint: did you mean 'api-layer'?\n",
  })
  expect(existsSync(dir.file(".flow/state.db"))).toBe(false)
})

test.concurrent("ask usage errors: no text, --timeout without --wait, a bad duration; nothing is created", async () => {
  await using dir = await project()
  expect(await flow(dir.path, ["ask", "api-layer"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: missing <text>: the question is empty\nhint: usage: flow ask <task_id> <text> [--wait] [--timeout <duration>]\n`,
  })
  expect(await flow(dir.path, ["ask", "api-layer", "x", "--timeout", "5s"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: --timeout works only with --wait\nhint: usage: flow ask <task_id> <text> [--wait] [--timeout <duration>]\n`,
  })
  expect(await flow(dir.path, ["ask", "api-layer", "x", "--wait", "--timeout", "5 minutes"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: --timeout: '5 minutes' is not a duration\nhint: write a positive whole number with a unit: 90s, 30m, 2h, 1d, or combined largest first, like 1h30m\n`,
  })
  expect(existsSync(dir.file(".flow/state.db"))).toBe(false)
})

test.concurrent("answer to an unknown question names the closest pending id; with no database it creates none", async () => {
  await using dir = await project()
  expect(await flow(dir.path, ["answer", "q-1", "x"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: no question 'q-1': no question has been asked in this project\nhint: agents ask with 'flow ask <task_id> <text>'\n",
  })
  expect(existsSync(dir.file(".flow"))).toBe(false)
  for (let i = 0; i < 3; i++) await flow(dir.path, ["ask", "setup", `question ${i}`])
  await flow(dir.path, ["answer", "q-1", "done"])
  expect(await flow(dir.path, ["answer", "q-7", "x"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: no question 'q-7'\nhint: did you mean 'q-2'? 'flow questions' lists the pending ones\n",
  })
  expect(await flow(dir.path, ["answer", "question-2", "x"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: no question 'question-2'\nhint: pending: q-2, q-3\n",
  })
  const json = await flow(dir.path, ["answer", "q-99", "x", "--json"])
  expect(json.code).toBe(2) // answer has no --json flag: a usage error, reported as JSON on stderr
  expect(StrictError(JSON.parse(json.stderr))).not.toBeInstanceOf(type.errors)
})

test.concurrent("a second answer is refused with the first shown, unless --force", async () => {
  await using dir = await project()
  await flow(dir.path, ["ask", "api-layer", "REST or GraphQL?"])
  expect((await flow(dir.path, ["answer", "q-1", "REST"], { env: ALICE })).code).toBe(0)
  const again = await flow(dir.path, ["answer", "q-1", "GraphQL"], { env: { USER: "bob" } })
  expect({ ...again, stderr: normal(again.stderr) }).toEqual({
    code: 1,
    stdout: "",
    stderr: `error: q-1 was already answered by alice Ns ago: "REST"\nhint: a waiting agent may have read that answer already; pass --force to replace it\n`,
  })
  expect(await flow(dir.path, ["answer", "q-1", "GraphQL", "--force"], { env: { USER: "bob" } })).toEqual({
    code: 0,
    stdout: "Answered q-1 (task api-layer).\n",
    stderr: "",
  })
  const report = JSON.parse((await flow(dir.path, ["questions", "--all", "--json"])).stdout)
  expect(report.questions.map((q: Record<string, unknown>) => [q.answer, q.answered_by])).toEqual([["GraphQL", "bob"]])
})

test.concurrent("20 agents asking at once get 20 distinct ids, all listed", async () => {
  await using dir = await project()
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => flow(dir.path, ["ask", "api-layer", `question ${i}`], { env: { FLOW_AGENT: `agent-${i}` } })),
  )
  for (const r of results) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const ids = results.map((r) => r.stdout.trim())
  expect(new Set(ids).size).toBe(20)
  expect([...ids].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `q-${i + 1}`).sort())
  const report = JSON.parse((await flow(dir.path, ["questions", "--json"])).stdout)
  expect(report.questions.map((q: { id: string }) => q.id)).toEqual(Array.from({ length: 20 }, (_, i) => `q-${i + 1}`))
  // Each question kept its own agent and text, whichever id it got.
  const byId = new Map(results.map((r, i) => [r.stdout.trim(), i]))
  for (const q of report.questions) expect([q.agent, q.text]).toEqual([`agent-${byId.get(q.id)}`, `question ${byId.get(q.id)}`])
})

test("parseDuration reads whole numbers with units, largest first, and rejects anything else", () => {
  expect(["90s", "30m", "2h", "1d", "1h30m", "1d2h3m4s"].map((t) => parseDuration(t, "--timeout"))).toEqual([
    90_000, 1_800_000, 7_200_000, 86_400_000, 5_400_000, 93_784_000,
  ])
  for (const bad of ["", "5", "5x", "30m1h", "1h 30m", "1h1h", "-1s", "1.5h"]) expect(() => parseDuration(bad, "--timeout")).toThrow("is not a duration")
})

test.concurrent("a budget question takes an amount of its unit that clears the task's cap: another unit, or too little, is refused saying what clears it", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "in_progress", instructions: "x" }]),
    "flow.yaml": "budget:\n  task: { tokens: 2000000 }\n",
  })
  // The state a run leaves at the cap: the turns' usage recorded, and the question it asks.
  let id: string
  {
    using db = await openState(projectAt(dir.path))
    await db.events.append({ kind: "agent.usage", task_id: "api", agent: "claude-1", data: { type: "usage", inputTokens: 2_000_000, outputTokens: 100_000 } })
    const reached = { unit: "tokens" as const, spent: 2_100_000, cap: 2_000_000 }
    id = (await db.questions.ask({ task_id: "api", agent: null, text: budgetQuestion("api", reached), kind: budgetKind("tokens") })).id
  }
  expect(await flow(dir.path, ["answer", id, "5"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: ${id}: 5 tokens more leaves task 'api' over its budget (it used 2,100,000 of 2,000,005 tokens); more than 100,000 tokens clears it\nhint: for example: flow answer ${id} 200k, or flow answer ${id} block to block the task\n`,
  })
  expect(await flow(dir.path, ["answer", id, "$5"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: ${id} asks for more tokens, and "$5" is dollars: answer with the tokens to add (500000, 500k or 2M) or 'block'\nhint: for example: flow answer ${id} 500000\n`,
  })
  expect((await flow(dir.path, ["answer", id, "10m"])).stderr).toStartWith(`error: ${id} asks for more tokens, and "10m" is minutes:`)
  // Nothing was recorded: the question is still pending, and the cap as it was.
  expect((JSON.parse((await flow(dir.path, ["questions", "--json"])).stdout) as QuestionsReport).questions.map((q) => q.id)).toEqual([id])
  expect(await flow(dir.path, ["answer", id, "500k"])).toEqual({ code: 0, stdout: `Answered ${id} (task api).\n`, stderr: "" })
  expect((await flow(dir.path, ["show", "api"])).stdout).toContain("\nBudget: 2,100,000 of 2,500,000 tokens\n")
  // Replacing the answer counts the task's cap without the answer it replaces.
  expect((await flow(dir.path, ["answer", id, "50k", "--force"])).stderr).toContain("more than 100,000 tokens clears it")
  expect((await flow(dir.path, ["answer", id, "150k", "--force"])).code).toBe(0)
})
