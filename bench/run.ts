// flow's benchmark: `npm run bench` (builds dist/flow, then runs this).
// Every case times dist/flow against a floor measured in the same run, interleaved (flow, floor, flow, ...):
// the floor is bench/floor.ts, a program that only reads tasks.yaml and parses it with Bun.YAML.parse,
// compiled with the flags of package.json's build script, like dist/flow. The machine is shared and
// noisy, so the ratio is what is compared with a goal.
// Options: --runs N (timed runs per case, default 7; or BENCH_RUNS), --warmup N (default 1; or BENCH_WARMUP),
// --only TEXT (cases whose name contains TEXT; `concurrency` names the concurrency check), --keep (keep the
// temp folders), --verbose (every run's wall time, and median CPU times).
// Exit 0 when every correctness check passed, even when a ratio misses its goal; 1 when flow exited
// non-zero, a note was lost, or the file was left invalid.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { projectAt } from "../lib/cli/project"
import { openState } from "../lib/state/state"
import {
  buildFlags,
  chainTasks,
  compile,
  generatedTasks,
  makeProject,
  measureInterleaved,
  meetsGoal,
  printHeader,
  printRow,
  ratioOf,
  removeDir,
  ROOT,
  runOnce,
  type Failure,
  type Row,
} from "./lib"

const { values: opts } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    runs: { type: "string", default: process.env.BENCH_RUNS ?? "7" },
    warmup: { type: "string", default: process.env.BENCH_WARMUP ?? "1" },
    only: { type: "string" },
    keep: { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
  },
})
const RUNS = Number(opts.runs)
const WARMUP = Number(opts.warmup)
if (!(RUNS >= 1) || !(WARMUP >= 0)) throw new Error("--runs must be ≥ 1 and --warmup ≥ 0")

// ---- fixtures: each is generated once, and every case gets its own project folder with a copy ----

type Fixture = { name: string; tasks: number; make: () => Promise<string> | string }
const GEN_1K: Fixture = { name: "generated 1,000", tasks: 1_000, make: () => generatedTasks(1_000) }
const GEN_10K: Fixture = { name: "generated 10,000", tasks: 10_000, make: () => generatedTasks(10_000) }
const CHAIN_50K: Fixture = { name: "chain 50,000", tasks: 50_000, make: () => chainTasks(50_000) }

// ---- the cases: adding one is one line ----
// cache "cold": <project>/.flow is deleted before every run; "warm": `flow validate` runs once first and
// the cache is kept (a write records its new content as valid, so later runs stay warm).
// perTask: also listed in the linearity table (ms per 1,000 tasks).

// prepare: flow arguments run (untimed) before every run, so a write case writes every time.
// runState: the project gets a .flow/state.db of past runs (every task worked once, 20 events each).
// floor: "parse" (default) is bench/floor.ts on the case's tasks.yaml; "line" is bench/line-floor.ts, a
// program that prints one line, for what reads no file (`flow --version`).
type Case = {
  floor?: "parse" | "line"
  name: string
  fixture: Fixture
  args: string[]
  cache: "cold" | "warm"
  goal?: number
  perTask?: boolean
  prepare?: string[]
  runState?: boolean
}
const CASES: Case[] = [
  { name: "--version", fixture: GEN_1K, args: ["--version"], cache: "cold", goal: 1.5, floor: "line" },
  { name: "validate 1k", fixture: GEN_1K, args: ["validate"], cache: "cold", perTask: true },
  { name: "validate 10k", fixture: GEN_10K, args: ["validate"], cache: "cold", goal: 3, perTask: true },
  { name: "validate 50k chain", fixture: CHAIN_50K, args: ["validate"], cache: "cold", perTask: true },
  { name: "validate (cached) 1k", fixture: GEN_1K, args: ["validate"], cache: "warm" },
  { name: "validate (cached) 10k", fixture: GEN_10K, args: ["validate"], cache: "warm" },
  { name: "list 1k", fixture: GEN_1K, args: ["list"], cache: "warm", goal: 1.3 },
  { name: "list 10k", fixture: GEN_10K, args: ["list"], cache: "warm", goal: 1.2 },
  { name: "list 10k, 210k run events", fixture: GEN_10K, args: ["list"], cache: "warm", goal: 1.5, runState: true },
  { name: "show 1k", fixture: GEN_1K, args: ["show", "task-00500"], cache: "warm", goal: 1.3 },
  { name: "show 10k", fixture: GEN_10K, args: ["show", "task-05000"], cache: "warm", goal: 1.2 },
  { name: "next 1k", fixture: GEN_1K, args: ["next"], cache: "warm", goal: 1.3 },
  { name: "next 10k", fixture: GEN_10K, args: ["next"], cache: "warm", goal: 1.2 },
  { name: "done 1k", fixture: GEN_1K, args: ["done", "task-00005"], cache: "warm", goal: 3, prepare: ["todo", "task-00005"] },
  { name: "done 10k", fixture: GEN_10K, args: ["done", "task-00005"], cache: "warm", goal: 3, prepare: ["todo", "task-00005"] },
  { name: "note 1k", fixture: GEN_1K, args: ["note", "task-00005", "bench note"], cache: "warm", goal: 3 },
  { name: "note 10k", fixture: GEN_10K, args: ["note", "task-00005", "bench note"], cache: "warm", goal: 3 },
]

