// Batches of the merge queue (docs/RUN.md, "Batches"; docs/PERFORMANCE.md): `flow run` with 4 script agents on 24
// independent tasks and a check that sleeps 2 s, once with one check per candidate (batch 1, the default) and once
// with `queue: { batch: 4 }`, side by side on the same work. Prints each run's checks per merge (the queue report's,
// every check started counted, thrown away ones too) and their ratio; the goal is at most 0.35 checks per merge
// with batch 4. Usage: bun bench/queue-batch.ts [--tasks 24] [--agents 4] [--check 2]   (needs dist/flow: npm run build)
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { benchEnv, queueProject, ROOT } from "./lib"

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { tasks: { type: "string", default: "24" }, agents: { type: "string", default: "4" }, check: { type: "string", default: "2" } },
})
const N = Number(values.tasks)
const FLOW = join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first`)

const tasks = ["tasks:"]
for (let i = 0; i < N; i++) tasks.push(`  - { id: t-${i}, title: Task ${i}, status: todo, instructions: "\`\`\`sh\\necho ${i} > f-${i}.txt\\n\`\`\`" }`)

/** One run on a fresh repository: its time and the queue report's checks per merge. */
async function runOnce(queue: string): Promise<{ seconds: number; perMerge: number; report: string }> {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-batch-"))
  try {
    queueProject(dir, { "tasks.yaml": `${tasks.join("\n")}\n`, "flow.yaml": `verify: { command: "sleep ${values.check}", timeout: 1m }\n${queue}` })
    const start = performance.now()
    const proc = Bun.spawn([FLOW, "run", "--headless", "--agents", values.agents!, "--cli", "script"], {
      cwd: dir,
      env: benchEnv(),
      stdout: "pipe",
      stderr: "pipe",
    })
    const [log, , code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    const report = log.split("\n").find((l) => l.includes("run: merge queue into main:")) ?? ""
    const perMerge = Number(/([\d.]+) checks per merge/.exec(report)?.[1] ?? Number.NaN)
    if (code !== 0 || !report.includes(`${N} landed`)) throw new Error(`exit ${code}, ${queue || "batch 1"}; its log:\n${log}`)
    return { seconds: (performance.now() - start) / 1000, perMerge, report: report.replace(/^\S+ /, "") }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const one = await runOnce("")
const four = await runOnce("queue: { batch: 4 }\n")
console.log(`merge queue batches: ${N} tasks, ${values.agents} script agents, a ${values.check} s check`)
for (const [name, r] of [
  ["batch 1 (one check per candidate)", one],
  ["batch 4", four],
] as const)
  console.log(`${name.padEnd(34)} ${r.seconds.toFixed(1).padStart(6)} s  ${r.perMerge.toFixed(2)} checks per merge  (${r.report})`)
console.log(`checks per merge with batch 4: ${four.perMerge.toFixed(2)} (goal at most 0.35), ${(four.perMerge / one.perMerge).toFixed(2)}x batch 1's`)
