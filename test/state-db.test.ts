// lib/state/sqlite/state-db.ts in-process: lazy opening, the schema version, events, agents, and the busy retry giving up
// with a clear error when another connection holds the write lock.
import { expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { existsSync } from "node:fs"
import { FlowError } from "../lib/cli/errors"
import { projectAt } from "../lib/cli/project"
import { checkBudgetAnswer } from "../lib/budget/budget"
import { openExistingStateDb as openExistingState, openStateDb as openState, SCHEMA_VERSION, stateFile } from "../lib/state/sqlite/state-db"
import { tempRepo } from "./helpers"

test.concurrent("openExistingState creates nothing; openState makes .flow with its .gitignore and a WAL database", async () => {
  await using dir = await tempRepo()
  const project = projectAt(dir.path)
  expect(await openExistingState(project)).toBeUndefined()
  expect(existsSync(project.stateDir)).toBe(false)
  {
    using db = await openState(project)
    expect(db.file).toBe(stateFile(project))
  }
  expect(dir.read(".flow/.gitignore")).toBe("# flow's local state: not for version control\n*\n")
  const raw = new Database(stateFile(project), { readonly: true })
  expect(raw.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" })
  expect(raw.query("PRAGMA user_version").get()).toEqual({ user_version: SCHEMA_VERSION })
  raw.close()
  using again = await openExistingState(project)
  expect(again).toBeDefined()
})

test.concurrent("a database from a newer flow is refused with exit 3", async () => {
  await using dir = await tempRepo()
  const project = projectAt(dir.path)
  using _db = await openState(project) // creates the database, kept open while another connection changes it
  const raw = new Database(stateFile(project))
  raw.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`)
  raw.close()
  const error = await openExistingState(project).catch((e) => e)
  expect(error).toBeInstanceOf(FlowError)
  expect([error.exit, error.message]).toEqual([
    3,
    `${stateFile(project)} has schema version ${SCHEMA_VERSION + 1}, newer than this flow knows (${SCHEMA_VERSION})`,
  ])
})

test.concurrent("events: asks and answers are logged; append and since page by id", async () => {
  await using dir = await tempRepo()
  using db = await openState(projectAt(dir.path))
  const q = await db.questions.ask({ task_id: "api", agent: "claude", text: "?" })
  await db.questions.answer(q.id, "!", "alice", { accept: checkBudgetAnswer })
  const id = await db.events.append({ kind: "task.status", task_id: "api", agent: "claude", data: { from: "todo", to: "in_progress", tokens: 12 } })
  await db.events.append({ kind: "run.started" })
  const all = await db.events.since()
  expect(all.map(({ at, ...rest }) => rest)).toEqual([
    { id: 1, kind: "question.asked", task_id: "api", agent: "claude", data: { question: "q-1" } },
    { id: 2, kind: "question.answered", task_id: "api", agent: "claude", data: { question: "q-1", by: "alice", replaced: false } },
    { id: 3, kind: "task.status", task_id: "api", agent: "claude", data: { from: "todo", to: "in_progress", tokens: 12 } },
    { id: 4, kind: "run.started", task_id: null, agent: null, data: null },
  ])
  expect(id).toBe(3)
  expect((await db.events.since(3)).map((e) => e.id)).toEqual([4])
  expect((await db.events.since(0, 2)).map((e) => e.id)).toEqual([1, 2])
})

test.concurrent("agents: upsert sets only the given fields, null clears, countCompleted adds one", async () => {
  await using dir = await tempRepo()
  using db = await openState(projectAt(dir.path))
  const strip = ({ updated_at, ...rest }: { updated_at: string }) => rest
  expect(strip(await db.agents.upsert("claude", { cli: "claude", current_task: "api" }))).toEqual({
    name: "claude",
    cli: "claude",
    current_task: "api",
    completed: 0,
    session_id: null,
    parked_until: null,
    parked_reason: null,
    parked_task: null,
  })
  await db.agents.upsert("claude", { session_id: "s-1" })
  expect(await db.agents.countCompleted("claude")).toBe(1)
  expect(await db.agents.countCompleted("codex")).toBe(1)
  await db.agents.upsert("claude", { current_task: null })
  expect(strip((await db.agents.get("claude"))!)).toEqual({
    name: "claude",
    cli: "claude",
    current_task: null,
    completed: 1,
    session_id: "s-1",
    parked_until: null,
    parked_reason: null,
    parked_task: null,
  })
  expect(await db.agents.get("gemini")).toBeUndefined()
  expect((await db.agents.list()).map((a) => a.name)).toEqual(["claude", "codex"])
})

test.concurrent("a write blocked by another connection is retried, then fails naming the file and the fix", async () => {
  await using dir = await tempRepo()
  const project = { ...projectAt(dir.path), lockTimeoutMs: 400 }
  using db = await openState(project)
  const holder = new Database(stateFile(project))
  holder.exec("BEGIN IMMEDIATE")
  const started = performance.now()
  // The event loop keeps running while the write waits: a timer fires in between.
  let ticks = 0
  const timer = setInterval(() => ticks++, 20)
  const error = await db.questions.ask({ task_id: "api", text: "?" }).catch((e) => e)
  clearInterval(timer)
  expect(performance.now() - started).toBeGreaterThanOrEqual(400)
  expect(ticks).toBeGreaterThan(0) // a blocking wait would leave none
  expect(error).toBeInstanceOf(FlowError)
  expect([error.exit, error.message, error.hint]).toEqual([
    1,
    `${stateFile(project)} stayed busy (locked by another flow process) for 0.4 s`,
    "try again; if it persists, look for a stuck flow process, or raise FLOW_LOCK_TIMEOUT (seconds)",
  ])
  // Released in time, the same write goes through.
  const pending = db.questions.ask({ task_id: "api", text: "?" })
  setTimeout(() => holder.exec("COMMIT"), 100)
  expect((await pending).id).toBe("q-1")
  holder.close()
})

test.concurrent("delivery: an answer is undelivered until the agent is given it; a replaced answer is undelivered again", async () => {
  await using dir = await tempRepo()
  using db = await openState(projectAt(dir.path))
  const [a, b] = [await db.questions.ask({ task_id: "api", text: "a?" }), await db.questions.ask({ task_id: "api", text: "b?" })]
  await db.questions.ask({ task_id: "web", text: "c?" })
  const ids = async () => (await db.questions.undelivered("api")).map((q) => q.id)
  expect(await ids()).toEqual([]) // nothing answered: nothing to hand over
  await db.questions.answer(b.id, "yes", "alice", { accept: checkBudgetAnswer })
  await db.questions.answer(a.id, "no", "alice", { accept: checkBudgetAnswer })
  expect(await ids()).toEqual([a.id, b.id]) // oldest first
  await db.questions.delivered("api", [a.id], "flow ask --wait")
  expect(await ids()).toEqual([b.id])
  await db.questions.delivered("api", [b.id], "flow run")
  expect(await ids()).toEqual([])
  await Bun.sleep(2) // the replacement comes after the delivery, as it would
  await db.questions.answer(a.id, "maybe", "bob", { replace: true, accept: checkBudgetAnswer })
  expect(await ids()).toEqual([a.id])
  expect((await db.events.since()).filter((e) => e.kind === "question.delivered").map((e) => e.data)).toEqual([
    { question: a.id, via: "flow ask --wait" },
    { question: b.id, via: "flow run" },
  ])
})

test.concurrent("a budget question takes an amount or 'block', whoever answers; its agent is never handed it as an answer", async () => {
  await using dir = await tempRepo()
  using db = await openState(projectAt(dir.path))
  const q = await db.questions.ask({ task_id: "api", text: "task 'api' spent $5.20 of $5.00: ...", kind: "budget:usd" })
  const refused = await db.questions.answer(q.id, "sure", "alice", { accept: checkBudgetAnswer }).catch((e) => e)
  expect(refused).toBeInstanceOf(FlowError)
  expect((refused as FlowError).exit).toBe(2)
  expect((await db.questions.get(q.id))?.answer).toBeNull() // nothing written
  expect((await db.questions.answer(q.id, "$10", "alice", { accept: checkBudgetAnswer })).after?.answer).toBe("$10")
  // Not the agent's: not in its questions, not delivered to it as an answer; listed among the task's budget questions.
  expect(await db.questions.forTask("api")).toEqual([])
  expect(await db.questions.undelivered("api")).toEqual([])
  expect((await db.questions.aboutBudget("api")).map((x) => [x.id, x.kind, x.answer])).toEqual([[q.id, "budget:usd", "$10"]])
})
