// Fleet mode's benchmark (docs/PERFORMANCE.md, "Fleet"; part of `npm run bench`): how fast runs sharing a
// graph in PostgreSQL divide and finish its tasks, against the same work in files.
// - shared: `--procs` processes (4) with `--loops` claimers each (4: 16 agents), over `--tasks` (1,000)
//   independent tasks. Each loop does what a fleet run's worker does around an agent that takes no time: a
//   claim (PgClaims.claim, the candidates from availableTasks on its process's cached graph), the fenced write
//   of done (the worker's mutate: applyStatus with the claim's fence), the release.
// - file (the floor): one process with as many loops over tasks.yaml: files have no claims (one run holds a
//   project), so each loop takes the run's next task and writes assigned, then done, under the file's lock,
//   the only arbiter there is.
// Goals from issue 22: at least 100 claims a second, and a task's overhead in shared mode within 2x the
// file mode's (wall ms per task, both measured in this run). A PostgreSQL server is started for the run as the
// tests start theirs (test/postgres.ts); without one the benchmark says so and exits 0.
// Usage: bun bench/fleet.ts [--tasks 1000] [--procs 4] [--loops 4] [--runs 3]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { projectAt } from "../lib/cli/project"
import { availableTasks } from "../lib/graph/availability"
import { indexTasks, type TaskFile } from "../lib/model/task-index"
import { FileStore } from "../lib/store/file/file-store"
import { closeDatabases, database, widenPools } from "../lib/store/postgres/connection"
import { PgTaskStore } from "../lib/store/postgres/pg-store"
import { createProject } from "../lib/store/postgres/share"
import { parseUrl } from "../lib/store/postgres/url"
import { type SharedSetting, sharedSetting } from "../lib/store/setting"
import type { TaskStore } from "../lib/store/store"
import { applyStatus } from "../lib/store/transitions"
import { freshDatabase, HAVE_POSTGRES } from "../test/postgres"
import { ready, together } from "../test/together"
import { median } from "./lib"

const KEY = "bench"
const NOW = "2026-01-01T00:00:00.000Z"

/** What one process reports: its loops' tasks and every operation's time in ms. */
type Report = { done: string[]; claim: number[]; write: number[]; release: number[] }

function tasks(n: number): string {
  const lines = ["tasks:"]
  for (let i = 0; i < n; i++)
    lines.push(`  - id: t-${String(i).padStart(5, "0")}`, `    title: Task ${i}`, "    status: todo", `    instructions: Write file ${i}.`)
  return `${lines.join("\n")}\n`
}

async function timed<T>(into: number[], fn: () => Promise<T>): Promise<T> {
  const start = performance.now()
  const out = await fn()
  into.push(performance.now() - start)
  return out
}

/** A process of the shared mode: `loops` claimers over the project until no task is left to claim. */
async function sharedWorker(url: string, name: string, loops: number): Promise<Report> {
  widenPools() // a run's process, whose workers query at once
  const store = PgTaskStore.open(settingOf(url))
  let candidates = availableTasks(indexTasks((await store.read()).data)).map((e) => e.task.id)
  const report: Report = { done: [], claim: [], write: [], release: [] }
  await ready()
  await Promise.all(
    Array.from({ length: loops }, async (_, n) => {
      const who = { run: `${name}-${n}`, agent: `agent-${n}` }
      for (;;) {
        const fence = await timed(report.claim, () => store.claims.claim(candidates, who, 60_000))
        if (!fence) return
        await timed(report.write, () => store.mutate("done", (e) => applyStatus(e, fence.taskId, "done", NOW), fence))
        await timed(report.release, () => store.claims.release(fence))
        // The process's own finished tasks leave its list, as a run's workers drop what they ran.
        candidates = candidates.filter((id) => id !== fence.taskId)
        report.done.push(fence.taskId)
      }
    }),
  )
  await closeDatabases()
  return report
}

/** The file mode: `loops` loops in one process, each taking the run's next task: assigned, then done. */
async function fileWorker(dir: string, loops: number): Promise<Report> {
  const store: TaskStore = new FileStore(projectAt(dir))
  const candidates = availableTasks(indexTasks((await store.read()).data)).map((e) => e.task.id)
  const report: Report = { done: [], claim: [], write: [], release: [] }
  let next = 0
  await ready()
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (next < candidates.length) {
        const id = candidates[next++]
        await timed(report.claim, () => store.mutate("assign", (e) => applyStatus(e, id, "assigned", NOW)))
        await timed(report.write, () => store.mutate("done", (e) => applyStatus(e, id, "done", NOW)))
        report.done.push(id)
      }
    }),
  )
  return report
}

function settingOf(url: string): SharedSetting {
  return sharedSetting(projectAt(tmpdir()), parseUrl(url, "bench"), KEY, undefined)
}

/** Runs the workers of a mode together (test/together.ts): the wall time from their start to the last exit. */
async function race(argvs: string[][]): Promise<{ ms: number; reports: Report[] }> {
  const { ms, outputs } = await together(argvs.map((argv) => [import.meta.path, ...argv]))
  return { ms, reports: outputs.map((o) => JSON.parse(o) as Report) }
}

