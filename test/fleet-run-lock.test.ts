// One live `flow run` per shared project across clones and machines (docs/FLEET.md, "One run per shared
// project"): two clones of one shared project, each with its own .flow (so its own run lock), stand for two
// machines (FLOW_MACHINE names them). While the first clone's run lives, the second's `flow run` and
// `flow unshare` are refused by the database's lock; once the first ended, or was killed outright, the second
// runs.
import { describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { background, bareOrigin, flow, git, tasksYaml, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, type TestDatabase } from "./postgres"

/** A graph whose one task says it started, then waits until the test lets it finish (or has ended). */
function holdingGraph(signals: string): string {
  const started = join(signals, "started")
  const go = join(signals, "go")
  return tasksYaml([
    {
      id: "hold",
      title: "Hold",
      status: "ready_for_agent",
      instructions: `\`\`\`sh\ntouch '${started}'\nwhile [ -d '${signals}' ] && [ ! -e '${go}' ]; do sleep 0.05; done\necho held > held.txt\n\`\`\``,
    },
  ])
}

const RUN = ["run", "--cli", "script", "--agents", "1", "--headless"]
const LAPTOP_1 = { FLOW_MACHINE: "laptop-1" }
const LAPTOP_2 = { FLOW_MACHINE: "laptop-2" }

/** Two clones of one project shared as 'shop': `first` shared it, `second` cloned it with its flow.yaml. */
async function twoClones(db: TestDatabase) {
  const signals = mkdtempSync(join(tmpdir(), "flow-signals-"))
  const first = await tempRepo({ "tasks.yaml": holdingGraph(signals) })
  expect((await flow(first.path, ["share", db.url, "--project", "shop"])).code).toBe(0)
  await git(first.path, ["add", "flow.yaml"])
  await git(first.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-q", "-m", "share the project"])
  const second = mkdtempSync(join(tmpdir(), "flow-clone-"))
  await git(tmpdir(), ["clone", "-q", await bareOrigin(first.path), second])
  const runs: ReturnType<typeof background>[] = []
  return {
    first: first.path,
    second,
    /** `flow run` in the first clone, on machine laptop-1 */
    runFirst: () => {
      const run = background(first.path, RUN, LAPTOP_1)
      runs.push(run)
      return run
    },
    /** `flow run` in the second clone, on machine laptop-2, to its end */
    runSecond: async () => {
      const run = background(second, RUN, LAPTOP_2)
      runs.push(run)
      return run.done()
    },
    started: () => existsSync(join(signals, "started")),
    go: () => writeFileSync(join(signals, "go"), ""),
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

/** The sessions holding one of flow's run locks (first key 'flor') in the test's database. */
async function runLockSessions(db: TestDatabase): Promise<number> {
  const [{ n }] = await db.sql`
    SELECT count(*)::int AS n FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND classid::bigint = ${0x666c6f72}
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`
  return n
}

describe.skipIf(!HAVE_POSTGRES)("one flow run per shared project", () => {
  test("a second clone's run and unshare are refused while the first clone's run lives, and it runs once that one ended", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started)

    const refused = await clones.runSecond()
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(
      new RegExp(
        `^error: another 'flow run' holds shared project 'shop' \\(machine laptop-1, pid ${first.proc.pid}, since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\): one run per shared project\\n` +
          "hint: wait for it to finish, or stop it on laptop-1 \\(q in its screen, or Ctrl-C\\); then run 'flow run' again\\n$",
      ),
    )
    // Refused before doing anything: no worktree, no run log in the second clone.
    expect((await git(clones.second, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
    expect(existsSync(join(clones.second, ".flow", "runs"))).toBe(false)
    // Reading the plan takes no lock.
    expect((await flow(clones.second, [...RUN, "--dry-run"], { env: LAPTOP_2 })).code).toBe(0)
    // The tasks and state must not move under a run on another machine.
    const unshare = await flow(clones.second, ["unshare"], { env: LAPTOP_2 })
    expect(unshare.code).toBe(1)
    expect(unshare.stderr).toContain("error: 'flow run' holds shared project 'shop' (machine laptop-1, ")
    expect(unshare.stderr).toContain("hint: stop it on laptop-1 (q in its screen, or Ctrl-C), then run 'flow unshare' again\n")
    expect(existsSync(join(clones.second, "tasks.yaml"))).toBe(true)
    expect(await Bun.file(join(clones.second, "flow.yaml")).text()).toStartWith("state: ")

    clones.go()
    expect((await first.done()).code).toBe(0)
    expect(await runLockSessions(db)).toBe(0)
    const second = await clones.runSecond()
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" })
    // No run left: unshare goes through.
    expect((await flow(clones.second, ["unshare"], { env: LAPTOP_2 })).code).toBe(0)
  })

  test("the second clone sees where the first clone's run lives and which agent works on the task, and then that no run lives", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started)
    const onSecond = async (args: string[]) => {
      const r = await flow(clones.second, args, { env: LAPTOP_2 })
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
      return r.stdout
    }
    const live = { pid: first.proc.pid, since: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), machine: "laptop-1" }

    const agents = JSON.parse(await onSecond(["agents", "--json"]))
    expect(agents.run).toEqual(live)
    expect(agents.agents).toMatchObject([{ name: "script-1", current: { id: "hold", status: "in_progress" }, machine: "laptop-1" }])
    expect(await onSecond(["agents"])).toStartWith(`Run: live on laptop-1 (pid ${first.proc.pid}, since `)
    const dashboard = JSON.parse(await onSecond(["dashboard", "--json"]))
    expect(dashboard.run).toEqual(live)
    expect(dashboard.running).toMatchObject([{ id: "hold", agent: "script-1", live: true }])
    expect(await onSecond(["dashboard", "--once"])).toContain(`flow run live on laptop-1 (pid ${first.proc.pid})`)
    expect(JSON.parse(await onSecond(["show", "hold", "--json"])).worked_by).toEqual({
      agent: "script-1",
      state: "working",
      ended_at: null,
      ended_status: null,
    })
    expect(await onSecond(["show", "hold"])).toContain("Worked by: script-1 (working on it now)\n")
    expect(await onSecond(["list"])).toContain("(working: script-1)")

    clones.go()
    expect((await first.done()).code).toBe(0)
    const after = JSON.parse(await onSecond(["agents", "--json"]))
    expect(after.run).toBeNull()
    expect(after.agents).toMatchObject([{ name: "script-1", current: null, machine: null }])
    expect(await onSecond(["agents"])).toStartWith("Run: none live\nAgents:\n  script-1 (script)\n")
    expect(JSON.parse(await onSecond(["dashboard", "--json"])).run).toBeNull()
    expect(JSON.parse(await onSecond(["show", "hold", "--json"])).worked_by).toMatchObject({ agent: "script-1", state: "ended", ended_status: "done" })
  })

  test("a run killed outright (kill -9) frees the project: the server drops its session's lock, the stale row blocks nothing", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started)
    expect(await runLockSessions(db)).toBe(1)
    first.proc.kill("SIGKILL")
    await first.proc.exited
    // The server ends the dead run's session once its connection closes, and its advisory locks with it.
    await waitUntil(async () => (await runLockSessions(db)) === 0)
    const [row] = await db.sql`SELECT machine, pid FROM run_locks WHERE project = 'shop'`
    expect(row).toEqual({ machine: "laptop-1", pid: first.proc.pid })

    clones.go()
    const second = await clones.runSecond()
    expect(second.stderr).not.toContain("holds shared project")
    expect(second.code).toBe(0)
    expect(JSON.parse((await flow(clones.second, ["show", "hold", "--json"])).stdout).task.status).toBe("done")
  })

  test("a run stopped with SIGTERM lets go of the project", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started)
    first.proc.kill("SIGTERM")
    expect((await first.done()).code).toBe(130)
    expect(await runLockSessions(db)).toBe(0)
    clones.go()
    const second = await clones.runSecond()
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" })
  })

  test("a run whose connection to the database closed takes its lock again, and still refuses a second run", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started)
    const [{ backend_pid }] = await db.sql`SELECT backend_pid FROM run_locks WHERE project = 'shop'`
    await db.sql`SELECT pg_terminate_backend(${backend_pid})`
    await waitUntil(async () => {
      const [row] = await db.sql`SELECT backend_pid FROM run_locks WHERE project = 'shop'`
      return row.backend_pid !== backend_pid && (await runLockSessions(db)) === 1
    })
    const refused = await clones.runSecond()
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("error: another 'flow run' holds shared project 'shop' (machine laptop-1, ")
    clones.go()
    expect((await first.done()).code).toBe(0)
  })

  test("a run whose lock was taken by another while its connection was gone stops, exit 1", async () => {
    await using db = await freshDatabase()
    await using clones = await twoClones(db)
    const first = clones.runFirst()
    await waitUntil(clones.started)
    const [{ backend_pid, lock_id }] = await db.sql`SELECT backend_pid, lock_id FROM run_locks WHERE project = 'shop'`
    const other = await db.sql.reserve()
    try {
      await db.sql`SELECT pg_terminate_backend(${backend_pid})`
      // Waits for the ended session to let go, then holds the lock as another run would.
      await other`SELECT pg_advisory_lock(${0x666c6f72}, ${lock_id})`
      const result = await first.done()
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(
        "error: this run lost its lock when its connection to the database closed, and meanwhile another flow process holds the run lock of shared project 'shop' (who, it has not recorded yet): this run stopped, one run per shared project\n",
      )
    } finally {
      await other.close()
    }
  })
})
