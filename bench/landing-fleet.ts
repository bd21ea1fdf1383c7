// The fleet's merge queue against file mode's (docs/PERFORMANCE.md, "Landing in a fleet"; part of `npm run
// bench`; issue 33). Every case runs the same work side by side in this one invocation: script agents whose
// tasks each commit one file, a check (flow.yaml `verify`) that sleeps, and queue_depth 8. A fleet is a bare
// remote served by `git daemon` on loopback, one PostgreSQL (started for the run, as the tests start theirs),
// and clones of the remote as machines, each with its own HOME, FLOW_MACHINE and .flow, each running
// `flow run --headless`; its time is from the start of the runs to the last one's exit.
// - 24 independent tasks, a 2 s check: one machine in files with 4 agents (the floor) against two machines
//   with 2 agents each. Goal: at most 1.15x the floor (3.8x before the one queue: one check at a time).
// - 48 tasks, a 4 s check that uses no CPU: 2 machines with 2 agents each against 4 with 2 each (and files
//   with 4 agents as the floor). Goal: the 4 machines in at most 0.6x the 2 machines' time.
// - checks per merge when nothing fails: at most 1.1.
// - 12 tasks of which 1 fails its check (a 2 s check), on two machines: p95 of the time from an agent's done to
//   its commit on the remote's target at most 2x the check.
// The landings' times and checks are read from each run's log ("<task>: landed <s> s after its work was done
// (<n> checks, <m> thrown away)"). Without PostgreSQL the benchmark says so and exits 0.
// Usage: bun bench/landing-fleet.ts [--only a|b|c]   (needs dist/flow: npm run bench builds it)
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { percentile } from "../lib/landing/queue-report"
import { gitDaemon } from "../test/git-daemon"
import { freshDatabase, HAVE_POSTGRES } from "../test/postgres"
import { benchEnv, ROOT } from "./lib"

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { only: { type: "string" } } })
const FLOW = process.env.BENCH_FLOW ?? join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first`)
if (!HAVE_POSTGRES) {
  console.log("landing in a fleet: skipped (no PostgreSQL: install postgresql, or set PG_BIN)")
  process.exit(0)
}

/** The check: `seconds` of sleep, then a tree holding bad.txt fails. */
const check = (seconds: number) => `sleep ${seconds}\ntest ! -e bad.txt\n`

/** `n` independent tasks, each committing its own file; the task at `failing` (if any) commits bad.txt too. */
function tasks(n: number, failing?: number): string {
  const lines = ["tasks:"]
  for (let i = 0; i < n; i++) {
    const script = i === failing ? [`echo ${i} > f${i}.txt`, "echo bad > bad.txt"] : [`echo ${i} > f${i}.txt`]
    lines.push(`  - id: t${String(i).padStart(2, "0")}`, `    title: Task ${i}`, "    status: todo", "    instructions: |", "      ```sh")
    lines.push(...script.map((l) => `      ${l}`), "      ```")
  }
  return `${lines.join("\n")}\n`
}

/** A failure goes straight to blocked (no fix attempt): the case measures the others' landings around it. */
const FLOW_YAML = "verify: { command: sh check.sh, timeout: 1m }\nqueue_depth: 8\nfix_attempts: 0\n"

type Outcome = { seconds: number; landed: number[]; checks: number; thrown: number; merges: number; logs: string[]; leadSteps: number }

