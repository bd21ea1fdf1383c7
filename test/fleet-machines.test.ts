// Many machines, one graph (issue 22, docs/FLEET.md): clones of one bare repository (the shared remote), each
// with its own HOME and .flow, run `flow run` at once on one shared project. A 40-task random graph of script
// agents, two agents per machine. Every task's work runs once and is merged once into the remote's main; a
// question asked on one machine is answered from another. Then the same with one machine killed outright and
// another stopped (SIGSTOP) for longer than the lease and continued: the graph finishes, every task merged
// once, and nothing the stopped machine did after it woke lands.
import { describe, expect, test } from "bun:test"
import { entries, fleet, graph, mergesPerTask, RUN, statuses, taskIds } from "./fleet-helpers"
import { background, flow, git } from "./helpers"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"

const IDS = taskIds(40)

describe.skipIf(!HAVE_POSTGRES)("flow run on many machines", () => {
  test("two machines share a 40-task graph: each task's work ran once and merged once into the remote's main; a question answered from another machine", async () => {
    await using db = await freshDatabase()
    await using f = await fleet(db.url, (log) => graph(40, 7, log, 0.2, { askAt: 5 }))
    const m1 = await f.clone("m1")
    const m2 = await f.clone("m2")
    const person = await f.clone("person")
    const r1 = background(m1.path, RUN, m1.env)
    const r2 = background(m2.path, RUN, m2.env)
    // The question reaches the database from whichever machine took the task; a person answers elsewhere.
    let pending: { id: string; task_id: string }[] = []
    while (pending.length === 0) {
      const listed = await flow(person.path, ["questions", "--json"], { env: person.env })
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: "" })
      pending = JSON.parse(listed.stdout).questions
      if (pending.length === 0) await Bun.sleep(200)
    }
    expect(pending).toMatchObject([{ id: "q-1", task_id: "t06" }])
    expect((await flow(person.path, ["answer", "1", "8080"], { env: person.env })).code).toBe(0)
    const [d1, d2] = await Promise.all([r1.done(), r2.done()])
    expect({ code: d1.code, stderr: d1.stderr }).toEqual({ code: 0, stderr: "" })
    expect({ code: d2.code, stderr: d2.stderr }).toEqual({ code: 0, stderr: "" })

    const ran = entries(f.log)
    expect(ran.map((e) => e.task).sort()).toEqual(IDS) // each task's work ran once
    expect(new Set(ran.map((e) => e.machine))).toEqual(new Set(["m1", "m2"])) // both machines worked
    const merges = await mergesPerTask(f.remote)
    expect(IDS.filter((id) => merges.get(id) !== 1)).toEqual([]) // merged once each, into the remote's main
    for (const id of IDS) expect(await git(f.remote, ["show", `main:work/${id}.txt`])).toContain(`${id} attempt 1`)
    expect(await git(f.remote, ["show", "main:work/port.txt"])).toBe("8080\n")
    expect(await statuses(person)).toEqual(Object.fromEntries(IDS.map((id) => [id, "done"])))
  }, 240_000)

  test("one machine killed outright, another stopped past its lease and continued: the graph finishes, each task merged once, nothing of the stale attempts lands", async () => {
    await using db = await freshDatabase()
    await using f = await fleet(db.url, (log) => graph(40, 11, log, 0.6), "lease: 2s\n")
    const machines = await Promise.all(["m1", "m2", "m3"].map((m) => f.clone(m)))
    // setsid: each run leads a process group of its own, its agents in it, as on a machine of its own.
    const runs = machines.map((m) => background(m.path, RUN, m.env, ["setsid"]))
    const until = async (n: number) => {
      while (entries(f.log).length < n) await Bun.sleep(100)
    }
    await until(6)
    process.kill(-runs[0].proc.pid, "SIGKILL")
    await until(14)
    process.kill(-runs[1].proc.pid, "SIGSTOP")
    await Bun.sleep(6_000) // three leases: the other machines take its tasks over meanwhile
    process.kill(-runs[1].proc.pid, "SIGCONT")
    // A run that never ends says where each machine was (the test's timeout alone would not).
    const hung = setTimeout(() => console.error(runs.map((r, i) => `m${i + 1}:\n${r.output()}`).join("\n")), 200_000)
    const [d2, d3] = await Promise.all([runs[1].done(), runs[2].done()])
    clearTimeout(hung)
    await runs[0].done()
    expect({ code: d3.code, stderr: d3.stderr }).toEqual({ code: 0, stderr: "" })
    expect({ code: d2.code, stderr: d2.stderr }).toEqual({ code: 0, stderr: "" })

    const merges = await mergesPerTask(f.remote)
    expect(IDS.filter((id) => merges.get(id) !== 1)).toEqual([]) // every task merged, once
    const ran = entries(f.log)
    for (const id of IDS) {
      const mine = ran.filter((e) => e.task === id)
      const last = Math.max(...mine.map((e) => e.attempt))
      // What landed is the newest attempt's work: an attempt taken over lands nothing, even when it finished later.
      expect(await git(f.remote, ["show", `main:work/${id}.txt`])).toBe(`${id} attempt ${last} on ${mine.find((e) => e.attempt === last)!.machine}\n`)
      // A task ran again only after the machine of its earlier attempt was killed or stopped.
      for (const e of mine.filter((e) => e.attempt !== last)) expect(["m1", "m2"]).toContain(e.machine)
    }
    expect(await statuses(machines[2])).toEqual(Object.fromEntries(IDS.map((id) => [id, "done"])))
  }, 300_000)
})
