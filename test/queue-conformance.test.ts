// The merge queue's rows (lib/state/queue-rows.ts), one conformance suite over both backends of the run state
// (STYLE.md §10): .flow/state.db and the shared PostgreSQL database, each opened twice as two machines would.
// Order, the lead's lease and its fencing, checks claimed once each and fenced by build and attempt, a lapsed
// claim taken over, results refused once the claim no longer holds: the rules lib/landing/merge-queue.ts
// builds on, the same in both.
import { describe, expect, test } from "bun:test"
import { projectAt } from "../lib/cli/project"
import { PgRunState } from "../lib/state/postgres/pg-state"
import type { QueueChange, QueueRows } from "../lib/state/queue-rows"
import { openStateDb } from "../lib/state/sqlite/state-db"
import { database } from "../lib/store/postgres/connection"
import { createProject } from "../lib/store/postgres/share"
import { parseUrl } from "../lib/store/postgres/url"
import { sharedSetting } from "../lib/store/setting"
import { tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"

type Machines = { a: QueueRows; b: QueueRows } & AsyncDisposable

const BACKENDS: { name: string; enabled: boolean; open: () => Promise<Machines> }[] = [
  {
    name: "file",
    enabled: true,
    open: async () => {
      const dir = await tempRepo()
      const [a, b] = [await openStateDb(projectAt(dir.path)), await openStateDb(projectAt(dir.path))]
      return { a: a.queue, b: b.queue, [Symbol.asyncDispose]: async () => (a.close(), b.close(), await dir[Symbol.asyncDispose]()) }
    },
  },
  {
    name: "postgres",
    enabled: HAVE_POSTGRES,
    open: async () => {
      const db = await freshDatabase()
      const setting = sharedSetting(projectAt(db.name), parseUrl(db.url, "test"), "shop", undefined)
      await database(setting).run((sql) => sql.begin((tx) => createProject(tx, setting, { tasks: [] } as never, null)))
      const [a, b] = [
        await PgRunState.open(database(setting), { ...setting, machine: "m1" }),
        await PgRunState.open(database(setting), { ...setting, machine: "m2" }),
      ]
      return { a: a.queue, b: b.queue, [Symbol.asyncDispose]: () => db[Symbol.asyncDispose]() }
    },
  },
]

const Q = "origin\nmain"
const candidate = (task: string, run = "run-a") => ({
  queue: Q,
  target: "main",
  task_id: task,
  branch: `flow/${task}`,
  head: `${task}-head`,
  message: `Merge ${task}`,
  run_id: run,
  attempt: 1,
})
const build = (id: number, gen: number, merge: string, ahead: string[] = []): QueueChange => ({
  id,
  gen,
  state: "ready",
  build: { base: "tip", merge, ref: `refs/flow/queue/x/${id}`, ahead },
})

/** Waits, up to 10 s, until `fn` gives something. */
async function eventually<T>(fn: () => Promise<T | undefined>): Promise<T> {
  for (const end = Date.now() + 10_000; Date.now() < end; ) {
    const got = await fn()
    if (got !== undefined) return got
    await Bun.sleep(20)
  }
  throw new Error("never")
}

for (const backend of BACKENDS) {
  describe.skipIf(!backend.enabled)(`the merge queue's rows (${backend.name})`, () => {
    test("candidates line up in the order handed over, each machine's in one line; a verdict read is forgotten", async () => {
      await using m = await backend.open()
      const first = await m.a.submit(candidate("a"))
      await m.b.submit(candidate("b", "run-b"))
      await m.a.submit({ ...candidate("c"), queue: "other\nmain" })
      expect(first).toMatchObject({ task_id: "a", state: "waiting", gen: 0, ahead: [], checks: 0, thrown: 0, base: null, merge: null })
      expect((await m.b.line(Q)).map((r) => [r.task_id, r.run_id])).toEqual([
        ["a", "run-a"],
        ["b", "run-b"],
      ])
      expect((await m.a.line()).map((r) => r.task_id)).toEqual(["a", "b", "c"]) // by queue, then in line
      const lead = (await m.a.lead(Q, "run-a", 60_000))!
      expect(await m.a.apply(lead, [{ id: first.id, gen: 0, state: "landed" }])).toBe(true)
      expect((await m.a.ended(Q, "run-a")).map((r) => [r.task_id, r.state, typeof r.landed_at])).toEqual([["a", "landed", "string"]])
      expect(await m.a.ended(Q, "run-b")).toEqual([])
      await m.a.forget([first.id])
      expect(await m.a.ended(Q, "run-a")).toEqual([])
      expect((await m.a.line(Q)).map((r) => r.task_id)).toEqual(["b"])
    })

    test("one run leads a queue at a time; a lapsed lead is taken over, and the stale lead's writes are refused", async () => {
      await using m = await backend.open()
      const { id } = await m.a.submit(candidate("a"))
      const first = (await m.a.lead(Q, "run-a", 300))!
      expect(first).toMatchObject({ queue: Q, run: "run-a", tip: null })
      expect(await m.b.lead(Q, "run-b", 60_000)).toBeUndefined()
      const second = await eventually(() => m.b.lead(Q, "run-b", 60_000))
      expect(second.epoch).toBeGreaterThan(first.epoch)
      // The stale lead writes nothing: not its build, not its tip.
      expect(await m.a.apply(first, [build(id, 0, "stale")], "stale-tip")).toBe(false)
      expect(await m.b.apply(second, [build(id, 0, "m1", [])], "tip-1")).toBe(true)
      await m.a.release(first) // a stale release lets nothing go
      expect(await m.a.lead(Q, "run-a", 60_000)).toBeUndefined()
      await m.b.release(second)
      expect(await m.a.lead(Q, "run-a", 60_000)).toMatchObject({ tip: "tip-1" })
      expect((await m.a.line(Q))[0]).toMatchObject({ gen: 1, base: "tip", merge: "m1", state: "ready", ref: `refs/flow/queue/x/${id}` })
    })

    test("a lead renews its lease while it works; a run proved dead lets go of its lead and its checks at once", async () => {
      await using m = await backend.open()
      const { id } = await m.a.submit(candidate("a"))
      const first = (await m.a.lead(Q, "run-a", 300))!
      for (let i = 0; i < 4; i++) {
        expect(await m.a.renewLead(first, 300)).toBe(true)
        await m.a.line(Q)
      }
      expect(await m.a.apply(first, [build(id, 0, "ma")])).toBe(true)
      await m.a.release(first)
      const dead = (await m.a.lead(Q, "run-dead", 60_000))!
      const claim = (await m.a.claimCheck(Q, "run-dead", 60_000))!
      expect(await m.b.lead(Q, "run-b", 60_000)).toBeUndefined()
      expect(await m.b.claimCheck(Q, "run-b", 60_000)).toBeUndefined()
      await m.b.freeRun("run-dead")
      expect(await m.a.renewLead(dead, 60_000)).toBe(false)
      expect(await m.b.lead(Q, "run-b", 60_000)).toMatchObject({ run: "run-b" })
      expect(await m.b.claimCheck(Q, "run-b", 60_000)).toMatchObject({ id, attempt: claim.attempt + 1 })
      expect(await m.a.checkDone(claim, { ok: true, seconds: 1 })).toBe(false)
    })

    test("a change decided on an older build leaves a rebuilt row alone; a rebuild counts the checks it throws away", async () => {
      await using m = await backend.open()
      const { id } = await m.a.submit(candidate("a"))
      const lead = (await m.a.lead(Q, "run-a", 60_000))!
      expect(await m.a.apply(lead, [build(id, 0, "m1")])).toBe(true)
      expect(await m.a.apply(lead, [{ id, gen: 0, state: "left", reason: "late" }])).toBe(true)
      expect((await m.a.line(Q))[0]).toMatchObject({ gen: 1, state: "ready", reason: null })
      const claim = (await m.b.claimCheck(Q, "run-b", 60_000))!
      expect(await m.a.apply(lead, [{ ...build(id, 1, "m2", ["x"]), thrown: 1, reason: "rebuilt on x" }])).toBe(true)
      expect((await m.a.line(Q))[0]).toMatchObject({
        gen: 2,
        merge: "m2",
        ahead: ["x"],
        state: "ready",
        reason: "rebuilt on x",
        checks: 1,
        thrown: 1,
        check_run: null,
      })
      // The check of the older build reports into nothing, and its heartbeat says so.
      expect(await m.b.renewCheck(claim, 60_000)).toBe(false)
      expect(await m.b.checkDone(claim, { ok: true, seconds: 1 })).toBe(false)
      const verdict = { ok: false, kind: "conflict", conflicts: ["a.txt"], reason: "merge conflict in a.txt" }
      expect(await m.a.apply(lead, [{ id, gen: 2, state: "left", reason: verdict.reason, verdict }])).toBe(true)
      expect((await m.a.ended(Q, "run-a"))[0]).toMatchObject({ state: "left", reason: "merge conflict in a.txt", verdict, landed_at: null })
    })

    test("a check is claimed once, in line order; its result counts only while its claim holds", async () => {
      await using m = await backend.open()
      const ids = [(await m.a.submit(candidate("a"))).id, (await m.a.submit(candidate("b"))).id, (await m.a.submit(candidate("c"))).id]
      const lead = (await m.a.lead(Q, "run-a", 60_000))!
      await m.a.apply(lead, [build(ids[0], 0, "ma"), build(ids[1], 0, "mb", ["a"])])
      const first = (await m.b.claimCheck(Q, "run-b", 60_000))!
      expect(first).toMatchObject({ id: ids[0], gen: 1, attempt: 1, run: "run-b", task_id: "a", merge: "ma", ahead: [] })
      const second = (await m.a.claimCheck(Q, "run-a", 60_000))!
      expect(second).toMatchObject({ id: ids[1], task_id: "b", merge: "mb", ahead: ["a"] })
      expect(await m.a.claimCheck(Q, "run-a", 60_000)).toBeUndefined() // c is not built: nothing to check
      expect(await m.b.renewCheck(first, 60_000)).toBe(true)
      expect(await m.a.checkDone({ ...first, run: "run-a" }, { ok: true, seconds: 1 })).toBe(false) // not its claim
      expect(await m.b.checkDone(first, { ok: true, seconds: 1.5 })).toBe(true)
      expect(await m.b.checkDone(first, { ok: false, seconds: 2 })).toBe(false) // recorded once
      const failure = { ok: false, kind: "check", reason: "the check failed (exit 1)", output: "boom", timedOut: false }
      expect(await m.a.checkDone(second, { ok: false, seconds: 0.5, reason: failure.reason, verdict: failure })).toBe(true)
      const line = await m.a.line(Q)
      expect(line.map((r) => [r.task_id, r.state, r.seconds, r.checks, r.check_run])).toEqual([
        ["a", "passed", 1.5, 1, "run-b"],
        ["b", "failed", 0.5, 1, "run-a"],
        ["c", "waiting", null, 0, null],
      ])
      expect(line[1]).toMatchObject({ reason: failure.reason, verdict: failure })
      if (backend.name === "postgres") expect(line.map((r) => r.check_machine)).toEqual(["m2", "m1", null])
    })

    test("a batch's covered candidates stay in line and are never claimed for a check: only its last one is", async () => {
      await using m = await backend.open()
      const a = await m.a.submit(candidate("a"))
      const b = await m.a.submit(candidate("b"))
      const lead = (await m.a.lead(Q, "run-a", 60_000))!
      const covered: QueueChange = { ...build(a.id, 0, "ma"), state: "covered", reason: "checked as one batch of 2 (a, b)" }
      expect(await m.a.apply(lead, [covered, build(b.id, 0, "batch", ["a"])], "tip")).toBe(true)
      await m.a.release(lead)
      expect((await m.b.line(Q)).map((r) => [r.task_id, r.state])).toEqual([
        ["a", "covered"],
        ["b", "ready"],
      ])
      expect(await m.b.claimCheck(Q, "run-b", 60_000)).toMatchObject({ id: b.id, task_id: "b", merge: "batch" })
      expect(await m.a.claimCheck(Q, "run-a", 60_000)).toBeUndefined()
    })

    test("a check whose lease lapsed is taken again with the next attempt: the first claim's heartbeat and result count for nothing", async () => {
      await using m = await backend.open()
      const { id } = await m.a.submit(candidate("a"))
      const lead = (await m.a.lead(Q, "run-a", 60_000))!
      await m.a.apply(lead, [build(id, 0, "ma")])
      const stale = (await m.b.claimCheck(Q, "run-b", 200))!
      expect(await m.a.claimCheck(Q, "run-a", 60_000)).toBeUndefined()
      const taken = await eventually(() => m.a.claimCheck(Q, "run-a", 60_000))
      expect(taken).toMatchObject({ id, gen: 1, attempt: stale.attempt + 1, run: "run-a" })
      expect(await m.b.renewCheck(stale, 60_000)).toBe(false)
      expect(await m.b.checkDone(stale, { ok: true, seconds: 9 })).toBe(false)
      expect(await m.a.checkDone(taken, { ok: true, seconds: 1 })).toBe(true)
      expect((await m.a.line(Q))[0]).toMatchObject({ state: "passed", seconds: 1, checks: 2, thrown: 1, check_run: "run-a" })
    })

    test("a result that comes after its lease lapsed is refused even when nobody took the check over", async () => {
      await using m = await backend.open()
      const { id } = await m.a.submit(candidate("a"))
      const lead = (await m.a.lead(Q, "run-a", 60_000))!
      await m.a.apply(lead, [build(id, 0, "ma")])
      const claim = (await m.b.claimCheck(Q, "run-b", 100))!
      // A lead of another queue taken after the claim, for as long: once it can be taken again, the claim lapsed too.
      await m.a.lead("probe", "p1", 100)
      await eventually(() => m.a.lead("probe", "p2", 60_000))
      expect(await m.b.checkDone(claim, { ok: true, seconds: 1 })).toBe(false)
      expect((await m.a.line(Q))[0]).toMatchObject({ state: "checking" })
    })

    test("machines claiming at once never take one check twice", async () => {
      await using m = await backend.open()
      const ids: number[] = []
      for (let i = 0; i < 12; i++) ids.push((await m.a.submit(candidate(`t${i}`))).id)
      const lead = (await m.a.lead(Q, "run-a", 60_000))!
      await m.a.apply(
        lead,
        ids.map((id, i) => build(id, 0, `m${i}`)),
      )
      const claimer = async (q: QueueRows, run: string) => {
        const got: number[] = []
        for (let c = await q.claimCheck(Q, run, 60_000); c; c = await q.claimCheck(Q, run, 60_000)) got.push(c.id)
        return got
      }
      const all = (await Promise.all([claimer(m.a, "r1"), claimer(m.b, "r2"), claimer(m.a, "r3"), claimer(m.b, "r4")])).flat()
      expect(all.sort((x, y) => x - y)).toEqual(ids)
    })
  })
}