const g = (cwd: string, args: string[]) => {
  const r = Bun.spawnSync(["git", "-c", "user.name=b", "-c", "user.email=b@flow.invalid", ...args], { cwd, env: benchEnv() })
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${r.stderr.toString()}`)
  return r.stdout.toString()
}

/** A project's first commit in `dir`: its tasks, flow.yaml and the check. */
function seed(dir: string, n: number, checkS: number, failing?: number): void {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "tasks.yaml"), tasks(n, failing))
  writeFileSync(join(dir, "flow.yaml"), FLOW_YAML)
  writeFileSync(join(dir, "check.sh"), check(checkS))
  writeFileSync(join(dir, ".gitignore"), ".flow/\n.flow-bench-trace\n")
  g(dir, ["init", "-q", "-b", "main"])
  g(dir, ["add", "-A"])
  g(dir, ["commit", "-qm", "start"])
}

/** What the runs' logs say of their landings. */
function read(logs: string[]): Pick<Outcome, "landed" | "checks" | "thrown"> {
  const landed: number[] = []
  let checks = 0
  let thrown = 0
  for (const m of logs.join("\n").matchAll(/: landed ([\d.]+) s after its work was done \((\d+) checks?(?:, (\d+) thrown away)?\)/g)) {
    landed.push(Number(m[1]))
    checks += Number(m[2])
    thrown += Number(m[3] ?? 0)
  }
  return { landed, checks, thrown }
}

/**
 * Runs every run at once; `leadSteps`, the merge queue's lead steps of all of them (FLOW_TRACE's `lead-step`
 * phases): the one lane every landing of the fleet goes through, so fewer is better at equal landings.
 */
async function runAll(runs: { cwd: string; agents: number; env: Record<string, string> }[]): Promise<{ seconds: number; logs: string[]; leadSteps: number }> {
  const start = performance.now()
  const traces = runs.map((r) => join(r.cwd, ".flow-bench-trace"))
  const procs = runs.map((r, i) =>
    Bun.spawn([FLOW, "run", "--headless", "--cli", "script", "--agents", String(r.agents)], {
      cwd: r.cwd,
      env: { ...benchEnv(), ...r.env, FLOW_TRACE: traces[i] },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    }),
  )
  const outs = await Promise.all(procs.map(async (p) => [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited] as const))
  const seconds = (performance.now() - start) / 1000
  const leadSteps = traces.reduce(
    (n, t) =>
      n +
      (existsSync(t)
        ? readFileSync(t, "utf8")
            .split("\n")
            .filter((l) => l.includes(" queue lead-step ")).length
        : 0),
    0,
  )
  return { seconds, leadSteps, logs: outs.map(([out, err, code]) => `${out}${err ? `\n${err}` : ""}${code === 0 ? "" : `\n(exit ${code})`}`) }
}

/** One machine in files with `agents` agents. */
async function files(n: number, checkS: number, agents: number, failing?: number): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-lf-file-"))
  try {
    seed(dir, n, checkS, failing)
    const { seconds, logs, leadSteps } = await runAll([{ cwd: dir, agents, env: {} }])
    return { seconds, logs, leadSteps, merges: Number(g(dir, ["rev-list", "--merges", "--count", "main"]).trim()), ...read(logs) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** `machines` clones of one shared project, each with `agents` agents. */
async function fleet(n: number, checkS: number, machines: number, agents: number, failing?: number): Promise<Outcome> {
  await using db = await freshDatabase()
  const root = mkdtempSync(join(tmpdir(), "flow-bench-lf-fleet-"))
  const remote = join(root, "remote.git")
  g(root, ["init", "-q", "--bare", "-b", "main", remote])
  const daemon = await gitDaemon(root).catch((e) => {
    rmSync(root, { recursive: true, force: true })
    throw e
  })
  try {
    const first = join(root, "seed")
    seed(first, n, checkS, failing)
    const shared = Bun.spawnSync([FLOW, "share", db.url, "--project", "bench"], { cwd: first, env: benchEnv() })
    if (shared.exitCode !== 0) throw new Error(`flow share failed: ${shared.stderr.toString()}`)
    g(first, ["add", "-A"])
    g(first, ["commit", "-qm", "share the project"])
    g(first, ["push", "-q", remote, "main"])
    const clones = Array.from({ length: machines }, (_, i) => {
      const name = `m${i + 1}`
      const path = join(root, name)
      g(root, ["clone", "-q", daemon.url("remote.git"), path])
      const home = join(root, `${name}-home`)
      mkdirSync(home)
      const who = { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: `${name}@flow.invalid`, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: `${name}@flow.invalid` }
      return { cwd: path, agents, env: { FLOW_MACHINE: name, HOME: home, ...who } }
    })
    const { seconds, logs, leadSteps } = await runAll(clones)
    return { seconds, logs, leadSteps, merges: Number(g(remote, ["rev-list", "--merges", "--count", "main"]).trim()), ...read(logs) }
  } finally {
    await daemon.stop()
    rmSync(root, { recursive: true, force: true })
  }
}

function expectMerges(name: string, o: Outcome, merges: number): void {
  if (o.merges !== merges) throw new Error(`${name}: ${o.merges} merges on main, ${merges} expected; its logs:\n${o.logs.join("\n---\n")}`)
}

const row = (name: string, o: Outcome, note = "") =>
  console.log(
    `${name.padEnd(36)} ${o.seconds.toFixed(1).padStart(6)} s  checks/merge ${(o.checks / Math.max(1, o.landed.length)).toFixed(2)}  ` +
      `lead steps/merge ${(o.leadSteps / Math.max(1, o.landed.length)).toFixed(1)}  ` +
      `done→landed p50 ${percentile(o.landed, 50).toFixed(1)} s p95 ${percentile(o.landed, 95).toFixed(1)} s${note}`,
  )
const goal = (what: string, value: number, limit: number) =>
  console.log(`  ${what}: ${value.toFixed(2)} (goal at most ${limit}) ${value <= limit ? "met" : "NOT MET"}`)

console.log("landing in a fleet: script agents, one file per task, queue_depth 8; each case against file mode in this run")
if (!values.only || values.only === "a") {
  const floor = await files(24, 2, 4)
  const two = await fleet(24, 2, 2, 2)
  expectMerges("a: files", floor, 24)
  expectMerges("a: fleet", two, 24)
  console.log("a. 24 independent tasks, a 2 s check")
  row("  files, 1 machine x 4 agents (floor)", floor)
  row("  fleet, 2 machines x 2 agents", two)
  goal("fleet / floor", two.seconds / floor.seconds, 1.15)
  goal("checks per merge (fleet)", two.checks / two.landed.length, 1.1)
}
if (!values.only || values.only === "b") {
  const floor = await files(48, 4, 4)
  const two = await fleet(48, 4, 2, 2)
  const four = await fleet(48, 4, 4, 2)
  for (const [name, o] of [
    ["b: files", floor],
    ["b: 2 machines", two],
    ["b: 4 machines", four],
  ] as const)
    expectMerges(name, o, 48)
  console.log("b. 48 independent tasks, a 4 s check that uses no CPU (sleep 4)")
  row("  files, 1 machine x 4 agents (floor)", floor)
  row("  fleet, 2 machines x 2 agents", two, `  (${(two.seconds / floor.seconds).toFixed(2)}x the floor)`)
  row("  fleet, 4 machines x 2 agents", four, `  (${(four.seconds / floor.seconds).toFixed(2)}x the floor)`)
  goal("4 machines / 2 machines", four.seconds / two.seconds, 0.6)
  goal("checks per merge (4 machines)", four.checks / four.landed.length, 1.1)
}
if (!values.only || values.only === "c") {
  const floor = await files(12, 2, 4, 5)
  const two = await fleet(12, 2, 2, 2, 5)
  expectMerges("c: files", floor, 11)
  expectMerges("c: fleet", two, 11)
  console.log("c. 12 tasks, 1 of which fails its 2 s check")
  row("  files, 1 machine x 4 agents (floor)", floor)
  row("  fleet, 2 machines x 2 agents", two)
  goal("fleet p95 done→landed / the check", percentile(two.landed, 95) / 2, 2)
}
