// The orchestrator's benchmark: `flow run` on a 200-task random DAG whose tasks only run `true` with the
// offline script agent, so what is measured is flow and git. Reports, from one run with 1 agent and one
// with 4 agents:
// - total wall time;
// - orchestration overhead per task beyond git's own commands and the scripts: (wall − git − scripts) / N,
//   from the 1-agent run (with 4 agents the parts overlap and cannot be subtracted);
// - the delay from a task becoming done to its dependent starting (median and p95, 4 agents).
// git's time is what git itself reports (GIT_TRACE2_EVENT exit events), summed over every git process.
// Usage: bun bench/run-dag.ts [--tasks N]   (needs dist/flow: npm run bench builds it)
import { Database } from "bun:sqlite"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { benchEnv, median, ROOT } from "./lib"

const { values } = parseArgs({ args: Bun.argv.slice(2), options: { tasks: { type: "string", default: "200" }, keep: { type: "boolean", default: false } } })
const N = Number(values.tasks)
const FLOW = join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first`)

/** A random DAG (fixed seed): each task depends on up to two earlier ones, about 1.5 on average. */
function dag(n: number, seed = 11): string {
  let x = seed
  const rand = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const lines = ["tasks:"]
  for (let i = 0; i < n; i++) {
    const deps = new Set<number>()
    if (i > 0) for (let k = 0; k < 2; k++) if (rand() < 0.75) deps.add(Math.floor(rand() * i))
    lines.push(`  - id: t-${i}`, `    title: Task ${i}`, "    status: todo", `    phase: ${1 + Math.floor((i / n) * 4)}`)
    if (deps.size) lines.push(`    depends_on: [${[...deps].map((d) => `t-${d}`).join(", ")}]`)
    lines.push("    instructions: |", "      ```sh", "      true", "      ```")
  }
  return `${lines.join("\n")}\n`
}

type Result = { agents: number; wallMs: number; gitMs: number; gitProcs: number; scriptMs: number; delays: number[]; code: number }

async function runOnce(agents: number): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-dag-"))
  const trace = join(dir, "..", `${dir.split("/").pop()}-git-trace.json`)
  try {
    writeFileSync(join(dir, "tasks.yaml"), dag(N))
    const g = (args: string[]) => Bun.spawnSync(["git", "-c", "user.name=b", "-c", "user.email=b@b", ...args], { cwd: dir })
    g(["init", "-q", "-b", "main"])
    g(["add", "-A"])
    g(["commit", "-qm", "dag"])
    const start = performance.now()
    const proc = Bun.spawn([FLOW, "run", "--agents", String(agents), "--cli", "script"], {
      cwd: dir,
      env: { ...benchEnv(), GIT_TRACE2_EVENT: trace },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [, , code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    const wallMs = performance.now() - start
    let gitMs = 0
    let gitProcs = 0
    for (const line of readFileSync(trace, "utf8").split("\n")) {
      if (!line.includes('"event":"exit"')) continue
      const e = JSON.parse(line) as { t_abs: number }
      gitMs += e.t_abs * 1000
      gitProcs++
    }
    const { delays: d, scriptMs } = fromEvents(dir)
    return { agents, wallMs, gitMs, gitProcs, scriptMs, delays: d, code }
  } finally {
    if (!values.keep) rmSync(dir, { recursive: true, force: true })
    rmSync(trace, { force: true })
  }
}

/**
 * From the run's event log: for each task, ms from the moment it could start (its last dependency done,
 * and its agent free: that agent's previous task done) to its start; and the agents' (scripts') own time.
 * Waiting for a busy agent is capacity, not scheduling delay, so it is not counted.
 */
function fromEvents(dir: string): { delays: number[]; scriptMs: number } {
  const db = new Database(join(dir, ".flow", "state.db"), { readonly: true })
  const rows = db
    .query<{ at: string; kind: string; task_id: string; agent: string | null; data: string }, []>(
      "SELECT at, kind, task_id, agent, data FROM events ORDER BY id",
    )
    .all()
  db.close()
  const doneAt = new Map<string, number>()
  const out: number[] = []
  const deps = new Map<string, string[]>()
  for (const t of (Bun.YAML.parse(dag(N)) as { tasks: { id: string; depends_on?: string[] }[] }).tasks) deps.set(t.id, t.depends_on ?? [])
  let scriptMs = 0
  const lastTaskOf = new Map<string, string>() // agent → the task it did before
  for (const r of rows) {
    const at = Date.parse(r.at)
    if (r.kind === "agent.exit") scriptMs += (JSON.parse(r.data) as { seconds: number }).seconds * 1000
    if (r.kind === "task.status" && JSON.parse(r.data).to === "done") doneAt.set(r.task_id, at)
    if (r.kind === "task.start" && r.agent) {
      const d = deps.get(r.task_id) ?? []
      const previous = lastTaskOf.get(r.agent)
      lastTaskOf.set(r.agent, r.task_id)
      if (!d.length || !d.every((x) => doneAt.has(x))) continue
      const freeAt = previous === undefined ? 0 : (doneAt.get(previous) ?? Infinity)
      if (freeAt === Infinity) continue // its previous task did not end done
      out.push(at - Math.max(freeAt, ...d.map((x) => doneAt.get(x)!)))
    }
  }
  return { delays: out, scriptMs }
}

/**
 * The floor: the git commands a run cannot do without, per task in order, from one Bun process with no
 * tasks.yaml, agents or scheduling: a worktree on a new branch, the merge, the worktree's removal.
 */
function gitFloor(): number {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-floor-"))
  try {
    const g = (args: string[], cwd = dir) => {
      const r = Bun.spawnSync(["git", "-c", "user.name=b", "-c", "user.email=b@b", ...args], { cwd })
      if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`)
    }
    writeFileSync(join(dir, "tasks.yaml"), dag(N))
    g(["init", "-q", "-b", "main"])
    g(["add", "-A"])
    g(["commit", "-qm", "dag"])
    const start = performance.now()
    for (let i = 0; i < N; i++) {
      const wt = join(dir, ".flow", "worktrees", `t-${i}`)
      g(["worktree", "add", "-q", "-b", `flow/t-${i}`, wt, "main"])
      g(["merge", "-q", "--no-ff", "-m", `Merge t-${i}`, `flow/t-${i}`])
      g(["worktree", "remove", wt])
    }
    return performance.now() - start
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]

