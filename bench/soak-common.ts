// What the soak's cases share (bench/soak.ts, bench/soak-locks.ts): the sizes, running flow, temp projects,
// a small tmpfs to fill, and a writer stopped while it holds the lock.
import { spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const ROOT = resolve(import.meta.dir, "..")
export type Row = { name: string; runs: number; failures: number; lost: number; note?: string }
export type Sizes = { diskTries: number; kills: number; lockRuns: number; writers: number; tasks: number; fuzz: number; cliSample: number }
export const FULL: Sizes = { diskTries: 8, kills: 100, lockRuns: 10, writers: 100, tasks: 10_000, fuzz: 2_000, cliSample: 40 }
export const SMALL: Sizes = { diskTries: 2, kills: 8, lockRuns: 2, writers: 12, tasks: 1_000, fuzz: 150, cliSample: 4 }

export const flowArgv = () => (process.env.FLOW_BIN ? [resolve(ROOT, process.env.FLOW_BIN)] : [process.execPath, join(ROOT, "flow.ts")])
export const env = () => ({ ...process.env, NO_COLOR: "1", FLOW_PROJECT: "" }) as Record<string, string>

/** `flow <args>` in `cwd`; with `timeoutMs`, a process still running then is killed (a hang counts as exit 137). */
export async function flow(cwd: string, args: string[], timeoutMs?: number): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = Bun.spawn([...flowArgv(), ...args], { cwd, env: env(), stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: timeoutMs })
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, stdout, stderr }
}

/** Synthetic tasks like /work/shared/tools/gen-tasks.ts makes (about 430 bytes each), without depending on that tool. */
export function genTasks(n: number): string {
  const id = (i: number) => `task-${String(i).padStart(5, "0")}`
  let y = "# generated\ntasks:\n"
  for (let i = 0; i < n; i++) {
    y += `  - id: ${id(i)}\n    title: Implement component ${i} of the service\n    status: ${i % 5 === 0 ? "in_progress" : "todo"}\n    phase: ${1 + Math.floor((i * 10) / n)}\n`
    if (i > 0) y += `    depends_on: [${id(Math.floor(i / 2))}]\n`
    y += `    instructions: |\n      Build component ${i}. Read the PRD section on it, write the module, add unit tests,\n      and keep the public interface small. Run the whole test suite before calling done.\n`
    y += `    acceptance_criteria:\n      - tests for component ${i} pass\n      - no lint warnings\n`
  }
  return y
}

export function project(text: string, under = tmpdir()): string {
  const dir = mkdtempSync(join(under, "flow-soak-"))
  writeFileSync(join(dir, "tasks.yaml"), text)
  return dir
}

export const leftovers = (dir: string) => readdirSync(dir).filter((f) => f.startsWith("tasks.yaml.") && f !== "tasks.yaml.lock.takeover")
export const taskCount = (text: string) => {
  try {
    return (Bun.YAML.parse(text) as { tasks: unknown[] }).tasks.length
  } catch {
    return -1
  }
}

/** Runs `fn` with a fresh tmpfs of `size` mounted (root only); a row saying why it was skipped otherwise. */
export async function withTmpfs(size: string, name: string, fn: (mnt: string) => Promise<Row>): Promise<Row> {
  if (process.getuid?.() !== 0) return { name, runs: 0, failures: 0, lost: 0, note: "skipped: needs root to mount a tmpfs" }
  const mnt = mkdtempSync(join(tmpdir(), "flow-soak-tmpfs-"))
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", mnt])
  if (mounted.status !== 0) {
    rmSync(mnt, { recursive: true, force: true })
    return { name, runs: 0, failures: 0, lost: 0, note: `skipped: mount failed (${mounted.stderr.toString().trim()})` }
  }
  try {
    return await fn(mnt)
  } finally {
    spawnSync("umount", [mnt])
    rmSync(mnt, { recursive: true, force: true })
  }
}

/** Fills the file system of `file` (by writing `file`) until `leave` bytes are free; 0 takes the last blocks too. */
export function fillDisk(file: string, leave: number): void {
  const df = spawnSync("df", ["--output=avail", "-B1", resolve(file, "..")])
    .stdout.toString()
    .trim()
    .split("\n")[1]
  const size = Math.max(0, Number(df) - leave)
  try {
    writeFileSync(file, Buffer.alloc(size))
  } catch {}
  if (leave === 0) {
    // Take the last blocks too (df rounds).
    try {
      writeFileSync(file, Buffer.alloc(1 << 16), { flag: "a" })
      for (;;) writeFileSync(file, Buffer.alloc(4096), { flag: "a" })
    } catch {}
  }
}

/**
 * `flow <args>` in `dir`, stopped (SIGSTOP) the moment its tasks.yaml lock appears (inotify), before it wrote
 * anything; undefined when in `tries` attempts it always finished its write before the signal landed (then
 * tasks.yaml is put back as it was each time).
 */
export async function stoppedHolder(dir: string, args: string[], tries = 5) {
  const file = join(dir, "tasks.yaml")
  const text = readFileSync(file, "utf8")
  for (let attempt = 0; attempt < tries; attempt++) {
    const locked = Promise.withResolvers<void>()
    const watcher = watch(dir, (_, name) => name === "tasks.yaml.lock" && locked.resolve())
    const p = Bun.spawn([...flowArgv(), ...args], { cwd: dir, env: env(), stdin: "ignore", stdout: "pipe", stderr: "pipe" })
    await Promise.race([locked.promise, p.exited])
    p.kill("SIGSTOP")
    watcher.close()
    let owner: number | undefined
    try {
      owner = JSON.parse(readFileSync(`${file}.lock`, "utf8")).pid
    } catch {}
    if (owner === p.pid && readFileSync(file, "utf8") === text) return p
    p.kill("SIGCONT")
    await p.exited
    writeFileSync(file, text)
  }
  return undefined
}
