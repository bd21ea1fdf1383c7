// Every child process flow starts goes through here: argv arrays only, never a shell string.
import { resolve } from "node:path"
import { FlowError } from "./errors"

export type RunOptions = { cwd: string; env?: Record<string, string | undefined>; stdin?: string; signal?: AbortSignal }
export type RunResult = { code: number; stdout: string; stderr: string }

/** Runs argv to completion and collects its output. */
export async function run(argv: readonly string[], opts: RunOptions): Promise<RunResult> {
  const proc = Bun.spawn([...argv], {
    cwd: opts.cwd,
    env: mergeEnv(opts.env),
    signal: opts.signal,
    stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

/** Like run, but a non-zero exit is a FlowError naming the command and keeping its stderr. */
export async function check(argv: readonly string[], opts: RunOptions): Promise<string> {
  const result = await run(argv, opts)
  if (result.code !== 0) {
    const detail = (result.stderr.trim() || result.stdout.trim()).split("\n").slice(-5).join("\n")
    throw new FlowError(`'${argv.join(" ")}' failed (exit ${result.code})${detail ? `:\n${detail}` : ""}`)
  }
  return result.stdout
}

/** The environment of a child: ours, with `extra` laid over it (undefined removes a variable). */
export function mergeEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = { ...process.env, ...extra }
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key]
  return env as Record<string, string>
}

export type GroupOptions = { cwd: string; env?: Record<string, string | undefined>; stdin?: string; signal?: AbortSignal; graceMs?: number }

/**
 * Starts argv in its own process group (an agent and everything it starts), with stdout and stderr piped.
 * When `signal` aborts, the whole group gets SIGTERM, then SIGKILL after `graceMs`: a shell's `sleep`
 * or an agent's tool process is never left behind holding our pipes open.
 * PWD is set to `cwd`: programs that read their directory from PWD (OpenCode does, and a shell's `pwd`
 * trusts it) would otherwise work in flow's directory, not the one they were started in.
 */
export function spawnGroup(argv: readonly string[], opts: GroupOptions) {
  const proc = Bun.spawn([...deathWrapper(), ...argv], {
    cwd: opts.cwd,
    env: mergeEnv({ ...opts.env, PWD: resolve(opts.cwd) }),
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
    stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
  })
  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid, signal)
    } catch {}
  }
  let timer: Timer | undefined
  const onAbort = () => {
    kill("SIGTERM")
    // A stopped process (SIGSTOP, Ctrl-Z) keeps SIGTERM pending until it continues: it continues now, and
    // goes as asked rather than by SIGKILL.
    kill("SIGCONT")
    timer = setTimeout(() => kill("SIGKILL"), opts.graceMs ?? 3_000)
  }
  if (opts.signal?.aborted) onAbort()
  else opts.signal?.addEventListener("abort", onAbort, { once: true })
  void proc.exited.then(() => {
    opts.signal?.removeEventListener("abort", onAbort)
    // The leader is gone; whatever it left in its group goes too once we stop.
    if (opts.signal?.aborted) kill("SIGKILL")
    if (timer) clearTimeout(timer)
  })
  return proc
}

let wrapper: string[] | undefined

/**
 * `setpriv --pdeathsig KILL --` (util-linux) when it works here: the kernel then kills the group's leader
 * when the process that spawned it dies, even by SIGKILL. Bun spawns from its main thread, which lives as
 * long as the process, so the signal is not sent early (PR_SET_PDEATHSIG follows the spawning thread).
 * Without setpriv (not Linux, or a minimal image) agents lose only this: the next run's reaper
 * (lib/run/reaper.ts) still kills what a dead run left.
 */
function deathWrapper(): string[] {
  if (wrapper) return wrapper
  const setpriv = process.platform === "linux" ? Bun.which("setpriv") : null
  const works = setpriv !== null && Bun.spawnSync([setpriv, "--pdeathsig", "KILL", "--", "true"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0
  wrapper = works ? [setpriv, "--pdeathsig", "KILL", "--"] : []
  return wrapper
}

/** Runs argv attached to this terminal (stdin, stdout and stderr inherited) and returns its exit code. */
export async function runAttached(argv: readonly string[], opts: { cwd: string; env?: Record<string, string | undefined> }): Promise<number> {
  let proc: ReturnType<typeof Bun.spawn>
  try {
    proc = Bun.spawn([...argv], { cwd: opts.cwd, env: mergeEnv(opts.env), stdin: "inherit", stdout: "inherit", stderr: "inherit" })
  } catch (e) {
    throw new FlowError(`cannot start ${argv[0]}: ${(e as Error).message}`, undefined, `is ${argv[0]} installed and on PATH?`, { cause: e })
  }
  return proc.exited
}
