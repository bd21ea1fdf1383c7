// Landing at git's own cost (issue 20): `flow run` against the same git work done by a shell loop, one task
// after another, measured in the same run on this machine:
// - 40 independent tasks that each commit one file, on 4 script agents, vs the serial loop (worktree add -b,
//   write, add, commit, merge --no-ff, worktree remove, branch -D per task). Goal: at most 1.2x the loop.
// - 4 chains of 6 one-second tasks on 4 agents vs the ideal (6 s: one chain's length). Goal: at most 1.15x.
// Usage: bun bench/landing.ts [--trace]   (needs dist/flow: npm run bench builds it; --trace also prints where
// a task's time goes, phase by phase, from FLOW_TRACE)
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { benchEnv, median, printHeader, printRow, ROOT, type Row } from "./lib"

// BENCH_FLOW: another build to compare (the same bench run on an older commit's binary).
const FLOW = process.env.BENCH_FLOW ?? join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first`)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)

const task = (id: string, script: string, deps: string[] = []) =>
  [
    `  - id: ${id}`,
    `    title: Task ${id}`,
    "    status: todo",
    ...(deps.length ? [`    depends_on: [${deps.join(", ")}]`] : []),
    "    instructions: |",
    "      ```sh",
    ...script.split("\n").map((l) => `      ${l}`),
    "      ```",
  ].join("\n")

const independent = (n: number) => `tasks:\n${Array.from({ length: n }, (_, i) => task(`t${i}`, `echo ${i} > f${i}.txt`)).join("\n")}\n`
const chains = (k: number, len: number) =>
  `tasks:\n${Array.from({ length: k * len }, (_, i) => {
    const c = i % k
    const j = Math.floor(i / k)
    return task(`c${c}-${j}`, `sleep 1\necho ${i} > c${c}-${j}.txt`, j > 0 ? [`c${c}-${j - 1}`] : [])
  }).join("\n")}\n`

function repo(tasksYaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), "flow-bench-landing-"))
  writeFileSync(join(dir, "tasks.yaml"), tasksYaml)
  writeFileSync(join(dir, ".gitignore"), ".flow/\n")
  const g = (args: string[]) => Bun.spawnSync(["git", "-c", "user.name=b", "-c", "user.email=b@b", ...args], { cwd: dir })
  g(["init", "-q", "-b", "main"])
  g(["add", "-A"])
  g(["commit", "-qm", "tasks"])
  return dir
}

/**
 * CPU time (user + system) of each process and every process it waited for (git, the agents), by case: what a
 * busy machine disturbs less than wall time, and on 2 shared cores what decides the wall time in the end.
 */
const cpu = new Map<string, number[]>()
const cpuMs = (u: { cpuTime: { total: number | bigint } } | undefined) => Number(u?.cpuTime.total ?? 0) / 1000

/** With --trace, each flow run's FLOW_TRACE lines by case (lib/cli/trace.ts): the medians of each phase are printed. */
const TRACE = process.argv.includes("--trace")
const traces = new Map<string, string[]>()

