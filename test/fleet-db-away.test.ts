// The database lost mid-run (issue 22, docs/FLEET.md "The database away mid-run"): a shared project's run on a
// PostgreSQL server of the test's own, which the test stops (`pg_ctl stop -m fast`: every session ended, the
// run's lock and a landing's lock with them) and starts again on the same data and socket. Two gates make the
// moment exact: one task's agent is at work (its script waits for a file) and another task's merge is being
// checked under the landing lock (its `verify` waits for one) when the database goes.
// - Down for less than the lease: the agent finishes while it is away, the landing finds it away right after
//   its check; both are written and landed once it is back. The run ends with every task merged once into the
//   remote's main and its history whole; it says once that the database is away, without the password of its
//   URL, and leaves no process behind.
// - Down for longer than the lease, two machines at work: claims lapse and are taken over; each task still
//   lands once, with its newest attempt's work.
// - Stopped by a person while it is away: the run ends as stopped, nothing left running; the next run, once
//   the database is back, lands every task once.
import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { entries, fleet, graph, mergesPerTask, RUN, statuses, taskIds } from "./fleet-helpers"
import { background, flow, git, leaks, processesIn, until } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, ownServer, PASSWORD } from "./postgres"

const IDS = taskIds(12)
const ALL_DONE = Object.fromEntries(IDS.map((id) => [id, "done"]))
const count = (text: string, part: string) => text.split(part).length - 1

/** Shell lines that, in `task`, say `mark` and then wait for `go` (files in $SIGNALS). */
const gate = (task: string, mark: string, go: string) =>
  `if [ "$FLOW_TASK_ID" = ${task} ] && [ ! -e "$SIGNALS/${go}" ]; then touch "$SIGNALS/${mark}"; while [ ! -e "$SIGNALS/${go}" ]; do sleep 0.05; done; fi`

type Machine = { path: string; env: Record<string, string> }

/** What a failed run left: each task not done, as `flow show` tells it (its notes say why). */
async function notDone(machine: Machine): Promise<string> {
  const open = Object.entries(await statuses(machine)).filter(([, status]) => status !== "done")
  return (await Promise.all(open.map(async ([id]) => (await flow(machine.path, ["show", id], { env: machine.env })).stdout))).join("\n")
}

/**
 * A 12-task project shared on a server of its own (`password`: as the role that needs one, given in
 * FLOW_DATABASE_URL), `flow run` with two agents on each of `names`, and the moment the database is to go:
 * t02's agent at work and t03's merge being checked. Both wait for t01 only, and every other task waits for
 * one of them: nothing else is under way or may start. `release` lets both go on.
 */
async function stage(lease: string, names: string[], password = false) {
  const srv = await ownServer()
  const db = await freshDatabase(srv)
  const url = password ? db.passwordUrl.replace("flow_pw@", `flow_pw:${PASSWORD}@`) : db.url
  const f = await fleet(
    url,
    (log) => graph(12, 3, log, 0.3, { hook: gate("t02", "working", "release") }),
    `lease: ${lease}\nverify:\n  command: ${JSON.stringify(gate("t03", "checking", "release"))}\n`,
  )
  const signals = join(f.root, "signals")
  mkdirSync(signals)
  const machines: Machine[] = await Promise.all(
    names.map(async (name) => {
      const m = await f.clone(name)
      return { path: m.path, env: { ...m.env, SIGNALS: signals, ...(password ? { FLOW_DATABASE_URL: url } : {}) } }
    }),
  )
  const runs = machines.map((m) => background(m.path, RUN, m.env))
  const gated = () => existsSync(join(signals, "working")) && existsSync(join(signals, "checking"))
  await until(gated, 120_000)
  expect({ gated: gated(), output: gated() ? "" : runs.map((r) => r.output()).join("\n") }).toEqual({ gated: true, output: "" })
  return {
    srv,
    db,
    f,
    machines,
    runs,
    release: () => writeFileSync(join(signals, "release"), ""),
    [Symbol.asyncDispose]: async () => {
      await f[Symbol.asyncDispose]()
      await db[Symbol.asyncDispose]()
      await srv[Symbol.asyncDispose]()
    },
  }
}

/** Each run's end: exit 0, nothing on stderr (a run that failed says where it was and why). */
async function finished(runs: ReturnType<typeof background>[], machines: Machine[]) {
  const done = await Promise.all(runs.map((r) => r.done()))
  for (const [i, d] of done.entries()) {
    if (d.code !== 0) console.error(`${machines[i].env.FLOW_MACHINE}:\n${d.stdout}${d.stderr}`, await notDone(machines[i]))
    expect({ code: d.code, stderr: d.stderr }).toEqual({ code: 0, stderr: "" })
  }
  return done
}

