// The database lost mid-run (issue 22, docs/FLEET.md "When something goes away"): a shared project's run on a
// PostgreSQL server of the test's own, which the test stops (`pg_ctl stop -m fast`: every session ended, the
// run's lock and a landing's lock with them) and starts again on the same data and socket. Two gates make the
// moment exact: one task's agent is at work (its script waits for a file) and another task's merge is being
// checked under the landing lock (its `verify` waits for one) when the database goes. The agent finishes while
// it is away, the landing finds it away right after its check; both are written and landed once it is back.
// The run ends with every task merged once into the remote's main and its history whole; it says once that the
// database is away, without the password of its URL, and leaves no process behind.
import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { entries, fleet, graph, mergesPerTask, RUN, statuses, taskIds } from "./fleet-helpers"
import { background, flow, leaks, processesIn, until } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, ownServer, PASSWORD } from "./postgres"

const IDS = taskIds(12)
const count = (text: string, part: string) => text.split(part).length - 1

/** Shell lines that, in `task`, say `mark` and then wait for `go` (files in $SIGNALS). */
const gate = (task: string, mark: string, go: string) =>
  `if [ "$FLOW_TASK_ID" = ${task} ] && [ ! -e "$SIGNALS/${go}" ]; then touch "$SIGNALS/${mark}"; while [ ! -e "$SIGNALS/${go}" ]; do sleep 0.05; done; fi`

/** What a failed run left: each task not done, as `flow show` tells it (its notes say why). */
async function notDone(machine: { path: string; env: Record<string, string> }): Promise<string> {
  const open = Object.entries(await statuses(machine)).filter(([, status]) => status !== "done")
  return (await Promise.all(open.map(async ([id]) => (await flow(machine.path, ["show", id], { env: machine.env })).stdout))).join("\n")
}

describe.skipIf(!HAVE_POSTGRES)("the database away mid-run", () => {
  test("stopped for less than the lease while an agent works and a merge is checked: both go on once it is back, every task merged once, nothing ran twice", async () => {
    await using srv = await ownServer()
    await using db = await freshDatabase(srv)
    const withPassword = db.passwordUrl.replace("flow_pw@", `flow_pw:${PASSWORD}@`)
    // t02 and t06 both wait for t01 only: the two agents take them together.
    await using f = await fleet(
      withPassword,
      (log) => graph(12, 5, log, 0.3, { hook: gate("t02", "working", "release") }),
      `lease: 20s\nverify:\n  command: ${JSON.stringify(gate("t06", "checking", "release"))}\n`,
    )
    const m1 = await f.clone("m1")
    const signals = join(f.root, "signals")
    mkdirSync(signals)
    const env = { ...m1.env, FLOW_DATABASE_URL: withPassword, SIGNALS: signals }
    const run = background(m1.path, RUN, env)
    const gated = () => existsSync(join(signals, "working")) && existsSync(join(signals, "checking"))
    await until(gated, 120_000)
    expect({ gated: gated(), output: gated() ? "" : `${run.output()}\n${await notDone({ path: m1.path, env })}` }).toEqual({ gated: true, output: "" })
    srv.stop()
    writeFileSync(join(signals, "release"), "")
    // The agent at work goes on and finishes while the database is away; the run says it is away, and that it
    // cannot renew its claims (a renewal every third of the lease).
    await until(() => entries(f.log).some((e) => e.task === "t02"), 30_000)
    await run.waitFor("cannot renew this run's claims")
    const whileAway = run.output()
    srv.start()
    const done = await run.done()
    const output = `${done.stdout}${done.stderr}`
    if (done.code !== 0) console.error(output, await notDone({ path: m1.path, env }))
    expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: "" })

    expect(
      entries(f.log)
        .map((e) => e.task)
        .sort(),
    ).toEqual(IDS) // each task's work ran once
    expect(entries(f.log).every((e) => e.attempt === 1)).toBe(true) // no claim lapsed
    const merges = await mergesPerTask(f.remote)
    expect(IDS.filter((id) => merges.get(id) !== 1)).toEqual([]) // merged once each, into the remote's main
    expect(await statuses({ path: m1.path, env })).toEqual(Object.fromEntries(IDS.map((id) => [id, "done"])))
    // The run's history lost nothing either: each agent's exit recorded once, the one in the outage included.
    const exits = await db.sql`SELECT task_id, count(*)::int AS n FROM events WHERE project = 'shop' AND kind = 'agent.exit' GROUP BY task_id ORDER BY task_id`
    expect(exits).toEqual(IDS.map((id) => ({ task_id: id, n: 1 })))
    // Said once, by its URL without the password (in no output, in no file of the clone: the run's log is
    // there), and said when it is back.
    expect(leaks(m1.path, [done], PASSWORD)).toEqual([])
    expect(count(whileAway, "cannot reach the database at")).toBe(1)
    expect(count(output, "cannot reach the database at")).toBe(1)
    expect(output).toContain(`cannot reach the database at ${db.passwordUrl}: `)
    expect(output).toContain("the database answers again")
    expect(processesIn(f.root)).toEqual([])
  }, 240_000)
})
