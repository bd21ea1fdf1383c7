// The shared task store from inside (lib/store/postgres/): what the CLI tests cannot reach: fences, two
// processes' caches, a replace that keeps the claims of the tasks that stay, the graph's every byte of JSON
// kept in its key order.
import { describe, expect, test } from "bun:test"
import { projectAt } from "../lib/cli/project"
import type { TaskFile } from "../lib/model/task-index"
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
})
