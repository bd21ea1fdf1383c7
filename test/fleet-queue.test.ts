// One merge queue for the whole fleet (issue 33, docs/RUN.md "Merge queue"): clones of one shared project as
// machines (own HOME, FLOW_MACHINE and .flow), a real PostgreSQL, the remote served by `git daemon` on loopback.
// The checks of one window run on different machines at once; a machine killed or paused mid-check loses its
// lease and another checks that candidate again; a late result changes nothing; a person's push mid-window is
// built on, never overwritten; a slow failure ahead of a fast pass sends back only the failing task; a machine
// paused while it holds the head's push lands nothing, and another lands the window meanwhile. After every test:
// every commit of the remote main's first-parent history since the start passed the check, and every task is
// on it exactly once.
import { describe, expect, test } from "bun:test"
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type Fleet, fleet, statuses } from "./fleet-helpers"
import { background, flow, git, tasksYaml } from "./helpers"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"
import { mergesPerTask, SLOW_FAILURE_CHECK, slowFailureTasks, uncheckedCommits } from "./queue-helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

/**
 * The check: a tree holding broken.txt fails. In a run (FLOW_TASK_ID set) each check is logged in
 * $SIGNALS/checks (task, machine, attempt's start) and runs $SIGNALS/hook.sh first, where a test puts its timing.
 */
const CHECK = `if [ -n "$FLOW_TASK_ID" ]; then
  echo "$FLOW_TASK_ID $FLOW_MACHINE" >> "$SIGNALS/checks"
  if [ -f "$SIGNALS/hook.sh" ]; then . "$SIGNALS/hook.sh"; fi
fi
test ! -e broken.txt`

const writes = (id: string, extra: Record<string, unknown> = {}) => ({ id, title: id, status: "todo", instructions: sh(`echo ${id} > ${id}.txt`), ...extra })

/**
 * A fleet of `names` machines on `tasks`, each with its own agents in its clone's flow.yaml (a machine's own
 * edit): `agents(name)` names them (default: two script agents of its own). Every run gets $SIGNALS.
 */
