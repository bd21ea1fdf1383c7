// The sandbox's cost per agent start (issue 38, docs/SANDBOX.md): an agent that exits at once (`true`), started
// the way the run starts one (lib/cli/proc.ts spawnGroup: its own process group under the guard), with the
// sandbox of a real task's worktree (lib/sandbox/sandbox.ts: the plan read from the worktree's git files, then
// bubblewrap) against the same start without it, the floor, alternated in the same run. The cost is the
// difference of the medians; the goal is under 50 ms. The ratio is printed beside it, as every bench does.
// Usage: bun bench/sandbox.ts   (needs bwrap on PATH: Debian's bubblewrap)
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { spawnGroup } from "../lib/cli/proc"
import { sandbox } from "../lib/sandbox/sandbox"
import { claude } from "../lib/agents/claude"
import { median, printHeader, printRow } from "./lib"

const RUNS = 41
const GOAL_MS = 50

function git(cwd: string, args: string[]): void {
  const r = Bun.spawnSync(["git", "-c", "user.name=bench", "-c", "user.email=bench@flow.invalid", ...args], { cwd, stdout: "ignore", stderr: "pipe" })
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`)
}

/**
 * One start of `argv` to its exit: wall ms, and the CPU ms of the group (the guard's rusage holds what it waited
 * for: bwrap and the agent), which a loaded machine disturbs less. A failure stops the bench: a sandbox that
 * does not start is no measure.
 */
async function start(argv: string[], cwd: string, env: Record<string, string | undefined>): Promise<{ ms: number; cpuMs: number }> {
  const t0 = performance.now()
  const proc = spawnGroup(argv, { cwd, env })
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text(), new Response(proc.stdout).text()])
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${err}`)
  return { ms: performance.now() - t0, cpuMs: Number(proc.resourceUsage()?.cpuTime.total ?? 0n) / 1000 }
}

const dir = mkdtempSync(join(tmpdir(), "flow-bench-sandbox-"))
try {
  const repo = join(dir, "repo")
  Bun.spawnSync(["mkdir", "-p", repo, join(dir, "home")])
  git(repo, ["init", "-q", "-b", "main"])
  git(repo, ["commit", "-q", "--allow-empty", "-m", "initial"])
  for (let i = 0; i < 20; i++) git(repo, ["branch", `flow/other-${i}`]) // siblings of the task's branch, each pinned read-only
  const worktree = join(repo, ".flow", "worktrees", "task")
  git(repo, ["worktree", "add", "-q", "-b", "flow/task", worktree])
  const env = { HOME: join(dir, "home"), PATH: process.env.PATH }
  // The whole start as the run makes it: the plan (git files, the CLI's folders) and bwrap, each time.
  const boxed = () => sandbox({ settings: { network: "full", env: [] }, worktree, agent: claude.sandbox, own: [], env: { ...process.env, ...env } })
  const plain: { ms: number; cpuMs: number }[] = []
  const sandboxed: { ms: number; cpuMs: number }[] = []
  for (let i = -2; i < RUNS; i++) {
    const a = await start(["true"], worktree, env)
    const t0 = performance.now()
    const box = boxed()
    const b = await start(box.wrap(["true"]), worktree, box.env(env))
    if (i >= 0) plain.push(a), sandboxed.push({ ms: performance.now() - t0, cpuMs: b.cpuMs }) // the plan's reads included
  }
  const wall = { flowMs: median(sandboxed.map((r) => r.ms)), floorMs: median(plain.map((r) => r.ms)) }
  const cpu = { flowMs: median(sandboxed.map((r) => r.cpuMs)), floorMs: median(plain.map((r) => r.cpuMs)) }
  printHeader()
  printRow({ name: "agent start, sandboxed (wall)", ...wall })
  printRow({ name: "agent start, sandboxed (CPU)", ...cpu })
  const load = (await Bun.file("/proc/loadavg").text()).split(" ")[0]
  for (const [what, r] of [
    ["wall", wall],
    ["CPU", cpu],
  ] as const) {
    const cost = r.flowMs - r.floorMs
    console.log(`sandbox cost per agent start, ${what}: ${cost.toFixed(1)} ms (medians of ${RUNS}, goal < ${GOAL_MS} ms): ${cost < GOAL_MS ? "ok" : "OVER"}`)
  }
  console.log(`load average at the end: ${load}`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
