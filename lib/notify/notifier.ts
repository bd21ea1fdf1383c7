// The run's notifications (docs/NOTIFY.md): it listens to the run's event stream, turns what needs the person
// into notices, and gives each destination its own channel. A channel gathers notices into one message (at
// most one every WINDOW_MS), tries each message again with back-off, and says its first failure once. Nothing
// here waits on the run or makes it wait, except at its end, for at most END_GRACE_MS.
import * as clock from "../cli/clock"
import type { NotifyDestination, NotifyEvent } from "../config/notify-config"
import { NOTIFY_EVENTS } from "../config/notify-config"
import type { RunEvent } from "../run/events"
import { deliver } from "./deliver"
import { mask } from "./mask"
import { compose, deliveryOf, destinationLabel } from "./messages"
import { noticesOf, questionNotices, type Notice, type QuestionLookup } from "./notices"

/** A destination's first message waits this long for others to join it; then one message per WINDOW_MS at most. */
export const GATHER_MS = 1_000
export const WINDOW_MS = 5_000
/** The back-off between tries of one message: BACKOFF_MS doubled each time, up to BACKOFF_MAX_MS, TRIES in all. */
export const BACKOFF_MS = 500
const BACKOFF_MAX_MS = 30_000
const TRIES = 8
/** How long the run's end waits for messages on their way (the last one says the run finished). */
export const END_GRACE_MS = 5_000
/** Notices a channel keeps while its receiver is away: the oldest go first. */
const MAX_PENDING = 100

export type NotifierOptions = {
  project: string
  destinations: readonly NotifyDestination[]
  /** the inspector's address when a `flow view` serves the project now */
  inspector: () => string | undefined
  questions: QuestionLookup
  /** values to mask wherever they appear (secrets of the environment: lib/notify/mask.ts) */
  secrets: readonly string[]
  /** a line for the run's log */
  say: (text: string) => void
  platform: string
}

type Channel = {
  to: NotifyDestination
  on: ReadonlySet<NotifyEvent>
  pending: Notice[]
  dropped: number
  timer?: ReturnType<typeof setTimeout>
  sending?: Promise<void>
  lastSent: number
  failureSaid: boolean
}

export class Notifier {
  private readonly channels: Channel[]
  private readonly told = new Set<string>()
  private readonly stop = new AbortController()
  private closing = false

  constructor(private readonly o: NotifierOptions) {
    this.channels = o.destinations.map((to) => ({
      to,
      on: new Set(to.on ?? NOTIFY_EVENTS),
      pending: [],
      dropped: 0,
      lastSent: Number.NEGATIVE_INFINITY,
      failureSaid: false,
    }))
  }

  /** The run's event listener: cheap and never throwing, whatever the event. */
  hear(event: RunEvent, at: Date): void {
    if (this.channels.length === 0) return
    try {
      if (event.type === "question-wait") this.questionsAsked(event.taskId, event.questions, at)
      else this.add(noticesOf(event, at))
    } catch (e) {
      this.o.say(`notify: an event could not be told (${(e as Error).message})`)
    }
  }

  /** Questions a task's agent asked: each told once, however often it is heard of. */
  questionsAsked(taskId: string, ids: readonly string[], at: Date): void {
    if (this.channels.length === 0) return
    void questionNotices(taskId, ids, at, this.o.questions, this.told).then(
      (notices) => this.add(notices),
      () => {},
    )
  }

  private add(notices: Notice[]): void {
    for (const raw of notices) {
      const n = { ...raw, text: mask(raw.text, this.o.secrets), command: raw.command && mask(raw.command, this.o.secrets) }
      for (const ch of this.channels) {
        if (!ch.on.has(n.event)) continue
        ch.pending.push(n)
        if (ch.pending.length > MAX_PENDING) {
          ch.pending.shift()
          ch.dropped++
        }
        this.schedule(ch)
      }
    }
  }

  private schedule(ch: Channel): void {
    if (ch.timer || ch.sending || ch.pending.length === 0) return
    const now = clock.now()
    const at = this.closing ? now : Math.max(now + GATHER_MS, ch.lastSent + WINDOW_MS)
    ch.timer = setTimeout(() => this.send(ch), at - now)
  }

  private send(ch: Channel): void {
    ch.timer = undefined
    const batch = ch.pending.splice(0)
    if (ch.dropped > 0)
      batch.push({ event: batch[0].event, text: `(${ch.dropped} older notices were dropped while this destination was away)`, at: batch[0].at })
    ch.dropped = 0
    ch.lastSent = clock.now()
    ch.sending = this.tries(ch, batch).finally(() => {
      ch.sending = undefined
      this.schedule(ch)
    })
  }

  /** One message, tried until it is taken or TRIES have failed; the channel's first failure is said. */
  private async tries(ch: Channel, batch: Notice[]): Promise<void> {
    const message = compose(mask(this.o.project, this.o.secrets), batch, this.o.inspector())
    const delivery = deliveryOf(ch.to, message, this.o.platform)
    for (let n = 0; n < TRIES; n++) {
      const attempt = await deliver(delivery, this.stop.signal)
      if (attempt.ok) return
      if (!ch.failureSaid) {
        ch.failureSaid = true
        this.o.say(
          `notify: ${destinationLabel(ch.to)} failed (${mask(attempt.why, this.o.secrets)}); flow tries again with back-off and says no more of it in this run`,
        )
      }
      if (this.stop.signal.aborted) return
      await pause(Math.min(BACKOFF_MS * 2 ** n, BACKOFF_MAX_MS), this.stop.signal)
      if (this.stop.signal.aborted) return
    }
  }

  /**
   * The run's end: what waits is sent now, and messages on their way get END_GRACE_MS; then every try stops.
   * A message still undelivered then is lost, and its destination's failure said (once).
   */
  async close(graceMs = END_GRACE_MS): Promise<void> {
    this.closing = true
    for (const ch of this.channels) {
      if (ch.timer) clearTimeout(ch.timer)
      ch.timer = undefined
      this.schedule(ch)
    }
    const settled = async () => {
      while (this.channels.some((ch) => ch.sending || ch.timer)) await Promise.allSettled(this.channels.map((ch) => ch.sending ?? (ch.timer && pause(0))))
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([settled(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))])
    clearTimeout(timer)
    this.stop.abort()
    await Promise.allSettled(this.channels.map((ch) => ch.sending))
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener("abort", done)
      resolve()
    }
    signal?.addEventListener("abort", done, { once: true })
  })
}
