// How runs that share a graph divide its tasks (docs/FLEET.md, "Claims, leases, fencing"), against a real
// PostgreSQL: claims from separate processes at once never take one task twice and leave none untaken; a
// claim checks dependencies in its statement; a live claim holds, a stale one is taken over with the next
// attempt; a claim of a run proved dead on this machine is given back at once, and only then; renewals, holds
// and releases; a write fenced by an attempt that lost its task is refused, through the CLI as an agent makes
// it, while a person's command is never fenced; LISTEN hears another process write.
import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { bootId, pidNamespace, processStartTime } from "../lib/cli/pid"
import { projectAt } from "../lib/cli/project"
import { widenPools } from "../lib/store/postgres/connection"
import { PgTaskStore } from "../lib/store/postgres/pg-store"
import { parseUrl } from "../lib/store/postgres/url"
import { sharedSetting } from "../lib/store/setting"
import type { Fence } from "../lib/store/store"
import { applyStatus } from "../lib/store/transitions"
import { flow, tasksYaml, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, type TestDatabase } from "./postgres"
import { together } from "./together"

const KEY = "p"
const NOW = "2026-01-01T00:00:00.000Z"

/** A repo holding `tasks` shared as project `p`: the CLI of that folder and a store as another process has. */
async function sharedProject(db: TestDatabase, tasks: Record<string, unknown>[]) {
  const dir = await tempRepo({ "tasks.yaml": tasksYaml(tasks.map((t) => ({ title: String(t.id), instructions: "x", ...t }))) })
  const shared = await flow(dir.path, ["share", db.url, "--project", KEY])
  if (shared.code !== 0) throw new Error(`flow share failed: ${shared.stderr}`)
  const setting = sharedSetting(projectAt(dir.path), parseUrl(db.url, "test"), KEY, undefined)
  const store = () => PgTaskStore.fresh(setting)
  const row = async (id: string) =>
    (
      await db.sql`SELECT status, attempt, claimed_by, claimed_agent, lease_until > now() AS live, extract(epoch FROM lease_until - now())::float8 AS left
                   FROM tasks WHERE project = ${KEY} AND id = ${id}`
    )[0] as { status: string; attempt: number; claimed_by: string | null; claimed_agent: string | null; live: boolean | null; left: number | null }
  const version = async () => Number((await db.sql`SELECT version FROM projects WHERE key = ${KEY}`)[0].version)
  return { dir, setting, store, row, version, [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose]() }
}

const A = { run: "run-a", agent: "a-1" }
const B = { run: "run-b", agent: "b-1" }

/** Waits until the database's clock has passed the claim's lease (the lease is 1 s in these tests). */
async function lapsed(store: PgTaskStore, fence: Fence): Promise<void> {
  while (await store.claims.holds(fence)) await Bun.sleep(50)
}

/** `flow <args>` in `dir` as an agent of `fence`'s run and attempt, or as a person (no fence). */
function flowAs(dir: string, args: string[], fence?: Fence) {
  const env = fence
    ? { FLOW_TASK_ID: fence.taskId, FLOW_RUN_ID: fence.run, FLOW_ATTEMPT: String(fence.attempt), FLOW_AGENT: "a-1" }
    : { FLOW_TASK_ID: undefined, FLOW_RUN_ID: undefined, FLOW_ATTEMPT: undefined, FLOW_AGENT: undefined }
  return flow(dir, args, { env })
}

