// task_timeout (docs/RUN.md, "Time limits"): how long one agent turn may run. A stopped (SIGSTOP), hung or
// looping agent would otherwise hold its task, and its agent, forever. Time the task's questions waited for a
// person does not count: an agent blocked in `flow ask --wait` is waiting for someone, not stuck.
import type { Question } from "../../model/json-shapes"
import * as clock from "../../cli/clock"

export type TurnLimit = {
  /** the run's stop or the limit, whichever comes first: what the agent's process group is stopped by */
  signal: AbortSignal
  /** true once the limit stopped the turn */
  expired: () => boolean
  /** the turn is over: no timer is left */
  clear: () => void
}

/**
 * A limit of `limitMs` on a turn starting now (none when undefined). When it comes, `pausedSince` says how
 * much of the time was spent waiting for answers; the limit is pushed back by that much, else `onExpire`
 * runs and the signal aborts.
 */
export function turnLimit(
  limitMs: number | undefined,
  parent: AbortSignal,
  pausedSince: (startedAt: number) => Promise<number>,
  onExpire: () => void,
): TurnLimit {
  if (limitMs === undefined) return { signal: parent, expired: () => false, clear: () => {} }
  const stop = new AbortController()
  const started = clock.now()
  let expired = false
  let cleared = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const check = async () => {
    // A database that cannot be read (a full disk) counts no waiting: the limit is kept.
    const paused = await pausedSince(started).catch(() => 0)
    if (cleared) return
    const left = limitMs - (clock.now() - started - paused)
    if (left > 0) {
      timer = setTimeout(check, Math.max(left, 1_000))
      return
    }
    expired = true
    onExpire()
    stop.abort()
  }
  timer = setTimeout(check, limitMs)
  return {
    signal: AbortSignal.any([parent, stop.signal]),
    expired: () => expired,
    clear: () => {
      cleared = true
      clearTimeout(timer)
    },
  }
}

/** Milliseconds between `since` and `now` during which at least one of `questions` waited for its answer. */
export function waitingMs(questions: readonly Pick<Question, "asked_at" | "answered_at">[], since: number, now: number): number {
  const spans = questions
    .map((q) => [Math.max(Date.parse(q.asked_at), since), Math.min(q.answered_at === null ? now : Date.parse(q.answered_at), now)] as const)
    .filter(([from, to]) => to > from)
    .sort((a, b) => a[0] - b[0])
  let total = 0
  let end = since
  for (const [from, to] of spans) {
    if (to <= end) continue
    total += to - Math.max(from, end)
    end = to
  }
  return total
}