describe.skipIf(!HAVE_POSTGRES)("the database away mid-run", () => {
  test("stopped for less than the lease while an agent works and a merge is checked: both go on once it is back, every task merged once, nothing ran twice", async () => {
    await using s = await stage("20s", ["m1"], true)
    const [m1] = s.machines
    const [run] = s.runs
    s.srv.stop()
    s.release()
    // The agent at work goes on and finishes while the database is away; the run says it is away, and that it
    // cannot renew its claims (a renewal every third of the lease).
    await until(() => entries(s.f.log).some((e) => e.task === "t02"), 30_000)
    await run.waitFor("cannot renew this run's claims")
    // Said by whichever part of the run meets the outage first (the claims' renewal, the merge queue's look at
    // its line, the run's read of the graph): in either order.
    await run.waitFor("cannot reach the database at")
    const whileAway = run.output()
    s.srv.start()
    const [done] = await finished(s.runs, s.machines)
    const output = `${done.stdout}${done.stderr}`

    expect(
      entries(s.f.log)
        .map((e) => e.task)
        .sort(),
    ).toEqual(IDS) // each task's work ran once
    expect(entries(s.f.log).every((e) => e.attempt === 1)).toBe(true) // no claim lapsed
    const merges = await mergesPerTask(s.f.remote)
    expect(IDS.filter((id) => merges.get(id) !== 1)).toEqual([]) // merged once each, into the remote's main
    expect(await statuses(m1)).toEqual(ALL_DONE)
    // The run's history lost nothing either: each agent's exit recorded once, the one in the outage included.
    const exits = await s.db
      .sql`SELECT task_id, count(*)::int AS n FROM events WHERE project = 'shop' AND kind = 'agent.exit' GROUP BY task_id ORDER BY task_id`
    expect(exits).toEqual(IDS.map((id) => ({ task_id: id, n: 1 })))
    // Said once, by its URL without the password (in no output, in no file of the clone: the run's log is
    // there), and said when it is back.
    expect(leaks(m1.path, [done], PASSWORD)).toEqual([])
    expect(count(whileAway, "cannot reach the database at")).toBe(1)
    expect(count(output, "cannot reach the database at")).toBe(1)
    expect(output).toContain(`cannot reach the database at ${s.db.passwordUrl}: `)
    expect(output).toContain("the database answers again")
    expect(processesIn(s.f.root)).toEqual([])
  }, 240_000)

  test("stopped for longer than the lease, two machines at work: the claims lapse, each task still lands once, the newest attempt's work", async () => {
    await using s = await stage("3s", ["m1", "m2"])
    s.srv.stop()
    s.release()
    await until(() => entries(s.f.log).some((e) => e.task === "t02"), 30_000)
    await Promise.all(s.runs.map((r) => r.waitFor("cannot renew this run's claims")))
    // The time is what the test is about: every claim's lease (3 s, on the database's clock) lapses meanwhile.
    await Bun.sleep(8_000)
    s.srv.start()
    await finished(s.runs, s.machines)

    const merges = await mergesPerTask(s.f.remote)
    expect(IDS.filter((id) => merges.get(id) !== 1)).toEqual([]) // every task merged, once
    const ran = entries(s.f.log)
    for (const id of IDS) {
      const mine = ran.filter((e) => e.task === id)
      const last = Math.max(...mine.map((e) => e.attempt))
      // What landed is the newest attempt's work: an attempt whose claim lapsed lands nothing.
      expect(await git(s.f.remote, ["show", `main:work/${id}.txt`])).toBe(`${id} attempt ${last} on ${mine.find((e) => e.attempt === last)!.machine}\n`)
      // Only the two tasks under way as the database went ran again (their claims lapsed meanwhile).
      if (mine.length > 1) expect(["t02", "t03"]).toContain(id)
    }
    expect(await statuses(s.machines[0])).toEqual(ALL_DONE)
    expect(processesIn(s.f.root)).toEqual([])
  }, 240_000)

  test("stopped by a person while the database is away: the run ends at once and leaves nothing running; once it is back, the next run lands every task once", async () => {
    await using s = await stage("5s", ["m1"])
    const [m1] = s.machines
    const [run] = s.runs
    s.srv.stop()
    await run.waitFor("starting nothing new")
    run.proc.kill("SIGTERM") // as Ctrl-C
    const stopped = await run.done()
    // Stopped as a person stops it (exit 130), not failed on the database it could not reach on its way out.
    expect({ code: stopped.code, stderr: stopped.stderr }).toEqual({
      code: 130,
      stderr: "stopping: agents are being stopped; their tasks will be resumed by the next 'flow run' (Ctrl-C again to quit at once)\n",
    })
    expect(stopped.stdout).toMatch(/ run: stopped after .*\n$/)
    expect(processesIn(s.f.root)).toEqual([])
    s.release()
    s.srv.start()
    // The stopped run gave nothing back (the database was away): its claims lapse after the lease, then the
    // next run takes them.
    await finished([background(m1.path, RUN, m1.env)], [m1])
    // Each task's work ran to its end once: t02's agent was stopped before its end, t03's work was landed as it was.
    expect(
      entries(s.f.log)
        .map((e) => e.task)
        .sort(),
    ).toEqual(IDS)
    const merges = await mergesPerTask(s.f.remote)
    expect(IDS.filter((id) => merges.get(id) !== 1)).toEqual([])
    expect(await statuses(m1)).toEqual(ALL_DONE)
    expect(processesIn(s.f.root)).toEqual([])
  }, 240_000)
})