async function flowRun(tasksYaml: string, agents: number, label: string): Promise<number> {
  const dir = repo(tasksYaml)
  const trace = `${dir}.trace`
  try {
    const start = performance.now()
    const proc = Bun.spawn([FLOW, "run", "--agents", String(agents), "--cli", "script", "--headless"], {
      cwd: dir,
      env: { ...benchEnv(), ...(TRACE ? { FLOW_TRACE: trace } : {}) },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) throw new Error(`flow run exited ${code}:\n${err}\n${out.slice(-2000)}`)
    const ms = performance.now() - start
    cpu.set(label, [...(cpu.get(label) ?? []), cpuMs(proc.resourceUsage())])
    if (TRACE) traces.set(label, [...(traces.get(label) ?? []), ...readFileSync(trace, "utf8").trim().split("\n")])
    return ms
  } finally {
    rmSync(dir, { recursive: true, force: true })
    rmSync(trace, { force: true })
  }
}

/** Each phase's median and total per task, from the trace lines `<at> <task> <phase> <ms>`. */
function printPhases(label: string, lines: string[]): void {
  const by = new Map<string, number[]>()
  const own: number[] = []
  for (const [, task, phase, ms] of lines.map((l) => l.split(" "))) {
    if (task === "run") own.push(Number(ms))
    else by.set(phase, [...(by.get(phase) ?? []), Number(ms)])
  }
  console.log(
    `${label}: ${[...by].map(([p, ms]) => `${p} ${median(ms).toFixed(0)} ms`).join(", ")} (medians per task, waits included); flow's own CPU ${median(own).toFixed(0)} ms per run`,
  )
}

/** The serial git loop: what landing n one-file tasks costs git alone, one after another. */
function gitLoop(n: number): number {
  const dir = repo(independent(n))
  try {
    const start = performance.now()
    const script = `set -e
for i in $(seq 0 ${n - 1}); do
  git worktree add -q -b flow/t$i .flow/worktrees/t$i main
  echo $i > .flow/worktrees/t$i/f$i.txt
  git -C .flow/worktrees/t$i add -A
  git -C .flow/worktrees/t$i -c user.name=b -c user.email=b@b commit -qm t$i
  git -c user.name=b -c user.email=b@b merge -q --no-ff --no-edit -m "Merge t$i" flow/t$i
  git worktree remove .flow/worktrees/t$i
  git branch -q -D flow/t$i
done`
    const r = Bun.spawnSync(["bash", "-c", script], { cwd: dir })
    if (r.exitCode !== 0) throw new Error(`the git loop failed: ${r.stderr}`)
    cpu.set("git loop", [...(cpu.get("git loop") ?? []), cpuMs(r.resourceUsage)])
    return performance.now() - start
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const rows: Row[] = []
const flowInd: number[] = []
const loop: number[] = []
const flowChain: number[] = []
// Each round measures the loop and both flow cases back to back, so a round's ratio compares like with like
// on a shared machine; every round is printed with the load average it ran under, then the medians.
const load = () => loadavg()[0].toFixed(1)
for (let i = 0; i < RUNS; i++) {
  const before = load()
  loop.push(gitLoop(40))
  flowInd.push(await flowRun(independent(40), 4, "40 one-file tasks"))
  flowChain.push(await flowRun(chains(4, 6), 4, "4 chains x 6"))
  const [l, f, c] = [loop.at(-1)!, flowInd.at(-1)!, flowChain.at(-1)!]
  console.log(
    `round ${i + 1} (load ${before} → ${load()}): git loop ${(l / 1000).toFixed(1)} s, flow ${(f / 1000).toFixed(1)} s (${(f / l).toFixed(2)}x); ` +
      `chains ${(c / 1000).toFixed(1)} s (${(c / 6000).toFixed(2)}x the ideal, ${((c - 6000) / 6).toFixed(0)} ms per link beyond its second)`,
  )
}
rows.push({ name: "40 one-file tasks, 4 agents vs serial git loop", flowMs: median(flowInd), floorMs: median(loop), goal: 1.2 })
rows.push({ name: "4 chains x 6 one-second tasks vs ideal 6 s", flowMs: median(flowChain), floorMs: 6000, goal: 1.15 })
const ratios = flowInd.map((f, i) => f / loop[i])
console.log(
  `independent ratio per round: ${ratios.map((r) => r.toFixed(2)).join(", ")}; chains per round: ${flowChain.map((c) => (c / 6000).toFixed(2)).join(", ")}`,
)
console.log(`CPU time (median, all processes): ${[...cpu].map(([label, ms]) => `${label} ${(median(ms) / 1000).toFixed(2)} s`).join(", ")}`)
for (const [label, lines] of traces) printPhases(label, lines)
printHeader()
for (const r of rows) printRow(r)