async function queueFleet(dbUrl: string, tasks: Record<string, unknown>[], flowYaml: string, names: string[], agents = (m: string) => [`${m}-1`, `${m}-2`]) {
  const f: Fleet = await fleet(dbUrl, () => tasksYaml(tasks), `verify: { command: sh check.sh, timeout: 2m }\n${flowYaml}`, { "check.sh": CHECK })
  const signals = join(f.root, "signals")
  mkdirSync(signals)
  writeFileSync(join(signals, "checks"), "")
  const start = (await git(f.remote, ["rev-parse", "main"])).trim()
  const machines = await Promise.all(
    names.map(async (name) => {
      const m = await f.clone(name)
      appendFileSync(
        join(m.path, "flow.yaml"),
        `agents:\n${agents(name)
          .map((a) => `  - {name: ${a}, cli: script}\n`)
          .join("")}`,
      )
      return {
        ...m,
        name,
        /** `flow run` on this machine, in a process group of its own (setsid), as on a machine of its own */
        run: (args: string[] = [], env: Record<string, string> = {}) =>
          background(m.path, ["run", "--headless", ...args], { ...m.env, SIGNALS: signals, ...env }, ["setsid"]),
      }
    }),
  )
  return {
    f,
    signals,
    machines,
    /** the checks run so far: task and machine */
    checks: () =>
      readFileSync(join(signals, "checks"), "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split(" ")),
    /** what every test checks at its end: the remote main's history checked, each task on it once */
    history: async (ids: string[]) => {
      expect(await uncheckedCommits(f.remote, "main", start, CHECK)).toEqual([])
      expect(await mergesPerTask(f.remote, "main")).toEqual(Object.fromEntries(ids.map((id) => [id, 1])))
    },
    [Symbol.asyncDispose]: () => f[Symbol.asyncDispose](),
  }
}

const FOUR = ["t1", "t2", "t3", "t4"]

/** Four tasks that each write their file, on two machines m1 and m2. */
const fourOnTwo = (dbUrl: string, agents?: (m: string) => string[]) =>
  queueFleet(
    dbUrl,
    FOUR.map((id) => writes(id)),
    "",
    ["m1", "m2"],
    agents,
  )

type Run = ReturnType<typeof background>

/** Waits until `cond`, failing with what each run said when all of them ended first, or after 2 minutes. */
async function until(cond: () => boolean | Promise<boolean>, runs: Run[], what: string): Promise<void> {
  for (const end = Date.now() + 120_000; !(await cond()); ) {
    const over = runs.every((r) => r.proc.exitCode !== null || r.proc.signalCode !== null)
    if (over || Date.now() > end) throw new Error(`${over ? "the runs ended" : "still"} before ${what}:\n${runs.map((r) => r.output()).join("\n---\n")}`)
    await Bun.sleep(50)
  }
}

/**
 * `worker`'s run (it checks nothing: --checks 0) and, once it has claimed its task, the `checkers`' runs: a run
 * that finds nothing of its own to do while no other run holds a task ends at once (it would have nothing to wait for).
 */
async function workerThenCheckers(worker: { run: (args?: string[]) => Run }, checkers: { run: () => Run }[]): Promise<Run[]> {
  const first = worker.run(["--checks", "0"])
  await first.waitFor("started by", 120_000)
  return [first, ...checkers.map((m) => m.run())]
}

async function ended(runs: Run[]): Promise<void> {
  const done = await Promise.all(runs.map((r) => r.done()))
  if (done.some((d) => d.code !== 0 || d.stderr !== "")) console.error(done.map((d) => `exit ${d.code}\n${d.stdout}\n${d.stderr}`).join("\n---\n"))
  expect(done.map((d) => ({ code: d.code, stderr: d.stderr }))).toEqual(done.map(() => ({ code: 0, stderr: "" })))
}

describe.skipIf(!HAVE_POSTGRES)("one merge queue for the fleet", () => {
  test("the checks of one window run on different machines at the same time", async () => {
    await using db = await freshDatabase()
    const ids = ["t1", "t2", "t3", "t4", "t5", "t6"]
    await using q = await queueFleet(
      db.url,
      ids.map((id) => writes(id)),
      "",
      ["m1", "m2"],
    )
    // Each check waits (up to 3 s) for a check on another machine to run beside it, and says so when one does.
    writeFileSync(
      join(q.signals, "hook.sh"),
      `mkdir -p "$SIGNALS/running"; touch "$SIGNALS/running/$FLOW_MACHINE.$FLOW_TASK_ID"
for i in $(seq 60); do
  if ls "$SIGNALS/running" | grep -qv "^$FLOW_MACHINE\\."; then echo "$FLOW_MACHINE $FLOW_TASK_ID" >> "$SIGNALS/together"; break; fi
  sleep 0.05
done
rm -f "$SIGNALS/running/$FLOW_MACHINE.$FLOW_TASK_ID"
`,
    )
    const runs = q.machines.map((m) => m.run())
    await ended(runs)
    const together = readFileSync(join(q.signals, "together"), "utf8").trim().split("\n")
    expect(new Set(together.map((l) => l.split(" ")[0]))).toEqual(new Set(["m1", "m2"]))
    // One window across the machines: a candidate checked on top of another machine's.
    const across = runs.flatMap((r) => {
      const own = [...r.output().matchAll(/(t\d): started by/g)].map((m) => m[1])
      return [...r.output().matchAll(/checking(?: on m\d)? \(on top of ([^)]*)\)/g)].flatMap((m) => m[1].split(", ").filter((t) => !own.includes(t)))
    })
    expect(across.length).toBeGreaterThan(0)
    expect(await statuses(q.machines[0])).toEqual(Object.fromEntries(ids.map((id) => [id, "done"])))
    await q.history(ids)
  }, 240_000)

  test("a machine killed mid-check: another machine checks that candidate again, and it lands once", async () => {
    await using db = await freshDatabase()
    // m1 does the work and runs no checks; m2 and m3 run the checks and have no task of their own.
    await using q = await queueFleet(db.url, [writes("t1", { agent_name: "m1-1" })], "lease: 2s\n", ["m1", "m2", "m3"], (m) => [`${m}-1`])
    writeFileSync(join(q.signals, "hook.sh"), `if mkdir "$SIGNALS/first" 2>/dev/null; then echo "$FLOW_MACHINE" > "$SIGNALS/first/machine"; sleep 600; fi\n`)
    const [m1, m2, m3] = q.machines
    const runs = await workerThenCheckers(m1, [m2, m3])
    await until(() => existsSync(join(q.signals, "first", "machine")), runs, "the first check")
    await until(() => readFileSync(join(q.signals, "first", "machine"), "utf8").trim() !== "", runs, "the first check said where it runs")
    const killed = readFileSync(join(q.signals, "first", "machine"), "utf8").trim()
    const victim = runs[q.machines.findIndex((m) => m.name === killed)]
    process.kill(-victim.proc.pid, "SIGKILL")
    await victim.done()
    await ended(runs.filter((r) => r !== victim))
    const checks = q.checks()
    expect(checks.map(([task]) => task)).toEqual(["t1", "t1"])
    expect(checks[0][1]).toBe(killed)
    expect(["m2", "m3"].filter((m) => m !== killed)).toEqual([checks[1][1]]) // the other checker took it over
    expect(await statuses(m1)).toEqual({ t1: "done" })
    await q.history(["t1"])
  }, 240_000)

  test("flow dashboard on any machine shows the shared line: every machine's candidates, and which machine checks each", async () => {
    await using db = await freshDatabase()
    // m1 does the work and runs no checks; m2 checks, and its check waits for the test's go.
    await using q = await queueFleet(db.url, [writes("t1", { agent_name: "m1-1" })], "", ["m1", "m2"], (m) => [`${m}-1`])
    writeFileSync(join(q.signals, "hook.sh"), `touch "$SIGNALS/checking"; until [ -e "$SIGNALS/go" ]; do sleep 0.05; done\n`)
    const [m1, m2] = q.machines
    const runs = await workerThenCheckers(m1, [m2])
    try {
      await until(() => existsSync(join(q.signals, "checking")), runs, "the check")
      for (const m of [m1, m2]) {
        const shown = await flow(m.path, ["dashboard", "--json"], { env: m.env })
        expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: "" })
        expect(JSON.parse(shown.stdout).queue).toEqual([
          {
            target: "main",
            candidates: [{ task: "t1", state: "checking", reason: null, on_top_of: [], seconds: null, machine: "m2", since: expect.any(String) }],
          },
        ])
        const text = await flow(m.path, ["dashboard", "--once"], { env: { ...m.env, COLUMNS: "120" } })
        expect(text.stdout).toMatch(/t1 +checking +on main; by m2\n/)
      }
    } finally {
      writeFileSync(join(q.signals, "go"), "")
    }
    await ended(runs)
    expect(await statuses(m1)).toEqual({ t1: "done" })
    await q.history(["t1"])
  }, 240_000)

  test("a machine paused past its lease during its check, then continued: its late result changes nothing", async () => {
    await using db = await freshDatabase()
    await using q = await queueFleet(db.url, [writes("t1", { agent_name: "m1-1" })], "lease: 2s\n", ["m1", "m2", "m3"], (m) => [`${m}-1`])
    // The first check waits for the test's go, then fails: had its late result counted, t1 would be blocked.
    writeFileSync(
      join(q.signals, "hook.sh"),
      `if mkdir "$SIGNALS/first" 2>/dev/null; then echo "$FLOW_MACHINE" > "$SIGNALS/first/machine"; until [ -e "$SIGNALS/go" ]; do sleep 0.05; done; exit 1; fi\n`,
    )
    const [m1] = q.machines
    const runs = await workerThenCheckers(m1, q.machines.slice(1))
    await until(
      () => existsSync(join(q.signals, "first", "machine")) && readFileSync(join(q.signals, "first", "machine"), "utf8").trim() !== "",
      runs,
      "the first check",
    )
    const paused = readFileSync(join(q.signals, "first", "machine"), "utf8").trim()
    const sleeper = runs[q.machines.findIndex((m) => m.name === paused)]
    process.kill(-sleeper.proc.pid, "SIGSTOP")
    try {
      // Another machine checks t1 again once the paused one's lease lapsed, and lands it.
      await until(async () => (await mergesPerTask(q.f.remote, "main")).t1 === 1, runs, "t1 landed")
    } finally {
      writeFileSync(join(q.signals, "go"), "")
      process.kill(-sleeper.proc.pid, "SIGCONT")
    }
    await ended(runs)
    expect(q.checks().map(([task, machine]) => `${task} ${machine}`)).toEqual([`t1 ${paused}`, `t1 ${["m2", "m3"].find((m) => m !== paused)}`])
    expect(await statuses(m1)).toEqual({ t1: "done" })
    expect(runs.map((r) => r.output()).join("\n")).not.toContain("t1: queue main #1 failed")
    await q.history(["t1"])
  }, 240_000)

  test("the remote's target pushed by a person mid-window: the window is built on it and checked again, never overwritten", async () => {
    await using db = await freshDatabase()
    const ids = FOUR
    await using q = await fourOnTwo(db.url)
    const person = await q.f.clone("person")
    // The first check pushes a commit of the person's to the remote's main, then waits for a second candidate.
    writeFileSync(
      join(q.signals, "hook.sh"),
      `if mkdir "$SIGNALS/pushed" 2>/dev/null; then
  cd '${person.path}' && echo mine > person.txt && git add person.txt && git -c user.name=p -c user.email=p@flow.invalid commit -q -m 'the person' && git push -q origin HEAD:main
  cd - >/dev/null
fi
`,
    )
    const runs = q.machines.map((m) => m.run())
    await ended(runs)
    const out = runs.map((r) => r.output()).join("\n")
    expect(out).toContain("main of the shared remote moved meanwhile (a commit made outside flow): the merge queue is built again on it")
    expect(out).toMatch(/queue main #\d waiting \(rebuilt on (main|t\d)\)/)
    expect(await git(q.f.remote, ["log", "--first-parent", "--format=%s", "main"])).toContain("the person\n")
    expect(await git(q.f.remote, ["show", "main:person.txt"])).toBe("mine\n")
    expect(await statuses(q.machines[0])).toEqual(Object.fromEntries(ids.map((id) => [id, "done"])))
    await q.history(ids)
  }, 240_000)

  test("a slow failing check ahead of a fast passing one, on two machines: only the failing task goes back to its agent (10 runs)", async () => {
    const once = async (run: number) => {
      await using db = await freshDatabase()
      await using f = await fleet(db.url, () => tasksYaml(slowFailureTasks(sh)), "verify: { command: sh check.sh, timeout: 1m }\nfix_attempts: 0\n", {
        "check.sh": SLOW_FAILURE_CHECK,
      })
      const gate = join(f.root, "gate")
      mkdirSync(gate)
      const start = (await git(f.remote, ["rev-parse", "main"])).trim()
      const [m1, m2] = [await f.clone("m1"), await f.clone("m2")]
      const runs = [m1, m2].map((m, i) => background(m.path, ["run", "--headless", "--cli", "script", "--agents", String(2 - i)], { ...m.env, GATE: gate }))
      const done = await Promise.all(runs.map((r) => r.done()))
      const out = done.map((d) => d.stdout).join("\n")
      if (done.some((d) => d.code !== 0)) console.error(`run ${run}:\n${out}`)
      expect({ run, stderr: done.map((d) => d.stderr).join(""), statuses: await statuses(m1) }).toEqual({
        run,
        stderr: "",
        statuses: { a: "done", b: "blocked", c: "done" },
      })
      // c's first check ran on top of b: said by its machine, or, when that one saw it only once rebuilt, by the checker.
      expect(out).toMatch(/c: (queue main #\d checking( on m\d)?|checking m\d's candidate into main) \(on top of (a, )?b\)/)
      expect(out).not.toContain("merge of flow/c into main failed")
      expect(await mergesPerTask(f.remote, "main")).toEqual({ a: 1, c: 1 })
      expect(await uncheckedCommits(f.remote, "main", start, SLOW_FAILURE_CHECK)).toEqual([])
    }
    for (let run = 1; run <= 10; run += 2) await Promise.all([once(run), once(run + 1)])
  }, 600_000)

  test("a machine paused while it holds the head's push: another machine lands the window meanwhile, and the paused one's push lands nothing", async () => {
    await using db = await freshDatabase()
    const ids = FOUR
    await using q = await fourOnTwo(db.url, (m) => [`${m}-1`])
    // The first process of either machine about to push the target stops itself there (a test hook).
    const once = join(q.signals, "stopped")
    const env = { FLOW_TEST_STOP_AT: "before-push", FLOW_TEST_STOP_ONCE: once }
    const runs = q.machines.map((m) => m.run([], env))
    await until(() => existsSync(join(once, "pid")) && readFileSync(join(once, "pid"), "utf8") !== "", runs, "a lead stopped before its push")
    const before = (await git(q.f.remote, ["rev-parse", "main"])).trim()
    const pid = Number(readFileSync(join(once, "pid"), "utf8"))
    try {
      // Its lead lapses (10 s at most); the other machine leads and lands what it was about to push.
      await until(async () => (await git(q.f.remote, ["rev-parse", "main"])).trim() !== before, runs, "the other machine landed")
    } finally {
      process.kill(pid, "SIGCONT")
    }
    await ended(runs)
    expect(await statuses(q.machines[0])).toEqual(Object.fromEntries(ids.map((id) => [id, "done"])))
    expect(readdirSync(once)).toEqual(["pid"])
    await q.history(ids)
  }, 240_000)
})

/** How many times each task's own merge is in the remote main's whole history (a batch holds them in its second-parent chain). */
async function mergesInHistory(remote: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const s of (await git(remote, ["log", "--merges", "--format=%s", "main"])).trim().split("\n")) {
    const id = /^Merge flow\/\S+: (\S+)$/.exec(s)?.[1]
    if (id) counts[id] = (counts[id] ?? 0) + 1
  }
  return counts
}