console.log(`flow run benchmark: ${N}-task random DAG, script agent running 'true', dist/flow, ${new Date().toISOString()}`)
const floorMs = gitFloor()
const one = await runOnce(1)
const four = await runOnce(4)
for (const r of [one, four]) {
  console.log(
    `  ${r.agents} agent${r.agents > 1 ? "s" : " "}: wall ${(r.wallMs / 1000).toFixed(1)} s (${(r.wallMs / N).toFixed(0)} ms per task), exit ${r.code}; git ${r.gitProcs} processes, ${(r.gitMs / 1000).toFixed(1)} s; scripts ${(r.scriptMs / 1000).toFixed(1)} s`,
  )
}
console.log(
  `  floor (3 git commands per task, in order, nothing else): ${(floorMs / 1000).toFixed(1)} s; 1 agent ${(one.wallMs / floorMs).toFixed(2)}x the floor, 4 agents ${(four.wallMs / floorMs).toFixed(2)}x`,
)
const overhead = (one.wallMs - one.gitMs - one.scriptMs) / N
console.log(`  overhead per task beyond git and the scripts (1 agent): ${overhead.toFixed(0)} ms   goal ≤ 50: ${overhead <= 50 ? "met" : "MISSED"}`)
const d = four.delays
console.log(
  `  ready → started (4 agents, ${d.length} tasks; from the later of its last dependency done and its agent free): median ${median(d).toFixed(0)} ms, p95 ${p95(d).toFixed(0)} ms   goal ≤ 200: ${median(d) <= 200 ? "met" : "MISSED"}`,
)
process.exit(one.code === 0 && four.code === 0 ? 0 : 1)
