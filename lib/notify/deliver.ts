// One try at delivering a message: an HTTP POST or a program, each bounded in time, each ending in ok or
// the reason it failed. Never throws: a destination's failure is the notifier's to tell once, never the run's.
import type { Delivery } from "./messages"

/** How long a receiver may take to answer, and a program to exit, before the try counts as failed. */
export const HTTP_TIMEOUT_MS = 5_000
export const SPAWN_TIMEOUT_MS = 10_000

export type Attempt = { ok: true } | { ok: false; why: string }

/** Delivers once; `signal` ends the try at once (the run's end, after its grace). */
export function deliver(d: Delivery, signal: AbortSignal): Promise<Attempt> {
  return d.kind === "http" ? post(d, signal) : spawnOnce(d, signal)
}

async function post(d: Extract<Delivery, { kind: "http" }>, signal: AbortSignal): Promise<Attempt> {
  const timeout = AbortSignal.timeout(HTTP_TIMEOUT_MS)
  try {
    const res = await fetch(d.url, { method: "POST", headers: d.headers, body: d.body, signal: AbortSignal.any([signal, timeout]), redirect: "error" })
    await res.arrayBuffer().catch(() => undefined)
    return res.ok ? { ok: true } : { ok: false, why: `HTTP ${res.status}` }
  } catch (e) {
    if (timeout.aborted) return { ok: false, why: `no answer within ${HTTP_TIMEOUT_MS / 1000} s` }
    if (signal.aborted) return { ok: false, why: "no answer before the run ended" }
    // The error's text may quote the URL: only its kind is told.
    return { ok: false, why: (e as NodeJS.ErrnoException).code ?? (e as Error).name ?? "the request failed" }
  }
}

async function spawnOnce(d: Extract<Delivery, { kind: "spawn" }>, signal: AbortSignal): Promise<Attempt> {
  let proc: Bun.Subprocess<"pipe" | "ignore", "ignore", "pipe">
  try {
    proc = Bun.spawn(d.argv, {
      stdin: d.stdin === undefined ? "ignore" : "pipe",
      stdout: "ignore",
      stderr: "pipe",
    }) as Bun.Subprocess<"pipe" | "ignore", "ignore", "pipe">
  } catch (e) {
    return { ok: false, why: `${d.argv[0]} could not be started (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` }
  }
  if (d.stdin !== undefined && proc.stdin && typeof proc.stdin !== "number") {
    const stdin = proc.stdin
    try {
      stdin.write(d.stdin)
      await stdin.end()
    } catch {
      // A program that reads nothing closes its stdin early: its exit code says whether it worked.
    }
  }
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    proc.kill("SIGKILL")
  }, SPAWN_TIMEOUT_MS)
  const stop = () => proc.kill("SIGKILL")
  signal.addEventListener("abort", stop, { once: true })
  try {
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
    if (code === 0) return { ok: true }
    if (timedOut) return { ok: false, why: `${d.argv[0]} did not exit within ${SPAWN_TIMEOUT_MS / 1000} s` }
    const last = stderr.trim().split("\n").at(-1)
    return { ok: false, why: `${d.argv[0]} exited with ${code}${last ? ` (${last.slice(0, 200)})` : ""}` }
  } finally {
    clearTimeout(timer)
    signal.removeEventListener("abort", stop)
  }
}
