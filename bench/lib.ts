// Shared helpers of the benchmark (bench/run.ts): timing spawned commands, temp project folders holding
// a tasks.yaml, the 50,000-long chain fixture, and the aligned result rows.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { BUILD_FLAGS } from "../scripts/build"

export const ROOT = resolve(import.meta.dir, "..")
/** The shared task generator, beside the checkout; FLOW_GEN_TASKS names it from elsewhere (a worktree). */
export const GEN_TASKS = process.env.FLOW_GEN_TASKS ?? resolve(ROOT, "..", "shared", "tools", "gen-tasks.ts")

/** The environment flow runs in: no FLOW_PROJECT (the working directory picks the project), no colour. */
export function benchEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "FLOW_PROJECT") env[k] = v
  env.NO_COLOR = "1"
  return env
}

/** ms: wall time; cpuMs: the child's user + system CPU time (less disturbed by other load than wall time). */
export type Run = { ms: number; cpuMs: number; code: number; stderr: string }

/** One spawn of `argv` in `cwd`, timed from just before Bun.spawn to the process's exit. stdout is discarded. */
export async function runOnce(argv: string[], cwd: string): Promise<Run> {
  const start = performance.now()
  const proc = Bun.spawn(argv, { cwd, env: benchEnv(), stdin: "ignore", stdout: "ignore", stderr: "pipe" })
  const stderrText = new Response(proc.stderr).text()
  const code = await proc.exited
  const ms = performance.now() - start
  const cpuMs = Number(proc.resourceUsage()?.cpuTime.total ?? 0n) / 1000
  return { ms, cpuMs, code, stderr: await stderrText }
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

export type MeasureOptions = {
  cwd: string
  /** timed runs (default 7) */
  runs?: number
  /** untimed runs first (default 1) */
  warmup?: number
  /** called, untimed, before every run (warm-up included), e.g. to delete a cache */
  before?: () => void | Promise<void>
}

/** A command's failure: which command, its exit code, and the end of its stderr. */
export type Failure = { argv: string[]; code: number; stderr: string }

/** Median wall time in ms of `argv` over `runs` runs after `warmup` runs; failures are collected, not thrown. */
export async function measure(argv: string[], opts: MeasureOptions): Promise<Measured> {
  const [result] = await measureInterleaved([{ argv, cwd: opts.cwd, before: opts.before }], opts)
  return result
}

export type Subject = { argv: string[]; cwd: string; before?: () => void | Promise<void> }

/** ms: median wall time; all: every timed run's wall time; cpuMs: median CPU time; failures: non-zero exits. */
export type Measured = { ms: number; all: number[]; cpuMs: number; cpu: number[]; failures: Failure[] }

/**
 * Times several commands in turn, A B A B ..., so that the noise of a shared machine falls on all of them
 * alike. Returns, per subject, the median of the timed runs, every timed run, and any non-zero exits.
 */
export async function measureInterleaved(subjects: Subject[], { runs = 7, warmup = 1 }: { runs?: number; warmup?: number } = {}): Promise<Measured[]> {
  const out: Measured[] = subjects.map(() => ({ ms: 0, all: [], cpuMs: 0, cpu: [], failures: [] }))
  for (let r = 0; r < warmup + runs; r++) {
    for (const [i, s] of subjects.entries()) {
      await s.before?.()
      const run = await runOnce(s.argv, s.cwd)
      if (run.code !== 0) out[i].failures.push({ argv: s.argv, code: run.code, stderr: run.stderr.slice(-2000) })
      if (r >= warmup) {
        out[i].all.push(run.ms)
        out[i].cpu.push(run.cpuMs)
      }
    }
  }
  for (const o of out) [o.ms, o.cpuMs] = [median(o.all), median(o.cpu)]
  return out
}

/** A temp project folder: `git init`, and `tasksYaml` (a text, or a fixture file to copy) as tasks.yaml. */
export async function makeProject(tasksYaml: string | { file: string }, label = "bench"): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `flow-${label}-`))
  const text = typeof tasksYaml === "string" ? tasksYaml : readFileSync(tasksYaml.file, "utf8")
  writeFileSync(join(dir, "tasks.yaml"), text)
  const git = Bun.spawnSync(["git", "init", "-q", "-b", "main"], { cwd: dir, stdout: "ignore", stderr: "pipe" })
  if (git.exitCode !== 0) throw new Error(`git init in ${dir} failed: ${git.stderr.toString()}`)
  return dir
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true })
}

