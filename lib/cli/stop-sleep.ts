// Waiting in a run that may be stopped: a person's answer, a usage limit's reset.

/** Resolves after `ms`, or as soon as `signal` aborts (the run's stop), whichever comes first; leaves no listener behind. */
export function sleepUnlessStopped(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
    const timer = setTimeout(done, Math.max(0, ms))
    signal.addEventListener("abort", done, { once: true })
  })
}
