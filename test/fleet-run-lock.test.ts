// Many live `flow run`s per shared project, across clones and machines (docs/FLEET.md, "Many runs per shared
// project"): two clones of one shared project, each with its own .flow (so its own run lock), stand for two
// machines (FLOW_MACHINE names them). Both clones' runs live at once; every view, from either clone, lists
// both with their machines and agents; `flow unshare` is refused naming both, and a run is refused while an
// unshare holds the project. Each clone's flow.yaml (a local edit, as a machine's own) gives its run one agent,
// and each task is pinned to one of them by agent_name, so which run takes which task is fixed.
import { describe, expect, test } from "bun:test"
import { appendFileSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { background, bareOrigin, flow, git, ROOT, tasksYaml, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, type TestDatabase } from "./postgres"

/** Tasks `one` (for m1-agent) and `two` (for m2-agent), each saying it started, then waiting until the test lets it finish. */
function holdingGraph(signals: string): string {
  const go = join(signals, "go")
  const task = (id: string, agent: string) => ({
    id,
    title: id,
    status: "ready_for_agent",
    agent_name: agent,
    instructions: `\`\`\`sh\ntouch '${join(signals, id)}'\nwhile [ -d '${signals}' ] && [ ! -e '${go}' ]; do sleep 0.05; done\necho ${id} > ${id}.txt\n\`\`\``,
  })
  return tasksYaml([task("one", "m1-agent"), task("two", "m2-agent")])
}

const RUN = ["run", "--headless"]
const LAPTOP_1 = { FLOW_MACHINE: "laptop-1" }
const LAPTOP_2 = { FLOW_MACHINE: "laptop-2" }
/** The first key of flow's run locks: 'flor' in ASCII. */
const RUN_LOCK_CLASS = 0x666c6f72
const SINCE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/**
 * Two clones of one project shared as 'shop': `first` (laptop-1, agent m1-agent) shared it, `second` (laptop-2,
 * m2-agent) cloned it. By default the agents are `script` agents on the holding graph; `opts` gives another
 * graph, the agents' CLI, more of each clone's flow.yaml and more env for their runs.
 */
async function twoClones(db: TestDatabase, opts: { tasks?: string; cli?: string; flowYaml?: string; env?: Record<string, string> } = {}) {
  const signals = mkdtempSync(join(tmpdir(), "flow-signals-"))
  const first = await tempRepo({ "tasks.yaml": opts.tasks ?? holdingGraph(signals) })
  expect((await flow(first.path, ["share", db.url, "--project", "shop"])).code).toBe(0)
  await git(first.path, ["add", "flow.yaml"])
  await git(first.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-q", "-m", "share the project"])
  const second = mkdtempSync(join(tmpdir(), "flow-clone-"))
  await git(tmpdir(), ["clone", "-q", await bareOrigin(first.path), second])
  const cli = opts.cli ?? "script"
  appendFileSync(join(first.path, "flow.yaml"), `agents:\n  - {name: m1-agent, cli: ${cli}}\n${opts.flowYaml ?? ""}`)
  appendFileSync(join(second, "flow.yaml"), `agents:\n  - {name: m2-agent, cli: ${cli}}\n${opts.flowYaml ?? ""}`)
  const runs: ReturnType<typeof background>[] = []
  const start = (dir: string, env: Record<string, string>) => {
    const run = background(dir, RUN, { ...env, ...opts.env })
    runs.push(run)
    return run
  }
  return {
    first: first.path,
    second,
    /** `flow run` in the first clone, on machine laptop-1 */
    runFirst: () => start(first.path, LAPTOP_1),
    /** `flow run` in the second clone, on machine laptop-2 */
    runSecond: () => start(second, LAPTOP_2),
    /** whether task `id`'s agent started */
    started: (id: string) => () => existsSync(join(signals, id)),
    /** both clones' runs, each once its task's agent started: both live together */
    runBoth: async () => {
      const one = start(first.path, LAPTOP_1)
      await waitUntil(() => existsSync(join(signals, "one")))
      const two = start(second, LAPTOP_2)
      await waitUntil(() => existsSync(join(signals, "two")))
      return [one, two] as const
    },
    go: () => writeFileSync(join(signals, "go"), ""),
    /** `flow <args>` in a clone, on its machine; exit 0 and nothing on stderr expected; its stdout */
    on: async (clone: "first" | "second", args: string[]) => {
      const r = await flow(clone === "first" ? first.path : second, args, { env: clone === "first" ? LAPTOP_1 : LAPTOP_2 })
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
      return r.stdout
    },
    [Symbol.asyncDispose]: async () => {
      // A failed test's run is stopped; an agent left behind by a killed run sees its folder gone and ends.
      for (const run of runs) run.proc.kill("SIGKILL")
      await Promise.all(runs.map((r) => r.proc.exited))
      rmSync(signals, { recursive: true, force: true })
      await first[Symbol.asyncDispose]()
      rmSync(second, { recursive: true, force: true })
    },
  }
}

async function waitUntil(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await Bun.sleep(50)
}

/** The sessions holding one of flow's run locks in the test's database. */
async function runLockSessions(db: TestDatabase): Promise<number> {
  const [{ n }] = await db.sql`
    SELECT count(*)::int AS n FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND classid::bigint = ${RUN_LOCK_CLASS}
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`
  return n
}

/** The project's lock number (made as a first lock would make it). */
async function lockIdOf(db: TestDatabase): Promise<number> {
  await db.sql`INSERT INTO run_locks (project) VALUES ('shop') ON CONFLICT (project) DO NOTHING`
  const [{ lock_id }] = await db.sql`SELECT lock_id FROM run_locks WHERE project = 'shop'`
  return lock_id
}

/** A run exits 0 when every task is done, 4 when it ended with the other machine's task not done yet. */
const ENDED = [0, 4]

describe.skipIf(!HAVE_POSTGRES)("many flow runs per shared project", () => {
  test("two machines' runs live together: every view from either clone lists both with their agents, and unshare is refused naming both", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const [first, second] = await clones.runBoth()
    expect(await runLockSessions(db)).toBe(2)

    const live = [
      { pid: first.proc.pid, since: expect.stringMatching(SINCE), machine: "laptop-1" },
      { pid: second.proc.pid, since: expect.stringMatching(SINCE), machine: "laptop-2" },
    ]
    for (const clone of ["first", "second"] as const) {
      const agents = JSON.parse(await clones.on(clone, ["agents", "--json"]))
      expect(agents.runs).toEqual(live)
      expect(agents.run).toEqual(live[0])
      expect(agents.agents).toMatchObject([
        ...(clone === "first" ? [] : [{ name: "m2-agent", machine: "laptop-2", working: true, current: { id: "two", status: "in_progress" } }]),
        { name: "m1-agent", machine: "laptop-1", working: true, current: { id: "one", status: "in_progress" } },
        ...(clone === "first" ? [{ name: "m2-agent", machine: "laptop-2", working: true, current: { id: "two", status: "in_progress" } }] : []),
      ])
      const dashboard = JSON.parse(await clones.on(clone, ["dashboard", "--json"]))
      expect(dashboard.runs).toEqual(live)
      expect(dashboard.run).toEqual(live[0])
      expect(dashboard.running).toMatchObject([
        { id: "one", agent: "m1-agent", live: true },
        { id: "two", agent: "m2-agent", live: true },
      ])
      expect(JSON.parse(await clones.on(clone, ["show", "one", "--json"])).worked_by).toEqual({
        agent: "m1-agent",
        machine: "laptop-1",
        state: "working",
        ended_at: null,
        ended_status: null,
      })
    }
    const agentsText = await clones.on("second", ["agents"])
    // A run's start is the database's instant; shown with its date when that is not the machine's today (the test
    // servers run on the real clock, CI's unit pass a year ahead: test/postgres.ts).
    expect(agentsText).toMatch(
      new RegExp(`^Runs: live on laptop-1 \\(pid ${first.proc.pid}, since [^)]+\\), laptop-2 \\(pid ${second.proc.pid}, since [^)]+\\)\\n`),
    )
    expect(agentsText).toContain("\n  m1-agent (script) on laptop-1\n    Current: one (in_progress)\n")
    expect(agentsText).toContain("\n  m2-agent (script) on laptop-2\n    Current: two (in_progress)\n")
    expect(await clones.on("first", ["dashboard", "--once"])).toContain(`flow runs live on laptop-1 (pid ${first.proc.pid}), laptop-2 (pid ${second.proc.pid})`)
    expect(await clones.on("first", ["show", "two"])).toContain("Worked by: m2-agent on laptop-2 (working on it now)\n")
    const list = await clones.on("second", ["list"])
    expect(list).toContain("(working: m1-agent on laptop-1)")
    expect(list).toContain("(working: m2-agent on laptop-2)")

    // The tasks and state must not move under any run, on this machine or another.
    const unshare = await flow(clones.second, ["unshare"], { env: LAPTOP_2 })
    expect(unshare.code).toBe(1)
    const since = "\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC"
    expect(unshare.stderr).toMatch(
      new RegExp(
        `^error: 2 'flow run's hold shared project 'shop' \\(machine laptop-1, pid ${first.proc.pid}, since ${since}; machine laptop-2, pid ${second.proc.pid}, since ${since}\\): its tasks and state must not move under it\\n` +
          "hint: stop them on laptop-1, laptop-2 \\(q in its screen, or Ctrl-C\\), then run 'flow unshare' again\\n$",
      ),
    )
    expect(await Bun.file(join(clones.second, "flow.yaml")).text()).toStartWith("state: ")

    clones.go()
    expect(ENDED).toContain((await first.done()).code)
    expect(ENDED).toContain((await second.done()).code)
    expect(await runLockSessions(db)).toBe(0)
    const after = JSON.parse(await clones.on("second", ["agents", "--json"]))
    expect(after.runs).toEqual([])
    expect(after.run).toBeNull()
    expect(after.agents).toMatchObject([
      { name: "m2-agent", machine: "laptop-2", working: false, current: null },
      { name: "m1-agent", machine: "laptop-1", working: false, current: null },
    ])
    expect(await clones.on("second", ["agents"])).toStartWith("Runs: none live\nAgents:\n  m2-agent (script) on laptop-2\n")
    expect(JSON.parse(await clones.on("first", ["dashboard", "--json"]))).toMatchObject({ run: null, runs: [] })
    expect(JSON.parse(await clones.on("first", ["show", "two", "--json"])).worked_by).toMatchObject({
      agent: "m2-agent",
      machine: "laptop-2",
      state: "ended",
      ended_status: "done",
    })
    // No run left: unshare goes through.
    expect((await flow(clones.second, ["unshare"], { env: LAPTOP_2 })).code).toBe(0)
  })

  test("a run is refused while an unshare holds the project alone, and starts once it let go", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const lockId = await lockIdOf(db)
    const unshare = await db.sql.reserve()
    try {
      await unshare`SELECT pg_advisory_lock(${RUN_LOCK_CLASS}, ${lockId})`
      const unrecorded = await clones.runFirst().done()
      expect(unrecorded.code).toBe(1)
      expect(unrecorded.stderr).toBe(
        "error: another flow process holds the run lock of shared project 'shop' (who, it has not recorded yet): no run starts while the project moves out of the database\n" +
          "hint: wait for it to finish; then 'git pull' and see whether flow.yaml still shares the project\n",
      )
      // What `flow unshare` writes of itself while it holds the lock.
      await unshare`UPDATE run_locks SET command = 'flow unshare', machine = 'laptop-2', pid = 4242, backend_pid = pg_backend_pid(), since = now() WHERE project = 'shop'`
      const refused = await clones.runFirst().done()
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(
        /^error: 'flow unshare' holds shared project 'shop' \(machine laptop-2, pid 4242, since [^)]+ UTC\): no run starts while the project moves out of the database\nhint: wait for it to finish on laptop-2; /,
      )
      // Refused before doing anything: no worktree, no run log.
      expect((await git(clones.first, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
      expect(existsSync(join(clones.first, ".flow", "runs"))).toBe(false)
      // Reading the plan takes no lock.
      expect((await flow(clones.first, [...RUN, "--dry-run"], { env: LAPTOP_1 })).code).toBe(0)
    } finally {
      await unshare.close()
    }
    clones.go()
    const run = await clones.runFirst().done()
    expect(ENDED).toContain(run.code)
    expect(run.stderr).toBe("")
  })

  test("a run killed outright (kill -9) frees its share while the other lives on; its row goes when a run next takes the lock", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const [first, second] = await clones.runBoth()
    first.proc.kill("SIGKILL")
    await first.proc.exited
    // The server ends the dead run's session once its connection closes, and its advisory lock with it.
    await waitUntil(async () => (await runLockSessions(db)) === 1)
    const agents = JSON.parse(await clones.on("second", ["agents", "--json"]))
    expect(agents.runs).toEqual([{ pid: second.proc.pid, since: expect.stringMatching(SINCE), machine: "laptop-2" }])
    expect(agents.agents).toMatchObject([
      { name: "m2-agent", machine: "laptop-2", working: true },
      { name: "m1-agent", machine: "laptop-1", working: false, current: { id: "one" } },
    ])
    expect(JSON.parse(await clones.on("second", ["show", "one", "--json"])).worked_by).toMatchObject({ agent: "m1-agent", state: "stopped" })
    // The dead run's row stays, counting for nothing, until a run takes the lock.
    expect(await db.sql`SELECT machine, pid FROM live_runs ORDER BY since`).toEqual([
      { machine: "laptop-1", pid: first.proc.pid },
      { machine: "laptop-2", pid: second.proc.pid },
    ])

    const again = clones.runFirst()
    await waitUntil(async () => (await runLockSessions(db)) === 2)
    // The lock is taken before the row is written (a holder not recorded yet): wait for this machine's one
    // row to be the new run's, the dead run's gone.
    await waitUntil(async () => {
      const mine = await db.sql`SELECT pid FROM live_runs WHERE machine = 'laptop-1'`
      return mine.length === 1 && mine[0].pid === again.proc.pid
    })
    expect(await db.sql`SELECT machine, pid FROM live_runs ORDER BY since`).toEqual([
      { machine: "laptop-2", pid: second.proc.pid },
      { machine: "laptop-1", pid: again.proc.pid },
    ])
    clones.go()
    expect(ENDED).toContain((await again.done()).code)
    // A run stopped with SIGTERM lets go of its share too.
    second.proc.kill("SIGTERM")
    expect([0, 4, 130]).toContain((await second.done()).code)
    expect(await runLockSessions(db)).toBe(0)
    expect(JSON.parse(await clones.on("first", ["show", "one", "--json"])).task.status).toBe("done")
  })

  test("a run whose connection to the database closed takes its share again, as the same run since the same time", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started("one"))
    const [before] = await db.sql`SELECT backend_pid, since FROM live_runs WHERE project = 'shop'`
    await db.sql`SELECT pg_terminate_backend(${before.backend_pid})`
    await waitUntil(async () => {
      const [row] = await db.sql`SELECT backend_pid FROM live_runs WHERE project = 'shop'`
      return row.backend_pid !== before.backend_pid && (await runLockSessions(db)) === 1
    })
    const [after] = await db.sql`SELECT since, count(*) OVER ()::int AS rows FROM live_runs WHERE project = 'shop'`
    expect(after).toEqual({ since: before.since, rows: 1 })
    // Still live, its agent still working: the run is the one that took the lock first.
    const agents = JSON.parse(await clones.on("second", ["agents", "--json"]))
    expect(agents.runs).toMatchObject([{ pid: first.proc.pid, machine: "laptop-1" }])
    expect(agents.agents).toMatchObject([
      { name: "m2-agent", machine: null },
      { name: "m1-agent", working: true },
    ])
    clones.go()
    expect(ENDED).toContain((await first.done()).code)
  })

  test("a run whose lock an unshare took while its connection was gone stops, exit 1", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started("one"))
    const [{ backend_pid }] = await db.sql`SELECT backend_pid FROM live_runs WHERE project = 'shop'`
    const other = await db.sql.reserve()
    try {
      await db.sql`SELECT pg_terminate_backend(${backend_pid})`
      // Waits for the ended session to let go, then holds the lock as `flow unshare` would.
      await other`SELECT pg_advisory_lock(${RUN_LOCK_CLASS}, ${await lockIdOf(db)})`
      const result = await first.done()
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(
        "error: this run lost its lock when its connection to the database closed, and meanwhile another flow process holds the run lock of shared project 'shop' (who, it has not recorded yet): this run stopped\n",
      )
    } finally {
      await other.close()
    }
  })

  test("the last run is each machine's own: its usage and spend beside budget.run, and an agent's spend in its machine's run", async () => {
    await using db = await freshDatabase()
    // A fake `claude` that reports 100 tokens in, 50 out and $0.0123 a turn, and runs the `flow done` its prompt names.
    const bin = mkdtempSync(join(tmpdir(), "flow-bin-"))
    symlinkSync(join(ROOT, "test", "fixtures", "fake-agents", "fake-claude.ts"), join(bin, "claude"))
    const task = (id: string, agent: string) => ({ id, title: id, status: "ready_for_agent", agent_name: agent, instructions: `Write ${id}.` })
    await using clones = await twoClones(db, {
      tasks: tasksYaml([task("one", "m1-agent"), task("two", "m2-agent"), task("three", "m2-agent")]),
      cli: "claude",
      flowYaml: "budget:\n  run: {usd: 10}\n  agent: {usd: 5}\n",
      env: { PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`, FAKE_AGENT_FOLLOW_PROMPT: "1" },
    })
    try {
      // laptop-1 runs one task (its agent's only one), then laptop-2 two: laptop-2's run starts last.
      expect(await clones.runFirst().done()).toMatchObject({ code: 4, stderr: "" })
      expect(await clones.runSecond().done()).toMatchObject({ code: 0, stderr: "" })
      const turns = (n: number) => ({ input_tokens: 100 * n, output_tokens: 50 * n, cost_usd: Math.round(0.0123 * n * 1e10) / 1e10 })
      for (const [clone, n] of [
        ["first", 1],
        ["second", 2],
      ] as const) {
        const { usage } = JSON.parse(await clones.on(clone, ["dashboard", "--json"]))
        expect({ clone, run: usage.run, spent: usage.budget.usd.spent, total: usage.total }).toMatchObject({
          clone,
          run: turns(n),
          spent: turns(n).cost_usd,
          total: turns(3),
        })
      }
      // An agent's spend in the latest run is in its own machine's latest run, from whichever machine it is read.
      for (const clone of ["first", "second"] as const) {
        const { agents } = JSON.parse(await clones.on(clone, ["agents", "--json"]))
        const spent = Object.fromEntries(agents.map((a: { name: string; budget: { usd: { spent: number } } }) => [a.name, a.budget.usd.spent]))
        expect({ clone, spent }).toEqual({ clone, spent: { "m1-agent": turns(1).cost_usd, "m2-agent": turns(2).cost_usd } })
      }
    } finally {
      rmSync(bin, { recursive: true, force: true })
    }
  })
})