/** The shared mode once, on a fresh database: its wall time, and every task done exactly once. */
async function sharedRun(n: number, procs: number, loops: number): Promise<{ ms: number; reports: Report[] }> {
  await using db = await freshDatabase()
  const setting = settingOf(db.url)
  const text = tasks(n)
  await database(setting).run((sql) => sql.begin((tx) => createProject(tx, setting, Bun.YAML.parse(text) as TaskFile, text)))
  const out = await race(Array.from({ length: procs }, (_, i) => ["--shared-worker", db.url, `p${i + 1}`, String(loops)]))
  const [{ done }] = await db.sql`SELECT count(*)::int AS done FROM tasks WHERE project = ${KEY} AND status = 'done'`
  check("shared", out.reports, n, done)
  return out
}

async function fileRun(n: number, loops: number): Promise<{ ms: number; reports: Report[] }> {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-fleet-"))
  try {
    writeFileSync(join(dir, "tasks.yaml"), tasks(n))
    const out = await race([["--file-worker", dir, String(loops)]])
    const { data } = await new FileStore(projectAt(dir)).read()
    check("file", out.reports, n, data.tasks.filter((t) => t.status === "done").length)
    return out
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Every task done, none twice: a benchmark of a broken claim measures nothing. */
function check(mode: string, reports: Report[], n: number, doneInStore: number): void {
  const done = reports.flatMap((r) => r.done)
  if (done.length !== n || new Set(done).size !== n || doneInStore !== n) {
    throw new Error(`${mode}: ${done.length} tasks finished (${new Set(done).size} distinct), ${doneInStore} done in the store, of ${n}`)
  }
}

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  allowPositionals: true,
  options: {
    tasks: { type: "string", default: "1000" },
    procs: { type: "string", default: "4" },
    loops: { type: "string", default: "4" },
    runs: { type: "string", default: "3" },
    "shared-worker": { type: "boolean" },
    "file-worker": { type: "boolean" },
  },
})
const argv = Bun.argv.slice(3)
if (values["shared-worker"]) {
  process.stdout.write(`${JSON.stringify(await sharedWorker(argv[0], argv[1], Number(argv[2])))}\n`)
} else if (values["file-worker"]) {
  process.stdout.write(`${JSON.stringify(await fileWorker(argv[0], Number(argv[1])))}\n`)
} else if (!HAVE_POSTGRES) {
  console.log("fleet: skipped, no PostgreSQL here (PG_BIN, or Debian's postgresql; scripts/test-deps.sh installs it)")
} else {
  const [n, procs, loops, runs] = [Number(values.tasks), Number(values.procs), Number(values.loops), Number(values.runs)]
  const agents = procs * loops
  // Shared and file alternate, so that the noise of a shared machine falls on both alike; medians of the runs.
  const shared: { ms: number; reports: Report[] }[] = []
  const file: { ms: number; reports: Report[] }[] = []
  for (let r = 0; r < runs; r++) {
    shared.push(await sharedRun(n, procs, loops))
    file.push(await fileRun(n, agents))
  }
  const sharedMs = median(shared.map((s) => s.ms))
  const fileMs = median(file.map((f) => f.ms))
  const ops = (runs: { reports: Report[] }[], k: keyof Omit<Report, "done">) => median(runs.flatMap((x) => x.reports.flatMap((r) => r[k])))
  const perSecond = n / (sharedMs / 1000)
  const ratio = sharedMs / fileMs
  console.log(`fleet: ${n} independent tasks, ${agents} agents; medians of ${runs} runs of each mode, alternated`)
  console.log(`shared (${procs} processes x ${loops} loops)  ${(sharedMs / 1000).toFixed(2).padStart(6)} s  ${(sharedMs / n).toFixed(2)} ms/task`)
  console.log(`  claims/s ${perSecond.toFixed(0)}, completions/s ${perSecond.toFixed(0)}`)
  console.log(
    `  per operation (median ms): claim ${ops(shared, "claim").toFixed(2)}, fenced done ${ops(shared, "write").toFixed(2)}, release ${ops(shared, "release").toFixed(2)}`,
  )
  console.log(`file (1 process x ${agents} loops, floor)   ${(fileMs / 1000).toFixed(2).padStart(6)} s  ${(fileMs / n).toFixed(2)} ms/task`)
  console.log(
    `  completions/s ${(n / (fileMs / 1000)).toFixed(0)}; per operation (median ms): assigned ${ops(file, "claim").toFixed(2)}, done ${ops(file, "write").toFixed(2)}`,
  )
  console.log(`overhead per task, shared / file: ${ratio.toFixed(2)}x`)
  console.log("verdicts:")
  console.log(`  claims/s >= 100: ${perSecond >= 100 ? "met" : "MISSED"} (${perSecond.toFixed(0)})`)
  console.log(`  shared overhead <= 2x file: ${ratio <= 2 ? "met" : "MISSED"} (${ratio.toFixed(2)}x)`)
}