// Batches in a fleet (docs/RUN.md, "Batches"). What is handed over first is checked at once (nothing ahead of it is
// being checked); the rest wait behind that check to fill a batch, and are checked as one. The first check holds
// until the test has seen every task in the line (the shared queue, on `flow dashboard --json`), so what the
// batch behind it holds never depends on how fast the machines are: two checks for four tasks.
describe.skipIf(!HAVE_POSTGRES)("batches of the fleet's merge queue", () => {
  /** `after`: what its instructions wait for before they end (its hand-over waits with them) */
  const doneThenWrites = (id: string, extra: string, after = "") => ({
    id,
    title: id,
    status: "todo",
    instructions: sh(`echo ${id} > ${id}.txt${extra}\n${after}touch "$SIGNALS/done-${id}"`),
  })
  const HOOK = `touch "$SIGNALS/checking"; until [ -e "$SIGNALS/go" ]; do sleep 0.05; done\necho "$FLOW_TASK_ID" >> "$SIGNALS/finished"\n`

  /** The runs of `q`'s machines, the first check let go once all four tasks are in the line; what each run printed. */
  async function allInLineThenGo(q: Awaited<ReturnType<typeof queueFleet>>): Promise<{ code: number; stdout: string; stderr: string }[]> {
    const runs = q.machines.map((m) => m.run())
    try {
      const m1 = q.machines[0]
      await until(
        async () => {
          if (!existsSync(join(q.signals, "checking"))) return false
          const shown = await flow(m1.path, ["dashboard", "--json"], { env: m1.env })
          const queue = (JSON.parse(shown.stdout || "{}") as { queue?: { candidates: { task: string }[] }[] }).queue ?? []
          return queue.flatMap((l) => l.candidates).length === FOUR.length
        },
        runs,
        "all four tasks in the line",
      )
    } finally {
      writeFileSync(join(q.signals, "go"), "")
    }
    const done = await Promise.all(runs.map((r) => r.done()))
    // What the runs printed, for a failure's reader: exit 4 is a run whose own task is blocked.
    if (done.some((d) => (d.code !== 0 && d.code !== 4) || d.stderr !== ""))
      console.error(done.map((d) => `exit ${d.code}\n${d.stdout}\n${d.stderr}`).join("\n---\n"))
    return done
  }

  test("a batch that passes: four tasks land with two checks, two commits on the remote main's first parents", async () => {
    await using db = await freshDatabase()
    await using q = await queueFleet(
      db.url,
      FOUR.map((id) => doneThenWrites(id, "")),
      "queue: { batch: 4 }\n",
      ["m1", "m2"],
    )
    writeFileSync(join(q.signals, "hook.sh"), HOOK)
    const start = (await git(q.f.remote, ["rev-parse", "main"])).trim()
    const done = await allInLineThenGo(q)
    expect(done.map((d) => ({ code: d.code, stderr: d.stderr }))).toEqual(done.map(() => ({ code: 0, stderr: "" })))
    expect(readFileSync(join(q.signals, "finished"), "utf8").trim().split("\n")).toHaveLength(2)
    expect(q.checks()).toHaveLength(2)
    expect(await statuses(q.machines[0])).toEqual(Object.fromEntries(FOUR.map((id) => [id, "done"])))
    const firsts = (await git(q.f.remote, ["log", "--first-parent", "--format=%s", `${start}..main`])).trim().split("\n")
    expect(firsts).toHaveLength(2)
    expect(firsts[0]).toMatch(/^Merge a batch of 3 into main: t\d(, t\d)+$/)
    expect(await uncheckedCommits(q.f.remote, "main", start, CHECK)).toEqual([])
    expect(await mergesInHistory(q.f.remote)).toEqual({ t1: 1, t2: 1, t3: 1, t4: 1 })
  }, 240_000)

  test("a batch with one failing candidate: bisected, the failing one blocked, the other three landed", async () => {
    await using db = await freshDatabase()
    // t3 (the failing one) is handed over only once the first check started: it is in the batch behind it.
    const waitsForCheck = `until [ -e "$SIGNALS/checking" ]; do sleep 0.05; done\n`
    await using q = await queueFleet(
      db.url,
      FOUR.map((id) => (id === "t3" ? doneThenWrites(id, "\necho broken > broken.txt", waitsForCheck) : doneThenWrites(id, ""))),
      "queue: { batch: 4 }\nfix_attempts: 0\n",
      ["m1", "m2"],
    )
    writeFileSync(join(q.signals, "hook.sh"), HOOK)
    const start = (await git(q.f.remote, ["rev-parse", "main"])).trim()
    const done = await allInLineThenGo(q)
    // A run ends 4 when a task of its own is blocked: t3's run.
    expect(done.map((d) => d.stderr)).toEqual(["", ""])
    // The batch of 3 behind the first check failed, and split until t3 was alone.
    expect(done.map((d) => d.stdout).join("\n")).toMatch(/failed: checked again as halves of 2 and 1/)
    expect(await statuses(q.machines[0])).toEqual({ t1: "done", t2: "done", t3: "blocked", t4: "done" })
    expect(await uncheckedCommits(q.f.remote, "main", start, CHECK)).toEqual([])
    expect(await mergesInHistory(q.f.remote)).toEqual({ t1: 1, t2: 1, t4: 1 })
  }, 240_000)
})