/** The text of `n` realistic tasks (about 400 bytes each, random DAG) from shared/tools/gen-tasks.ts. */
export async function generatedTasks(n: number, seed = 7): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "flow-gen-"))
  try {
    const out = join(dir, "tasks.yaml")
    const proc = Bun.spawnSync([process.execPath, GEN_TASKS, String(n), out, String(seed)], { stdout: "ignore", stderr: "pipe" })
    if (proc.exitCode !== 0) throw new Error(`gen-tasks ${n} failed: ${proc.stderr.toString()}`)
    return readFileSync(out, "utf8")
  } finally {
    removeDir(dir)
  }
}

export const taskId = (i: number) => `task-${String(i).padStart(5, "0")}`

/** `n` small tasks in one dependency chain: task-00000 ← task-00001 ← ... (each depends on the previous). */
export function chainTasks(n: number): string {
  const parts = ["# a dependency chain: each task depends on the previous one\ntasks:\n"]
  for (let i = 0; i < n; i++) {
    parts.push(`  - id: ${taskId(i)}\n    title: Step ${i} of the chain\n    status: todo\n`)
    if (i > 0) parts.push(`    depends_on: [${taskId(i - 1)}]\n`)
    parts.push(`    instructions: Do step ${i} after step ${i - 1}.\n`)
  }
  return parts.join("")
}

/** The flags `npm run build` compiles dist/flow with (scripts/build.ts), so a floor is built like dist/flow. */
export function buildFlags(): string[] {
  return [...BUILD_FLAGS]
}

/** Compiles a TypeScript entry with the same flags as `npm run build` into `outDir`; returns the binary's path. */
export function compile(entry: string, outDir: string, name: string, flags = buildFlags()): string {
  const outfile = join(outDir, name)
  const proc = Bun.spawnSync([process.execPath, "build", ...flags, entry, "--outfile", outfile], { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
  if (proc.exitCode !== 0) throw new Error(`compiling ${entry} failed:\n${proc.stdout.toString()}${proc.stderr.toString()}`)
  return outfile
}

// ---- printing ----

export type Row = { name: string; flowMs: number; floorMs: number; goal?: number }

const COLS = [
  { head: "case", width: 30, left: true },
  { head: "flow_ms", width: 9 },
  { head: "floor_ms", width: 9 },
  { head: "ratio", width: 7 },
  { head: "goal", width: 6 },
  { head: "", width: 5, left: true },
]

function line(cells: string[]): string {
  return cells
    .map((c, i) => (COLS[i].left ? c.padEnd(COLS[i].width) : c.padStart(COLS[i].width)))
    .join("  ")
    .trimEnd()
}

export function printHeader(): void {
  console.log(line(COLS.map((c) => (c.head === "" ? "ok/OVER" : c.head))))
}

export const ratioOf = (r: Row) => r.flowMs / r.floorMs
export const meetsGoal = (r: Row) => r.goal === undefined || ratioOf(r) <= r.goal

/** One aligned row: `case  flow_ms  floor_ms  ratio  goal  ok/OVER` (goal and verdict `-` when the case has none). */
export function printRow(r: Row): void {
  const ratio = ratioOf(r)
  const verdict = r.goal === undefined ? "-" : meetsGoal(r) ? "ok" : "OVER"
  console.log(line([r.name, r.flowMs.toFixed(0), r.floorMs.toFixed(0), ratio.toFixed(2), r.goal === undefined ? "-" : `≤ ${r.goal}`, verdict]))
}

/** A git repository at `dir` with `files` (and flow.yaml kept out of it) in one commit on main: a queue bench's project. */
export function queueProject(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries({ ...files, ".gitignore": "flow.yaml\n" })) writeFileSync(join(dir, name), text)
  const g = (args: string[]) => Bun.spawnSync(["git", "-c", "user.name=b", "-c", "user.email=b@b", ...args], { cwd: dir })
  g(["init", "-q", "-b", "main"])
  g(["add", "-A"])
  g(["commit", "-qm", "start"])
}
