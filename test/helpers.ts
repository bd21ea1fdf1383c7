// Test helpers: real temp folders with real git repositories, and the real CLI run as a subprocess.
import { lstatSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"

export const ROOT = resolve(import.meta.dir, "..")

/** The CLI under test: the compiled binary when FLOW_BIN is set (CI's e2e pass), else the source. */
export function flowArgv(): string[] {
  const bin = process.env.FLOW_BIN
  return bin ? [resolve(ROOT, bin)] : [process.execPath, join(ROOT, "flow.ts")]
}

export type Result = { code: number; stdout: string; stderr: string }

// Every flow a test starts, until it exits: a test that times out (or throws before it stops its server) must
// not leave `flow mcp --http` or a run alive past the test command. The preload kills what is left after all.
const started = new Set<Bun.Subprocess>()
/** Kills every flow a test started that is still running (test/preload.ts, after the last test). */
export function killStarted(): void {
  for (const proc of started) proc.kill("SIGKILL")
}
function tracked<T extends Bun.Subprocess>(proc: T): T {
  started.add(proc)
  void proc.exited.then(() => started.delete(proc))
  return proc
}

/** Runs `flow <args>` in `cwd` and collects its output. */
export async function flow(cwd: string, args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string } = {}): Promise<Result> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", TZ: process.env.TZ, FLOW_PROJECT: undefined, ...opts.env }
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k]
  const proc = tracked(
    Bun.spawn([...flowArgv(), ...args], {
      cwd,
      env: env as Record<string, string>,
      stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
      stdout: "pipe",
      stderr: "pipe",
    }),
  )
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

export type TempDir = {
  path: string
  file: (name: string) => string
  read: (name: string) => string
  write: (name: string, text: string) => void
  [Symbol.asyncDispose]: () => Promise<void>
}

/** A temp folder holding `files`, with `git init` and one commit, removed when disposed. */
export async function tempRepo(files: Record<string, string> = {}): Promise<TempDir> {
  const path = mkdtempSync(join(tmpdir(), "flow-test-"))
  const dir: TempDir = {
    path,
    file: (name) => join(path, name),
    read: (name) => readFileSync(join(path, name), "utf8"),
    write: (name, text) => {
      mkdirSync(dirname(join(path, name)), { recursive: true })
      writeFileSync(join(path, name), text)
    },
    [Symbol.asyncDispose]: async () => rmSync(path, { recursive: true, force: true }),
  }
  for (const [name, text] of Object.entries(files)) dir.write(name, text)
  await git(path, ["init", "-q", "-b", "main"])
  await git(path, ["add", "-A"])
  await git(path, ["-c", "user.name=flow test", "-c", "user.email=test@flow.invalid", "commit", "-q", "--allow-empty", "-m", "initial"])
  return dir
}

export async function git(cwd: string, args: string[]): Promise<string> {
  const proc = Bun.spawn(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`git ${args.join(" ")} failed (${code}): ${err}`)
  return out
}

/** A tasks.yaml from compact task records, in block style. */
export function tasksYaml(tasks: Record<string, unknown>[]): string {
  return `tasks:\n${tasks.map((t) => `  - ${Bun.YAML.stringify(t, null, 2).trimEnd().split("\n").join("\n    ")}`).join("\n")}\n`
}

/**
 * Starts flow in the background and lets a test wait for a line of its output; `prefix` goes before it
 * (`setsid`: flow leads a process group of its own).
 */
export function background(cwd: string, args: string[], env: Record<string, string | undefined> = {}, prefix: string[] = []) {
  const proc = tracked(Bun.spawn([...prefix, ...flowArgv(), ...args], { cwd, env: { ...process.env, ...env, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" }))
  let out = ""
  const waiters: { found: (out: string) => boolean; resolve: () => void }[] = []
  const pump = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout) {
      out += decoder.decode(chunk, { stream: true })
      for (const w of waiters.filter((w) => w.found(out))) w.resolve()
    }
  })()
  const stderr = new Response(proc.stderr).text()
  return {
    proc,
    output: () => out,
    waitFor: (text: string | ((out: string) => boolean), ms = 60_000) =>
      new Promise<void>((resolve, reject) => {
        const found = typeof text === "string" ? (o: string) => o.includes(text) : text
        if (found(out)) return resolve()
        const timer = setTimeout(() => reject(new Error(`timed out waiting for '${text}'; output so far:\n${out}`)), ms)
        waiters.push({ found, resolve: () => (clearTimeout(timer), resolve()) })
      }),
    done: async () => ({ code: await proc.exited, stdout: (await pump, out), stderr: await stderr }),
  }
}

/** The pids of processes whose command line is exactly `command` (a marker no other test uses). */
export function pidsOf(command: string): number[] {
  return Bun.spawnSync(["pgrep", "-x", "-f", command]).stdout.toString().split("\n").filter(Boolean).map(Number)
}

/** The processes (pid and command line) working in `dir` or a folder under it: what a run there left alive. */
export function processesIn(dir: string): string[] {
  const root = realpathSync(dir)
  const found: string[] = []
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`)
      if (cwd === root || cwd.startsWith(`${root}/`)) found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim()}`)
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found
}

/** Where `needle` (a password) shows: the outputs that print it, and the files under `dir` (but .git) that hold it. */
export function leaks(dir: string, outputs: Result[], needle: string): string[] {
  const found: string[] = []
  for (const [i, r] of outputs.entries()) if (`${r.stdout}${r.stderr}`.includes(needle)) found.push(`output ${i}`)
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      if (name === ".git") continue
      const path = join(d, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (readFileSync(path).includes(needle)) found.push(path)
    }
  }
  walk(dir)
  return found
}

/** Waits, up to `ms`, until `cond` holds (a process the kernel is still killing, a file another process writes). */
export async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await Bun.sleep(50)
}

/**
 * Waits until no atomic write is under way in `dir` (no temp file of lib/store/atomic-write.ts): a long-lived
 * flow (flow mcp, flow view) writes its validation cache without waiting for it, so a snapshot taken at that
 * moment would catch the half-written temp file.
 */
export async function writesSettled(dir: string): Promise<void> {
  const writing = () =>
    readdirSync(dir, { recursive: true }).some((p) => {
      const path = String(p)
      return !path.startsWith(".git/") && /\.\d+\.[a-z0-9]+\.tmp$/.test(path)
    })
  await until(() => !writing())
}

/**
 * Every path under `dir` (but .git) with its mode and its exact bytes (latin1: one character per byte), a
 * link's target, a folder's mode: what "touched nothing" compares.
 */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = join(entry.parentPath, entry.name)
    const rel = full.slice(dir.length + 1)
    if (rel === ".git" || rel.startsWith(".git/")) continue
    const stat = lstatSync(full)
    const mode = (stat.mode & 0o7777).toString(8)
    out[rel] = stat.isSymbolicLink() ? `link ${readlinkSync(full)}` : stat.isDirectory() ? `dir ${mode}` : `file ${mode} ${readFileSync(full, "latin1")}`
  }
  return out
}

/**
 * Gives `repo` a shared remote `origin` (a shared project's runs need one: docs/FLEET.md, "Git across
 * machines"): a bare repository inside its .git (gone with it), with its branches pushed. Returns its path.
 */
export async function bareOrigin(repo: string): Promise<string> {
  const bare = join(repo, ".git", "origin.git")
  await git(repo, ["init", "-q", "--bare", "-b", "main", bare])
  await git(repo, ["remote", "add", "origin", bare])
  await git(repo, ["push", "-q", "origin", "--all"])
  return bare
}