const CONCURRENT = 100

// ---- run ----

const FLOW = join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first (npm run bench does)`)

const temp: string[] = []
const binDir = mkdtempSync(join(tmpdir(), "flow-bench-bin-"))
temp.push(binDir)
const FLOOR = compile(join(ROOT, "bench", "floor.ts"), binDir, "floor")
const LINE_FLOOR = compile(join(ROOT, "bench", "line-floor.ts"), binDir, "line-floor")

const failures: (Failure & { case: string })[] = []
const checks: { name: string; ok: boolean; detail: string }[] = []

const texts = new Map<Fixture, string>()
async function fixtureText(f: Fixture): Promise<string> {
  if (!texts.has(f)) texts.set(f, await f.make())
  return texts.get(f)!
}

const selected = CASES.filter((c) => !opts.only || c.name.includes(opts.only))
const runConcurrency = !opts.only || "concurrency".includes(opts.only) || opts.only.includes("concurrency")

console.log(
  `flow benchmark  ${new Date().toISOString()}  bun ${Bun.version}  ${cpus().length} cores  ${WARMUP} warm-up + ${RUNS} timed runs per case, flow and floor interleaved`,
)
console.log(
  `flow: ${FLOW}   floor: bench/floor.ts (read + Bun.YAML.parse; --version: bench/line-floor.ts, one console.log), built with bun build ${buildFlags().join(" ")}\n`,
)
printHeader()

const rows: (Row & { tasks: number; bytes: number; perTask?: boolean })[] = []
for (const c of selected) {
  const text = await fixtureText(c.fixture)
  const dir = await makeProject(text, c.name.replace(/\W+/g, "-"))
  temp.push(dir)
  const flowArgv = [FLOW, ...c.args]
  const stateDir = join(dir, ".flow")
  if (c.runState) await writeRunState(dir, text)
  if (c.cache === "warm") {
    const prime = await runOnce([FLOW, "validate"], dir)
    if (prime.code !== 0) failures.push({ case: c.name, argv: [FLOW, "validate"], code: prime.code, stderr: prime.stderr })
  }
  const [flow, floor] = await measureInterleaved(
    [
      {
        argv: flowArgv,
        cwd: dir,
        before: c.cache === "cold" ? () => rmSync(stateDir, { recursive: true, force: true }) : c.prepare ? () => prepare(c, dir) : undefined,
      },
      { argv: c.floor === "line" ? [LINE_FLOOR] : [FLOOR, "tasks.yaml"], cwd: dir },
    ],
    { runs: RUNS, warmup: WARMUP },
  )
  for (const f of flow.failures) failures.push({ case: c.name, ...f })
  if (floor.failures.length) throw new Error(`the floor failed on ${c.name}: ${floor.failures[0].stderr}`)
  const row = { name: c.name, flowMs: flow.ms, floorMs: floor.ms, goal: c.goal, tasks: c.fixture.tasks, bytes: text.length, perTask: c.perTask }
  rows.push(row)
  printRow(row)
  if (opts.verbose) {
    console.log(`    flow  runs: ${flow.all.map((x) => x.toFixed(0)).join(" ")}`)
    console.log(`    floor runs: ${floor.all.map((x) => x.toFixed(0)).join(" ")}`)
    console.log(
      `    cpu (user+sys) medians: flow ${flow.cpuMs.toFixed(0)} ms, floor ${floor.cpuMs.toFixed(0)} ms, ratio ${(flow.cpuMs / floor.cpuMs).toFixed(2)}`,
    )
  }
  if (c.args[0] === "note") checkNotes(c.name, dir, c.args[1], c.args.slice(2).join(" "), WARMUP + RUNS)
}

const linear = rows.filter((r) => r.perTask)
if (linear.length > 0) {
  console.log(`\nlinearity (cold validate)`)
  console.log(
    `${"case".padEnd(30)}  ${"tasks".padStart(6)}  ${"MB".padStart(5)}  ${"flow ms/1k tasks".padStart(16)}  ${"floor ms/1k tasks".padStart(17)}  ${"flow ms/MB".padStart(10)}  ${"floor ms/MB".padStart(11)}`,
  )
  for (const r of linear) {
    const mb = r.bytes / 1e6
    console.log(
      `${r.name.padEnd(30)}  ${String(r.tasks).padStart(6)}  ${mb.toFixed(1).padStart(5)}  ${((r.flowMs / r.tasks) * 1000).toFixed(1).padStart(16)}  ` +
        `${((r.floorMs / r.tasks) * 1000).toFixed(1).padStart(17)}  ${(r.flowMs / mb).toFixed(0).padStart(10)}  ${(r.floorMs / mb).toFixed(0).padStart(11)}`,
    )
  }
  const [a, b] = [linear.find((r) => r.tasks === 1_000), linear.find((r) => r.tasks === 10_000)]
  if (a && b)
    console.log(
      `marginal cost 1k → 10k: flow ${((b.flowMs - a.flowMs) / 9).toFixed(1)} ms per 1k tasks, floor ${((b.floorMs - a.floorMs) / 9).toFixed(1)} ms per 1k tasks`,
    )
}

if (runConcurrency) await concurrency()

// ---- verdicts ----

console.log("\nverdicts")
for (const r of rows.filter((r) => r.goal !== undefined)) {
  console.log(`  goal   ${r.name}: flow ${ratioOf(r).toFixed(2)}× the floor, goal ≤ ${r.goal}: ${meetsGoal(r) ? "met" : "MISSED"}`)
}
for (const c of checks) console.log(`  check  ${c.name}: ${c.detail}: ${c.ok ? "ok" : "FAILED"}`)
if (failures.length > 0) {
  console.log(`  check  flow exit codes: ${failures.length} non-zero: FAILED`)
  for (const f of failures.slice(0, 5))
    console.log(`    ${f.case}: '${f.argv.slice(1).join(" ")}' exited ${f.code}: ${f.stderr.trim().split("\n").slice(-3).join(" | ")}`)
} else console.log("  check  flow exit codes: all 0: ok")

if (opts.keep) console.log(`\nkept: ${temp.join(" ")}`)
else for (const d of temp) removeDir(d)

const correct = failures.length === 0 && checks.every((c) => c.ok)
process.exit(correct ? 0 : 1)

/** Runs a case's untimed preparation (e.g. `flow todo` before a timed `flow done`); it must succeed. */
function prepare(c: Case, dir: string): void {
  const r = Bun.spawnSync([FLOW, ...c.prepare!], { cwd: dir, stdout: "ignore", stderr: "pipe" })
  if (r.exitCode !== 0) failures.push({ case: c.name, argv: [FLOW, ...c.prepare!], code: r.exitCode ?? -1, stderr: r.stderr.toString() })
}

/**
 * A state database as runs leave it: every task assigned, its status moves and usage reports (20 events) and
 * its end, by one of three agents; one agent still on a task. Written through the run state (lib/state/), so
 * its schema is the one flow reads.
 */
async function writeRunState(dir: string, text: string): Promise<void> {
  const ids = [...text.matchAll(/^ {2}- id: (\S+)$/gm)].map((m) => m[1])
  using db = await openState(projectAt(dir))
  const at = new Date().toISOString()
  const events = ids.flatMap((id, i) => {
    const agent = `claude-${(i % 3) + 1}`
    const moves = Array.from({ length: 20 }, (_, k) =>
      k % 2
        ? { at, kind: "agent.usage", task_id: id, agent, data: { inputTokens: 1200, outputTokens: 80, costUsd: 0.0123 } }
        : { at, kind: "task.status", task_id: id, agent, data: { from: "todo", to: "in_progress" } },
    )
    return [...moves, { at, kind: "task.end", task_id: id, agent, data: { status: "done" } }]
  })
  await db.load({ questions: [], events, agents: [], merges: [], moves: [] })
  await db.agents.upsert("claude-1", { cli: "claude", current_task: ids[0] })
}

// ---- checks ----

type TaskLike = { id?: string; ai_notes?: unknown }
function notesOf(dir: string, id: string): string[] | undefined {
  const data = Bun.YAML.parse(readFileSync(join(dir, "tasks.yaml"), "utf8")) as { tasks?: TaskLike[] }
  const task = data.tasks?.find((t) => t.id === id)
  return Array.isArray(task?.ai_notes) ? (task.ai_notes as string[]) : task ? [] : undefined
}

/** After `expected` runs of `flow note <id> <text>`, the task holds that many copies of the note. */
function checkNotes(name: string, dir: string, id: string, text: string, expected: number): void {
  const got = (notesOf(dir, id) ?? []).filter((n) => n === text).length
  checks.push({ name: `${name} wrote every note`, ok: got === expected, detail: `${got} of ${expected}` })
}

/** 100 `flow note task-00001 n<i>` started at once on the 1,000-task file: all must land. */
async function concurrency(): Promise<void> {
  const dir = await makeProject(await fixtureText(GEN_1K), "concurrency")
  temp.push(dir)
  const prime = await runOnce([FLOW, "validate"], dir)
  if (prime.code !== 0) failures.push({ case: "concurrency", argv: [FLOW, "validate"], code: prime.code, stderr: prime.stderr })
  const id = "task-00001"
  const start = performance.now()
  const results = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => runOnce([FLOW, "note", id, `n${i}`], dir)))
  const wall = performance.now() - start
  const slowest = Math.max(...results.map((r) => r.ms))
  results.forEach((r, i) => {
    if (r.code !== 0) failures.push({ case: "concurrency", argv: [FLOW, "note", id, `n${i}`], code: r.code, stderr: r.stderr })
  })
  const notes = new Set(notesOf(dir, id) ?? [])
  const lost = Array.from({ length: CONCURRENT }, (_, i) => `n${i}`).filter((n) => !notes.has(n)).length
  const leftovers = readdirSync(dir).filter((f) => f.endsWith(".lock") || f.endsWith(".tmp") || f.endsWith(".takeover"))
  const after = await runOnce([FLOW, "validate"], dir)

  console.log(`\nconcurrency: ${CONCURRENT} × 'flow note ${id} n<i>' started at once on the 1,000-task file`)
  console.log(
    `  total wall ${wall.toFixed(0)} ms (${(wall / CONCURRENT).toFixed(1)} ms per note), slowest process ${slowest.toFixed(0)} ms, non-zero exits ${results.filter((r) => r.code !== 0).length}`,
  )
  console.log(`  lost: ${lost}`)
  checks.push({ name: `concurrency: ${CONCURRENT} notes at once`, ok: lost === 0, detail: `lost ${lost}` })
  checks.push({ name: "concurrency: no lock or temp files left", ok: leftovers.length === 0, detail: leftovers.length ? leftovers.join(", ") : "none" })
  checks.push({ name: "concurrency: tasks.yaml still valid", ok: after.code === 0, detail: `validate exited ${after.code}` })
}