describe.skipIf(!HAVE_POSTGRES)("claims of a shared graph", () => {
  test("8 claimers in 4 processes over 200 ready tasks take every task exactly once", async () => {
    await using db = await freshDatabase()
    const ids = Array.from({ length: 200 }, (_, i) => `t-${String(i).padStart(3, "0")}`)
    await using p = await sharedProject(
      db,
      ids.map((id, i) => ({ id, status: i % 2 ? "ready_for_agent" : "todo" })),
    )
    // Every claimer is given the same candidates in the same order: each claim races the others for the first.
    const { outputs } = await together(["p1", "p2", "p3", "p4"].map((run) => [join(import.meta.dir, "fleet-claimer.ts"), db.url, KEY, run, "2", ids.join(",")]))
    const taken: string[][] = outputs.map((o) => JSON.parse(o))
    const all = taken.flat()
    expect(all).toHaveLength(200)
    expect(new Set(all).size).toBe(200)
    expect(all.toSorted()).toEqual(ids)
    const rows = await db.sql`SELECT attempt, count(*)::int AS n FROM tasks WHERE project = ${KEY} AND claimed_by IS NOT NULL GROUP BY attempt`
    expect(rows).toEqual([{ attempt: 1, n: 200 }])
    expect(await p.row(ids[0])).toMatchObject({ attempt: 1, live: true })
  })

  test("a todo task waits for its dependencies in the claim itself; ready_for_agent is claimed regardless; done and blocked never; the first candidate free is taken", async () => {
    await using db = await freshDatabase()
    await using p = await sharedProject(db, [
      { id: "base", status: "in_progress" },
      { id: "next", status: "todo", depends_on: ["base"] },
      { id: "forced", status: "ready_for_agent", depends_on: ["base"] },
      { id: "over", status: "done" },
      { id: "stopped", status: "blocked" },
      { id: "x1", status: "ready_for_agent" },
      { id: "x2", status: "todo" },
    ])
    const store = p.store()
    expect(await store.claims.claim(["next", "over", "stopped"], A, 60_000)).toBeUndefined()
    expect(await store.claims.claim(["next", "forced"], A, 60_000)).toEqual({ taskId: "forced", attempt: 1, run: "run-a" })
    await store.mutate("test", (e) => applyStatus(e, "base", "done", NOW))
    // The candidates' order is the caller's: the first that may be taken is.
    expect(await store.claims.claim(["over", "next"], B, 60_000)).toEqual({ taskId: "next", attempt: 1, run: "run-b" })
    expect(await p.row("next")).toMatchObject({ claimed_by: "run-b", claimed_agent: "b-1", live: true })
    expect(await store.claims.claim(["x2", "x1"], A, 60_000)).toMatchObject({ taskId: "x2" })
    expect(await store.claims.claim(["x2", "x1"], A, 60_000)).toMatchObject({ taskId: "x1" })
  })

  test("a live claim is not taken by another run; once its lease passed it is, with the next attempt", async () => {
    await using db = await freshDatabase()
    await using p = await sharedProject(db, [{ id: "w", status: "ready_for_agent" }])
    const [one, two] = [p.store(), p.store()]
    const first = (await one.claims.claim(["w"], A, 1_000))!
    expect(first).toEqual({ taskId: "w", attempt: 1, run: "run-a" })
    expect(await two.claims.claim(["w"], B, 1_000)).toBeUndefined()
    expect(await p.row("w")).toMatchObject({ attempt: 1, claimed_by: "run-a" })
    await lapsed(two, first)
    expect(await two.claims.claim(["w"], B, 60_000)).toEqual({ taskId: "w", attempt: 2, run: "run-b" })
    expect(await p.row("w")).toMatchObject({ attempt: 2, claimed_by: "run-b", claimed_agent: "b-1", live: true })
  })

  test("a renewal extends the claims given that their run still holds, leaves out one taken over, and never renews one not given", async () => {
    await using db = await freshDatabase()
    await using p = await sharedProject(db, [
      { id: "kept", status: "ready_for_agent" },
      { id: "lost", status: "ready_for_agent" },
      { id: "other", status: "ready_for_agent" },
      { id: "dropped", status: "ready_for_agent" },
    ])
    const store = p.store()
    const kept = (await store.claims.claim(["kept"], A, 1_000))!
    const lost = (await store.claims.claim(["lost"], A, 1_000))!
    const other = (await store.claims.claim(["other"], B, 60_000))!
    // Run A's claim, not given to the renewal: its row names run A, but what the run counts as its own decides.
    const dropped = (await store.claims.claim(["dropped"], A, 1_000))!
    expect(await store.claims.renew([kept, lost], 1_000)).toEqual(new Set(["kept", "lost"]))
    expect(await store.claims.renew([], 1_000)).toEqual(new Set()) // a run holding nothing asks too: the database's answer is news
    // Another run's claim given as run A's, and an older attempt: neither is renewed.
    expect(
      await store.claims.renew(
        [
          { ...other, run: "run-a" },
          { ...kept, attempt: 0 },
        ],
        60_000,
      ),
    ).toEqual(new Set())
    await lapsed(store, kept)
    await lapsed(store, lost)
    await lapsed(store, dropped)
    expect(await store.claims.claim(["lost"], B, 60_000)).toMatchObject({ taskId: "lost", attempt: 2 })
    expect(await store.claims.renew([kept, lost], 60_000)).toEqual(new Set(["kept"]))
    expect(await p.row("dropped")).toMatchObject({ claimed_by: "run-a", live: false })
    // Renewed on the database's clock: the lapsed claim lives again, for about the new lease.
    expect(await store.claims.holds(kept)).toBe(true)
    expect((await p.row("kept")).left).toBeGreaterThan(50)
    expect(await store.claims.holds(lost)).toBe(false)
    expect(await p.row("other")).toMatchObject({ claimed_by: "run-b", attempt: 1 })
  })

  test("holds is false once the lease passed or the claim was released; a release of a claim moved on does nothing", async () => {
    await using db = await freshDatabase()
    await using p = await sharedProject(db, [
      { id: "a", status: "ready_for_agent" },
      { id: "b", status: "ready_for_agent" },
    ])
    const store = p.store()
    const short = (await store.claims.claim(["a"], A, 1_000))!
    expect(await store.claims.holds(short)).toBe(true)
    expect(await store.claims.holds({ ...short, run: "run-b" })).toBe(false)
    await lapsed(store, short)
    expect(await p.row("a")).toMatchObject({ claimed_by: "run-a", live: false })

    const held = (await store.claims.claim(["b"], A, 60_000))!
    expect(await store.claims.holds(held)).toBe(true)
    await store.claims.release(held)
    expect(await store.claims.holds(held)).toBe(false)
    expect(await p.row("b")).toMatchObject({ attempt: 1, claimed_by: null, claimed_agent: null, live: null })
    // Released: any run takes it at once, without waiting for a lease.
    const taken = (await store.claims.claim(["b"], B, 60_000))!
    expect(taken).toEqual({ taskId: "b", attempt: 2, run: "run-b" })
    await store.claims.release(held)
    expect(await store.claims.holds(taken)).toBe(true)
  })

  test("an agent's write fenced by an attempt that lost its task is refused and changes nothing; a person's never is", async () => {
    await using db = await freshDatabase()
    await using p = await sharedProject(db, [
      { id: "w", status: "in_progress" },
      { id: "v", status: "in_progress" },
    ])
    const store = p.store()
    const stale = (await store.claims.claim(["w"], A, 1_000))!
    await lapsed(store, stale)
    const current = (await store.claims.claim(["w"], B, 60_000))!
    expect(current.attempt).toBe(2)

    const before = await p.version()
    const refused = await flowAs(p.dir.path, ["done", "w"], stale)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("this run no longer holds task 'w': it was taken over (attempt 2 by run run-b); attempt 1 may change nothing")
    expect((await flowAs(p.dir.path, ["note", "w", "from the old attempt"], stale)).code).toBe(1)
    expect(await p.version()).toBe(before)
    expect(await p.row("w")).toMatchObject({ status: "in_progress", attempt: 2, claimed_by: "run-b" })

    // The attempt that holds the task writes; a person writes whoever holds it.
    expect(await flowAs(p.dir.path, ["note", "w", "from the new attempt"], current)).toMatchObject({ code: 0 })
    const person = await flowAs(p.dir.path, ["done", "w"])
    expect({ code: person.code, stderr: person.stderr }).toEqual({ code: 0, stderr: "" })
    const w = JSON.parse((await flowAs(p.dir.path, ["show", "w", "--json"])).stdout).task
    expect({ status: w.status, notes: w.ai_notes }).toEqual({ status: "done", notes: ["from the new attempt"] })

    // A batch carrying one stale fence among live ones writes nothing at all.
    const live = (await store.claims.claim(["v"], A, 60_000))!
    const batchBefore = await p.version()
    await expect(
      store.mutate("batch", (e) => [applyStatus(e, "v", "done", NOW), e.append({ taskId: "w" }, "ai_notes", "late")], [live, stale]),
    ).rejects.toThrow("this run no longer holds task 'w'")
    expect(await p.version()).toBe(batchBefore)
    expect(await p.row("v")).toMatchObject({ status: "in_progress" })
    // The same batch with live fences only goes through.
    await store.mutate("batch", (e) => applyStatus(e, "v", "done", NOW), [live, current])
    expect(await p.row("v")).toMatchObject({ status: "done" })
  })

  test("a claim of this machine's run whose process is gone is given back before its lease; one whose process lives, of another machine or boot, or with no proof keeps it", async () => {
    await using db = await freshDatabase()
    const ids = ["dead", "reused", "alive", "elsewhere", "reboot", "unmarked", "lockless"]
    await using p = await sharedProject(
      db,
      ids.map((id) => ({ id, status: "in_progress" })),
    )
    const store = p.store()
    const here = p.setting.machine
    await using living = Bun.spawn(["sleep", "300"])
    const killed = Bun.spawn(["sleep", "300"])
    killed.kill("SIGKILL")
    await killed.exited
    const mark = (pid: number) => ({ pid, start: processStartTime(pid) ?? null, boot: bootId() ?? null, ns: pidNamespace() ?? null })
    const dead = { ...mark(process.pid), pid: killed.pid } // a pid free now (a process of this test a moment ago)
    // A run's row as `flow run` writes it when it takes the run lock (run-lock.ts); its session is no matter here.
    const row = async (run: string, machine: string, m: { pid: number; start: string | null; boot: string | null; ns: string | null }) => {
      await db.sql`INSERT INTO live_runs (project, run_id, command, machine, pid, backend_pid, since, pid_start, boot_id, pid_ns)
                   VALUES (${KEY}, ${run}, 'flow run', ${machine}, ${m.pid}, 0, now(), ${m.start}, ${m.boot}, ${m.ns})`
    }
    await row("run-dead", here, dead)
    await row("run-reused", here, { ...mark(process.pid), start: "1" }) // its pid now another process's (another start time)
    await row("run-alive", here, mark(living.pid))
    await row("run-elsewhere", "elsewhere", dead)
    await row("run-reboot", here, { ...dead, boot: "another-boot" }) // not proof: another machine may have been given this name
    await row("run-unmarked", here, { pid: killed.pid, start: null, boot: null, ns: null }) // an older flow's row
    const elsewhere = PgTaskStore.fresh({ ...p.setting, machine: "elsewhere" })
    const fences = new Map<string, Fence>()
    for (const id of ids) {
      const claims = id === "elsewhere" ? elsewhere.claims : store.claims
      fences.set(id, (await claims.claim([id], { run: `run-${id}`, agent: "a-1" }, 60_000))!)
    }

    const freed = await store.claims.freeDead("run-me")
    expect(freed.toSorted((a, b) => a.run.localeCompare(b.run))).toEqual([
      { run: "run-dead", pid: killed.pid, tasks: ["dead"] },
      { run: "run-reused", pid: process.pid, tasks: ["reused"] },
    ])
    for (const id of ["dead", "reused"]) expect(await p.row(id)).toMatchObject({ attempt: 1, claimed_by: null, live: null })
    for (const id of ["alive", "elsewhere", "reboot", "unmarked", "lockless"])
      expect(await p.row(id)).toMatchObject({ attempt: 1, claimed_by: `run-${id}`, live: true })
    // The rows of the runs proved dead go; the others stay.
    expect((await db.sql`SELECT run_id FROM live_runs ORDER BY run_id`).map((r: { run_id: string }) => r.run_id)).toEqual([
      "run-alive",
      "run-elsewhere",
      "run-reboot",
      "run-unmarked",
    ])
    // Any run takes a freed task at once, with the next attempt; the dead run's attempt writes nothing.
    expect(await store.claims.claim(["alive", "dead"], B, 60_000)).toEqual({ taskId: "dead", attempt: 2, run: "run-b" })
    const refused = await flowAs(p.dir.path, ["done", "dead"], fences.get("dead"))
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("this run no longer holds task 'dead': it was taken over (attempt 2 by run run-b)")
    // The one that lives is not proved dead later either; once it is gone, it is.
    expect(await store.claims.freeDead("run-me")).toEqual([])
    living.kill("SIGKILL")
    await living.exited
    expect(await store.claims.freeDead("run-me")).toEqual([{ run: "run-alive", pid: living.pid, tasks: ["alive"] }])
  })

  test("listen wakes on another process's write", async () => {
    await using db = await freshDatabase()
    await using p = await sharedProject(db, [{ id: "w", status: "in_progress" }])
    let wakes = 0
    let heard = () => {}
    const stop = await p.store().claims.listen(() => {
      wakes++
      heard()
    })
    // The listener is also called once it is subscribed (what changed while it was away is read then): the
    // note's wake is one more.
    const subscribed = wakes
    const woken = new Promise<void>((resolve) => {
      heard = () => wakes > subscribed && resolve()
    })
    expect((await flowAs(p.dir.path, ["note", "w", "hello"])).code).toBe(0)
    await woken
    expect(wakes).toBe(subscribed + 1)
    await stop()
  })
  test("renewals of a run's claims and batch writes fenced by them, at once and in opposite orders, never deadlock (40 rounds)", async () => {
    // The pools of a run, as `flow run` widens them: the renewal and the write each on a connection of its own
    // (a pool of one would take them in turn). Last in this file: the tests after it would get such pools too.
    widenPools()
    await using db = await freshDatabase()
    const ids = ["t1", "t2", "t3", "t4", "t5", "t6"]
    await using p = await sharedProject(
      db,
      ids.map((id) => ({ id, status: "in_progress" })),
    )
    const writer = p.store()
    const renewer = p.store()
    const fences: Fence[] = []
    for (const id of ids) fences.push((await renewer.claims.claim([id], A, 60_000))!)
    // 20 ms for each task row a statement updates: a renewal holds its first rows while it updates the next,
    // as the run's renewal did on a loaded machine (test/fleet-lease-race.test.ts slows it the same way).
    await db.sql.unsafe(`
      CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.02); RETURN NEW; END $$;
      CREATE TRIGGER slow_row BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION slow_row();`)
    const failures: string[] = []
    for (let round = 0; round < 40; round++) {
      // A renewal in one order, a batch fenced in the other (a coalesced write carries its edits' fences in the
      // order they were asked for), the batch starting a little later each round: it meets the renewal mid-way.
      const order = round % 2 ? ids : ids.toReversed()
      const fenced = order.map((id) => fences.find((f) => f.taskId === id)!)
      const results = await Promise.allSettled([
        renewer.claims.renew(fenced.toReversed(), 60_000),
        Bun.sleep((round % 8) * 10).then(() =>
          writer.mutate(`round ${round}`, (e) => order.map((id) => e.append({ taskId: id }, "ai_notes", `round ${round}`)), fenced),
        ),
      ])
      for (const r of results) if (r.status === "rejected") failures.push(`round ${round}: ${(r.reason as Error).message.split("\n")[0]}`)
      const renewed = results[0].status === "fulfilled" ? [...results[0].value].sort() : []
      if (results[0].status === "fulfilled" && renewed.join() !== ids.join()) failures.push(`round ${round}: renewed ${renewed.join()}`)
    }
    expect(failures).toEqual([])
    const notes = await db.sql`SELECT id, json_array_length(doc -> 'ai_notes') AS n FROM tasks WHERE project = ${KEY} ORDER BY id`
    expect(notes).toEqual(ids.map((id) => ({ id, n: 40 })))
  }, 120_000)
})
