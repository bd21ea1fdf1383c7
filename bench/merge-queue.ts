// The merge queue's benchmark (docs/PERFORMANCE.md, "The merge queue"; part of `npm run bench`): `flow run` with 4 script agents on 20
// independent tasks (each writes its own file) and a check (flow.yaml `verify`) that sleeps 3 s. Three runs:
// - no check: flow's own cost for the 20 tasks (the floor under everything else);
// - the queue as configured by default (speculative: each candidate checked on top of those ahead of it);
// - a strictly serial queue (queue_depth: 1: one check at a time, each on the target).
// The ideal with 4 agents, each held by its task until the task lands: ceil(20 / 4) rounds of one check each,
// plus the no-check run. Usage: bun bench/merge-queue.ts [--tasks 20] [--agents 4] [--check 3]
//   (needs dist/flow: npm run build)
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { benchEnv, queueProject, ROOT } from "./lib"

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { tasks: { type: "string", default: "20" }, agents: { type: "string", default: "4" }, check: { type: "string", default: "3" } },
})
const N = Number(values.tasks)
const AGENTS = Number(values.agents)
const CHECK_S = Number(values.check)
const FLOW = join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first`)

function tasks(n: number): string {
  const lines = ["tasks:"]
  for (let i = 0; i < n; i++)
    lines.push(`  - id: t-${i}`, `    title: Task ${i}`, "    status: todo", "    instructions: |", "      ```sh", `      echo ${i} > f-${i}.txt`, "      ```")
  return `${lines.join("\n")}\n`
}

async function runOnce(config: string): Promise<{ seconds: number; code: number; merges: number; log: string }> {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-queue-"))
  try {
    queueProject(dir, { "tasks.yaml": tasks(N), "flow.yaml": config })
    const g = (args: string[]) => Bun.spawnSync(["git", ...args], { cwd: dir })
    const start = performance.now()
    const proc = Bun.spawn([FLOW, "run", "--agents", String(AGENTS), "--cli", "script"], { cwd: dir, env: benchEnv(), stdout: "pipe", stderr: "pipe" })
    const [log, , code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    const seconds = (performance.now() - start) / 1000
    const merges = g(["rev-list", "--merges", "--count", "main"]).stdout.toString().trim()
    return { seconds, code, merges: Number(merges), log }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const verify = `verify: { command: "sleep ${CHECK_S}", timeout: 1m }\n`
const floor = process.env.BENCH_ONLY === "speculative" ? { seconds: 0, code: 0, merges: N, log: "" } : await runOnce("")
const speculative = await runOnce(verify)
const serial = await runOnce(`${verify}queue_depth: 1\n`)
for (const [name, r] of [
  ["no check", floor],
  ["speculative", speculative],
  ["serial", serial],
] as const) {
  if (r.code !== 0 || r.merges !== N) throw new Error(`${name}: exit ${r.code}, ${r.merges} merges of ${N}; its log:\n${r.log}`)
}
const ideal = Math.ceil(N / AGENTS) * CHECK_S + floor.seconds
// The floor is the no-check run of this same invocation: under a changing load the ratios move less than the times.
const ratio = (s: number) => (floor.seconds > 0 ? `${(s / floor.seconds).toFixed(2)}x the floor` : "no floor measured")
const row = (name: string, s: number, note = "") => console.log(`${name.padEnd(34)} ${s.toFixed(1).padStart(6)} s  ${ratio(s).padEnd(18)}${note}`)
console.log(`merge queue: ${N} tasks, ${AGENTS} script agents, a ${CHECK_S} s check; floor = the same run without a check`)
row("no check (flow's own time: floor)", floor.seconds)
row("ideal with the check", ideal, `  (${Math.ceil(N / AGENTS)} rounds of ${CHECK_S} s + the floor)`)
row("speculative queue (default)", speculative.seconds, `  (${(speculative.seconds / ideal).toFixed(2)}x the ideal)`)
row("strictly serial queue (depth 1)", serial.seconds, `  (at least ${N * CHECK_S} s of checks one after another)`)
console.log(`speedup of speculative checking over the serial queue: ${(serial.seconds / speculative.seconds).toFixed(2)}x`)
