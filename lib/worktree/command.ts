// A command of flow.yaml as it runs: a worktree's setup and teardown, and the project's check (flow.yaml
// `verify`) run on a merge in a scratch worktree before the target moves. Its output goes back to the agent,
// so it is trimmed to what a person would read first: the lines that name a failure, with a little context,
// and the end.
import type { VerifyConfig } from "../config/config"
import { parseDuration } from "../cli/duration"
import { spawnGroup } from "../cli/proc"
import { lines } from "../cli/proc"

/** `name`: what the command is to flow.yaml (check, setup, teardown), for its messages */
export type Check = { argv: string[]; timeoutMs: number; label: string; name: string }
/** `output` of a check that passed: its last lines (the evidence shows them: docs/REVIEW.md). */
export type CheckResult = { ok: true; seconds: number; output?: string } | { ok: false; timedOut: boolean; code: number; output: string; seconds: number }

/**
 * How a command of flow.yaml is started confined (flow.yaml's top-level `sandbox`, docs/SANDBOX.md): given its
 * argv, where it runs and its environment, what to start instead. Made by the run (lib/sandbox sits above
 * this layer); undefined: the command runs as it is.
 */
export type Confine = (
  argv: readonly string[],
  cwd: string,
  env: Record<string, string | undefined>,
) => { argv: string[]; env: Record<string, string | undefined> }

/** What a command's run may be given besides its check: its group's id (for the reaper), its lines, its confinement. */
export type CheckRun = { onGroup?: (pid: number) => void; onLine?: (line: string) => void; confine?: Confine }

/** At most this much of a failed check's output reaches the agent and the task's note. */
const MAX_LINES = 60
const MAX_CHARS = 6000

/** A command of flow.yaml (`field`: verify, setup or teardown) as what runs: a shell line runs under `sh -c`. */
export function toCheck(e: VerifyConfig, field: string, defaultTimeout: string): Check {
  const argv = typeof e.command === "string" ? ["sh", "-c", e.command] : e.command
  return {
    argv,
    timeoutMs: parseDuration(e.timeout ?? defaultTimeout, `flow.yaml: ${field} timeout`),
    label: typeof e.command === "string" ? e.command : e.command.join(" "),
    name: field === "verify" ? "check" : field,
  }
}

/**
 * Runs the check in `cwd`, in a process group of its own (`onGroup` gets its id, to record it for the reaper);
 * a timeout or the run's stop kills the whole group. `onLine` gets each line of its output as it comes;
 * `confine`, when given, starts it in the sandbox.
 */
export async function runCheck(
  check: Check,
  cwd: string,
  env: Record<string, string | undefined>,
  signal: AbortSignal,
  { onGroup, onLine, confine }: CheckRun = {},
): Promise<CheckResult> {
  const started = performance.now()
  const seconds = () => Math.round(performance.now() - started) / 1000
  const stop = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => ((timedOut = true), stop.abort()), check.timeoutMs)
  const onAbort = () => stop.abort()
  signal.addEventListener("abort", onAbort, { once: true })
  const out: string[] = []
  try {
    const plain = { argv: check.argv, env: { ...env, CI: env.CI ?? "1" } }
    const started = confine ? confine(plain.argv, cwd, plain.env) : plain
    const proc = spawnGroup(started.argv, { cwd, env: started.env, signal: stop.signal, graceMs: 1_000 })
    onGroup?.(proc.pid)
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      for await (const line of lines(stream)) {
        onLine?.(line)
        out.push(line)
        if (out.length > 5000) out.splice(0, 1000) // a chatty check must not hold the run's memory
      }
    }
    await Promise.all([collect(proc.stdout), collect(proc.stderr)])
    const code = await proc.exited
    if (code === 0 && !timedOut) return { ok: true, seconds: seconds(), output: trimOutput(out.slice(-15)) }
    const head = timedOut
      ? [`the ${check.name} '${check.label}' timed out after ${Math.round(check.timeoutMs / 1000)} s and was killed`]
      : [`the ${check.name} '${check.label}' failed (exit ${code})`]
    return { ok: false, timedOut, code, output: [...head, trimOutput(out)].filter(Boolean).join("\n"), seconds: seconds() }
  } catch (e) {
    return { ok: false, timedOut: false, code: 127, output: `cannot start the ${check.name} '${check.label}': ${(e as Error).message}`, seconds: seconds() }
  } finally {
    clearTimeout(timer)
    signal.removeEventListener("abort", onAbort)
  }
}

const FAILURE = /\b(error|fail(ed|ure|ing)?|expected|assert\w*|panic\w*|exception|traceback|not ok)\b|✗|✖/i

/** The lines that name a failure (with two lines of context each) and the last lines, in order, bounded. */
export function trimOutput(all: string[]): string {
  const keep = new Set<number>()
  all.forEach((line, i) => {
    if (FAILURE.test(line)) for (let j = Math.max(0, i - 2); j <= Math.min(all.length - 1, i + 2); j++) keep.add(j)
  })
  for (let i = Math.max(0, all.length - 15); i < all.length; i++) keep.add(i)
  const picked: string[] = []
  let last = -1
  for (const i of [...keep].sort((a, b) => a - b)) {
    if (i > last + 1) picked.push("...")
    picked.push(all[i])
    last = i
  }
  const bounded = picked.length > MAX_LINES ? ["...", ...picked.slice(-MAX_LINES)] : picked
  let text = bounded.join("\n")
  if (text.length > MAX_CHARS) text = `...${text.slice(-MAX_CHARS)}`
  return text
}
