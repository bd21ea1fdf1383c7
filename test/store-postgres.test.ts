// The shared task store from inside (lib/store/postgres/): what the CLI tests cannot reach: fences, two
// processes' caches, a replace that keeps the claims of the tasks that stay, the graph's every byte of JSON
// kept in its key order.
import { describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { projectAt } from "../lib/cli/project"
import type { TaskFile } from "../lib/model/task-index"
import { checkBudgetAnswer } from "../lib/budget/budget"
import { lastRunSpend } from "../lib/budget/budget-report"
import { agentKey } from "../lib/state/run-state"
import { openStateDb } from "../lib/state/sqlite/state-db"
import { PgRunState } from "../lib/state/postgres/pg-state"
import { database } from "../lib/store/postgres/connection"
import { PgTaskStore } from "../lib/store/postgres/pg-store"
import { createProject } from "../lib/store/postgres/share"
import { parseUrl } from "../lib/store/postgres/url"
import { sharedSetting } from "../lib/store/setting"
import { applyStatus } from "../lib/store/transitions"
import { freshDatabase, HAVE_POSTGRES, type TestDatabase } from "./postgres"

const TEXT = `top_note: {kept: true, order: [3, 1, 2]}
tasks:
  - id: a
    title: A
    status: ready_for_agent
    instructions: x
    zeta: 1
    alpha: {nested: [1, "two", {deep: null}]}
  - id: b
    title: B
    status: todo
    depends_on: [a]
    instructions: "ünïcode ✓"
    subtasks:
      - {id: b1, title: B1, status: todo, instructions: y}
`

async function shared(db: TestDatabase, key = "p") {
  const setting = sharedSetting(projectAt("/tmp"), parseUrl(db.url, "test"), key, undefined)
  await database(setting).run((sql) => sql.begin((tx) => createProject(tx, setting, Bun.YAML.parse(TEXT) as TaskFile, TEXT)))
  return setting
}

describe.skipIf(!HAVE_POSTGRES)("the PostgreSQL task store", () => {
  test.concurrent("the graph reads back with every value and every key in its order", async () => {
    await using db = await freshDatabase()
    const store = PgTaskStore.fresh(await shared(db))
    const { data } = await store.read()
    expect(JSON.stringify(data)).toBe(JSON.stringify(Bun.YAML.parse(TEXT)))
    expect(await store.text()).toBe(TEXT)
  })

  test.concurrent("a write carrying a fence is refused once the task's claim moved on, and writes nothing", async () => {
    await using db = await freshDatabase()
    const setting = await shared(db)
    const store = PgTaskStore.fresh(setting)
    await db.sql`UPDATE tasks SET attempt = 2, claimed_by = 'run-b' WHERE id = 'a'`
    const note = (run: string, attempt: number) =>
      store.mutate("test", (e) => e.append({ taskId: "a" }, "ai_notes", `by ${run}`), { taskId: "a", attempt, run })
    await expect(note("run-a", 1)).rejects.toThrow("this run no longer holds task 'a': it was taken over (attempt 2 by run run-b)")
    await note("run-b", 2)
    expect((await store.read()).data.tasks[0].ai_notes).toEqual(["by run-b"])
  })

  test.concurrent("two processes' caches each see the other's writes", async () => {
    await using db = await freshDatabase()
    const setting = await shared(db)
    const [one, two] = [PgTaskStore.fresh(setting), PgTaskStore.fresh(setting)]
    await one.read()
    await two.read()
    await one.mutate("one", (e) => applyStatus(e, "a", "done", "2024-01-01T00:00:00Z"))
    expect((await two.read()).data.tasks.map((t) => t.status)).toEqual(["done", "ready_for_agent"])
    await two.mutate("two", (e) => e.append({ taskId: "b1" }, "ai_notes", "from two"))
    const seen = (await one.read()).data
    expect(seen.tasks[1].subtasks![0].ai_notes).toEqual(["from two"])
    expect(seen.tasks[0].status).toBe("done")
  })

  test.concurrent("a replace keeps the claims of the tasks that stay and drops the rows of those gone", async () => {
    await using db = await freshDatabase()
    const setting = await shared(db)
    const store = PgTaskStore.fresh(setting)
    await db.sql`UPDATE tasks SET attempt = 3, claimed_by = 'run-x' WHERE id = 'a'`
    const next = TEXT.replace(/ {2}- id: b\n[\s\S]*$/, "  - {id: c, title: C, status: todo, instructions: z}\n")
    await store.replace("test", async () => ({ text: next, result: undefined }))
    expect(await db.sql`SELECT id, attempt, claimed_by FROM tasks ORDER BY ord`).toEqual([
      { id: "a", attempt: 3, claimed_by: "run-x" },
      { id: "c", attempt: 0, claimed_by: null },
    ])
    expect(await store.text()).toBe(next)
    expect((await PgTaskStore.fresh(setting).read()).data.tasks.map((t) => t.id)).toEqual(["a", "c"])
  })

  test.concurrent("an edit that throws or changes nothing writes nothing", async () => {
    await using db = await freshDatabase()
    const store = PgTaskStore.fresh(await shared(db))
    const [{ version }] = await db.sql`SELECT version::int AS version FROM projects`
    await expect(store.mutate("x", (e) => e.set({ taskId: "nope" }, "status", "done"))).rejects.toThrow("no task 'nope'")
    await expect(store.mutate("x", (e) => e.set({ taskId: "a" }, "alpha", "v"))).rejects.toThrow(
      "cannot set 'alpha' of task 'a': it holds a mapping, not a value",
    )
    await store.mutate("x", (e) => e.set({ taskId: "a" }, "status", "ready_for_agent"))
    expect(await db.sql`SELECT version::int AS version FROM projects`).toEqual([{ version }])
  })

  test.concurrent("the run state keeps what budgets need: a question's kind, parked agents, spend, the answer's check", async () => {
    await using db = await freshDatabase()
    const setting = await shared(db)
    const state = await PgRunState.open(database(setting), setting)
    await state.events.append({ kind: "run.start" })
    const asked = await state.questions.ask({ task_id: "a", agent: "a1", text: "Which port?" })
    const budget = await state.questions.ask({ task_id: "a", text: "more?", kind: "budget:usd" })
    expect(budget).toMatchObject({ id: "q-2", kind: "budget:usd", answer: null })
    expect((await state.questions.forTask("a")).map((q) => q.id)).toEqual([asked.id])
    expect((await state.questions.aboutBudget("a")).map((q) => q.id)).toEqual([budget.id])
    // The check runs inside the write: a refused answer leaves the question pending.
    await expect(state.questions.answer(budget.id, "maybe", "me", { accept: checkBudgetAnswer })).rejects.toThrow("q-2 asks for more budget")
    expect((await state.questions.get(budget.id))?.answer).toBeNull()
    expect((await state.questions.answer(budget.id, "5", "me", { accept: checkBudgetAnswer })).after?.answer).toBe("5")
    // An answered budget question is never handed to the task's agent.
    expect(await state.questions.undelivered("a")).toEqual([])

    await state.agents.upsert("a1", { cli: "script", parked_until: "2030-01-01T00:00:00Z", parked_reason: "usage limit", parked_task: "a" })
    await state.agents.upsert("a1", { current_task: null })
    expect(await state.agents.get("a1")).toMatchObject({ parked_until: "2030-01-01T00:00:00Z", parked_reason: "usage limit", parked_task: "a" })
    await state.agents.upsert("a1", { parked_until: null })
    expect(await state.agents.get("a1")).toMatchObject({ parked_until: null, parked_reason: "usage limit" })

    await state.events.append({ kind: "agent.usage", task_id: "a", agent: "a1", data: { costUsd: 0.25, billedTokens: 1000, costEstimated: true } })
    await state.events.append({ kind: "agent.usage", task_id: "a", agent: "a1", data: { inputTokens: 10, outputTokens: 5, costUsd: 0.5 } })
    await state.events.append({ kind: "agent.exit", task_id: "a", agent: "a1", data: { seconds: 90 } })
    await state.events.append({ kind: "agent.usage", task_id: "b", agent: "a2", data: { costUsd: 1 } })
    const byTask = (await state.spend.byTask()).sort((x, y) => `${x.task_id}${x.kind}`.localeCompare(`${y.task_id}${y.kind}`))
    expect(byTask).toEqual([
      { task_id: "a", kind: "agent.exit", cost: null, tokens: 0, seconds: 90 },
      { task_id: "a", kind: "agent.usage", cost: 0.75, tokens: 1015, seconds: null },
      { task_id: "b", kind: "agent.usage", cost: 1, tokens: 0, seconds: null },
    ])
    expect((await state.spend.byTask("b")).map((r) => r.cost)).toEqual([1])
    expect(await state.spend.byTask("a", "2000-01-01")).toEqual([])
    const last = await state.spend.lastRun()
    expect(last).toMatchObject({ endedAt: null })
    expect(last!.rows.find((r) => r.agent === "a2" && r.kind === "agent.usage")?.cost).toBe(1)
    expect((await state.usage.byTask()).get("a")).toEqual({ input_tokens: 10, output_tokens: 5, cost_usd: 0.75, cost_estimated: true })

    // Unshared into .flow/state.db and back: the kind and the parked fields go along.
    const dir = mkdtempSync(join(tmpdir(), "flow-state-"))
    try {
      const dump = await state.dump()
      using file = await openStateDb({ ...projectAt(dir), stateDir: dir })
      await file.load(dump)
      const back = await file.dump()
      expect(back.questions.map((q) => [q.id, q.kind, q.answer])).toEqual([
        ["q-1", null, null],
        ["q-2", "budget:usd", "5"],
      ])
      expect(back.agents).toEqual(dump.agents)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test.concurrent("agents are one per machine and name: each machine writes its own, and every machine's are read together", async () => {
    await using db = await freshDatabase()
    const setting = await shared(db)
    const [one, two] = await Promise.all(["laptop-1", "laptop-2"].map((machine) => PgRunState.open(database({ ...setting, machine }), { ...setting, machine })))
    await one.agents.upsert("claude-1", { cli: "claude", current_task: "a", session_id: "s-1" })
    await two.agents.upsert("claude-1", { cli: "claude", current_task: "b" })
    expect(await two.agents.countCompleted("claude-1")).toBe(1)
    // A machine resumes its own agent's session, never another machine's of that name.
    expect(await one.agents.get("claude-1")).toMatchObject({ current_task: "a", session_id: "s-1", completed: 0, machine: "laptop-1" })
    expect(await two.agents.get("claude-1")).toMatchObject({ current_task: "b", session_id: null, completed: 1, machine: "laptop-2" })
    expect((await two.agents.list()).map((a) => [a.name, a.machine])).toEqual([["claude-1", "laptop-2"]])
    expect((await one.agents.everywhere()).map((a) => [a.name, a.machine, a.current_task])).toEqual([
      ["claude-1", "laptop-1", "a"],
      ["claude-1", "laptop-2", "b"],
    ])
    // Usage and spend by agent are by agent and machine too.
    await one.events.append({ kind: "run.start" })
    await one.events.append({ kind: "agent.usage", task_id: "a", agent: "claude-1", data: { costUsd: 1 } })
    await two.events.append({ kind: "run.start" })
    await two.events.append({ kind: "agent.usage", task_id: "b", agent: "claude-1", data: { costUsd: 2 } })
    const usage = await one.usage.byAgent()
    expect([usage.get(agentKey("claude-1", "laptop-1"))?.cost_usd, usage.get(agentKey("claude-1", "laptop-2"))?.cost_usd]).toEqual([1, 2])
    expect((await lastRunSpend(two))?.byAgent.get(agentKey("claude-1", "laptop-2"))?.usd).toBe(2)
    // state.db holds one agent per name: unshared on laptop-2, its own.
    expect((await two.dump()).agents).toMatchObject([{ name: "claude-1", current_task: "b", completed: 1 }])
    expect((await two.dump()).agents).toHaveLength(1)
  })

  test.concurrent("the last run is this machine's: its usage, spend, end and queue events, however the machines' runs interleave", async () => {
    await using db = await freshDatabase()
    const setting = await shared(db)
    const [one, two, three] = await Promise.all(
      ["laptop-1", "laptop-2", "laptop-3"].map((machine) => PgRunState.open(database({ ...setting, machine }), { ...setting, machine })),
    )
    const usage = (state: PgRunState, task: string, costUsd: number) =>
      state.events.append({ kind: "agent.usage", task_id: task, agent: "claude-1", data: { inputTokens: 10, costUsd } })
    const queued = (state: PgRunState, task: string) =>
      state.events.append({ kind: "queue", task_id: task, data: { taskId: task, target: "main", state: "waiting" } })
    await one.events.append({ kind: "run.start" })
    await usage(one, "a", 1)
    await queued(one, "a")
    await two.events.append({ kind: "run.start" }) // laptop-2 starts while laptop-1's run goes on
    await usage(two, "b", 2)
    await queued(two, "b")
    await usage(one, "a", 4)
    await one.events.append({ kind: "run.end" })

    expect(await one.usage.lastRun()).toEqual({ input_tokens: 20, cost_usd: 5 })
    expect(await two.usage.lastRun()).toEqual({ input_tokens: 10, cost_usd: 2 })
    const kinds = ["queue", "merge", "run.end"] as const
    expect((await one.events.ofLastRun(kinds)).map((e) => [e.kind, e.task_id])).toEqual([
      ["queue", "a"],
      ["run.end", null],
    ])
    expect((await two.events.ofLastRun(kinds)).map((e) => [e.kind, e.task_id])).toEqual([["queue", "b"]])
    // laptop-1's end is not laptop-2's: laptop-2's run is still going.
    const [oneRun, twoRun] = [await lastRunSpend(one), await lastRunSpend(two)]
    expect([oneRun?.run.usd, (await one.spend.lastRun())?.endedAt]).toEqual([5, expect.any(String)])
    expect([twoRun?.run.usd, (await two.spend.lastRun())?.endedAt]).toEqual([2, null])
    expect([...oneRun!.byAgent.keys(), ...twoRun!.byAgent.keys()]).toEqual([agentKey("claude-1", "laptop-1"), agentKey("claude-1", "laptop-2")])
    // Another machine's latest run, asked by name (an agent's spend in its own machine's run).
    expect((await lastRunSpend(three, "laptop-2"))?.run.usd).toBe(2)
    // A machine that never ran has no last run.
    expect([await three.usage.lastRun(), await three.spend.lastRun(), await three.events.ofLastRun(kinds)]).toEqual([null, undefined, []])
  })
})
