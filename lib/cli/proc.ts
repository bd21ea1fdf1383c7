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
 * Where it can, the group's leader is a guard (`groupGuard`) that kills the whole group when flow dies.
 */
export function spawnGroup(argv: readonly string[], opts: GroupOptions) {
  const env = mergeEnv({ ...opts.env, PWD: resolve(opts.cwd) })
  const proc = Bun.spawn(guarded(argv, env.PATH, opts.cwd), {
    cwd: opts.cwd,
    env,
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

/**
 * The guard that leads a group: bash, under `setpriv --pdeathsig HUP` (util-linux), runs argv as its child in
 * the same group and waits for it. When the process that spawned it dies, even by SIGKILL, the kernel sends
 * it SIGHUP, and it kills its whole group: what argv started (a shell's `sleep`, a check's test servers)
 * dies with flow at once, not at the next run's start. It survives the group's SIGTERM (the caller's stop)
 * until argv has exited, so argv keeps its grace period, and exits with argv's status (128 + n after a
 * signal, as Bun reports one). argv gets SIGINT and SIGQUIT back (bash ignores them in a background job)
 * and the guard's stdin explicitly (bash gives a background job /dev/null).
 */
const GUARD = `trap 'kill -KILL 0' HUP
trap : TERM INT
(trap - INT QUIT TERM; exec "$@") <&0 &
p=$!
wait "$p"; s=$?
while kill -0 "$p" 2>/dev/null; do wait "$p"; s=$?; done
exit "$s"`

let guard: string[] | null | undefined

/**
 * argv behind the guard when it works here: Linux with setpriv and bash, and argv's program found (else Bun's
 * own spawn error says so, as without the guard; bash finds it by the same PATH). PR_SET_PDEATHSIG follows the thread that spawned the child;
 * Bun spawns from its main thread, which lives as long as the process, so the signal is not sent early.
 * Without setpriv or bash (not Linux, a minimal image) only this layer is lost: the next run's reaper
 * (lib/run/reaper.ts) still kills what a dead run left.
 */
function guarded(argv: readonly string[], path: string | undefined, cwd: string): string[] {
  if (guard === undefined) {
    const setpriv = process.platform === "linux" ? Bun.which("setpriv") : null
    const bash = Bun.which("bash")
    const probe = (sig: string, rest: string[]) =>
      setpriv !== null && Bun.spawnSync([setpriv, "--pdeathsig", sig, "--", ...rest], { stdout: "ignore", stderr: "ignore" }).exitCode === 0
    if (setpriv && bash && probe("HUP", [bash, "-c", "exit 0"])) guard = [setpriv, "--pdeathsig", "HUP", "--", bash, "-c", GUARD, "flow-guard"]
    // Without bash, the kernel still kills the leader itself.
    else guard = setpriv && probe("KILL", ["true"]) ? [setpriv, "--pdeathsig", "KILL", "--"] : null
  }
  if (!guard) return [...argv]
  if (guard.length > 4 && (argv.length === 0 || Bun.which(argv[0], { PATH: path ?? "", cwd }) === null)) return [...argv]
  return [...guard, ...argv]
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

/** The lines of a byte stream, as they arrive. */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true })
    let nl = buffer.indexOf("\n")
    while (nl >= 0) {
      yield buffer.slice(0, nl).replace(/\r$/, "")
      buffer = buffer.slice(nl + 1)
      nl = buffer.indexOf("\n")
    }
  }
  buffer += decoder.decode()
  if (buffer) yield buffer
}
