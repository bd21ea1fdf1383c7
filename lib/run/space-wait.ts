// A full disk during `flow run` (docs/RUN.md, "A full disk"): no task is blocked for it and nothing is
// retried in a tight loop. What failed says so here; the run says once where the disk is full, starts nothing
// new, and whoever waits tries again on a timer (1 s, doubling up to 30 s) or as soon as the disk has room
// again (looked at once a second: one statfs), and at once on a stop.
import { diskFullError, isDiskFull, LOW_SPACE, lowOnSpace, roomLeft } from "../store/disk-full"
import type { EventBus } from "./events"

const FIRST_DELAY_MS = 1_000
const MAX_DELAY_MS = 30_000
const LOOK_MS = 1_000

export class SpaceWait {
  /** the folders whose disks were found full in this episode; empty when the disk is not known to be full */
  private folders = new Set<string>()
  private delay = FIRST_DELAY_MS
  private round?: Promise<void>

  constructor(
    private bus: EventBus,
    private signal: AbortSignal,
    /** the folders a failure at low space may be blamed on (the project's, its .flow) */
    private watched: readonly string[],
    /** called when the episode is over (the scheduler starts new work again) */
    private onRoom: () => void = () => {},
  ) {}

  get full(): boolean {
    return this.folders.size > 0
  }

  /**
   * Whether `e` is a full disk's doing: it says so, or it happened while one of `paths` (or the watched
   * folders) has less than LOW_SPACE free, where nothing can be told from a failure. Recorded and said
   * once per episode when it is.
   */
  claims(e: unknown, paths: readonly string[] = [], taskId?: string): boolean {
    const low = lowOnSpace([...paths, ...this.watched])
    if (!isDiskFull(e) && low === undefined) return false
    const error = diskFullError(low ?? this.watched[0], e)
    if (!this.full) {
      const said = ((e as Error)?.message ?? String(e)).replace(/\s+/g, " ").trim()
      const line = said.includes(error.message) ? said : `${error.message} (${said.length > 240 ? `${said.slice(0, 239)}…` : said})`
      this.bus.emit({
        type: "waiting",
        taskId,
        reason: `${line}; waiting for room: nothing new starts, no task is blocked for it, and what failed is tried again once there is room ('df -h ${error.folder}')`,
      })
    }
    this.folders.add(error.folder)
    return true
  }

  /**
   * Until the next try: the back-off's delay, or less when every folder found full has room again, or the
   * run's stop. Everyone waiting shares one round, so they try again together.
   */
  wait(): Promise<void> {
    this.round ??= this.nextRound().finally(() => (this.round = undefined))
    return this.round
  }

  /** Something that needed room worked: the episode is over. */
  ok(): void {
    if (!this.full) return
    this.end(`there is room again: going on`)
  }

  private async nextRound(): Promise<void> {
    const until = performance.now() + this.delay
    this.delay = Math.min(this.delay * 2, MAX_DELAY_MS)
    while (!this.signal.aborted && performance.now() < until) {
      await this.sleep(Math.min(LOOK_MS, until - performance.now()))
      const rooms = [...this.folders].map(roomLeft)
      if (rooms.length > 0 && rooms.every((r) => r !== undefined && r >= LOW_SPACE)) {
        this.end(`there is room again on the disk (${Math.floor(Math.min(...(rooms as number[])) / 1024)} KB free): going on`)
        return
      }
    }
  }

  private end(text: string): void {
    this.folders.clear()
    this.delay = FIRST_DELAY_MS
    this.bus.emit({ type: "notice", text })
    this.onRoom()
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.signal.removeEventListener("abort", done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.signal.addEventListener("abort", done, { once: true })
    })
  }
}
