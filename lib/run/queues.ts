// The run's merge queues, one per repository and target branch, made on first use. Every landing goes
// through one (docs/RUN.md, "Merge queue"): merges are made off-tree and the target moves by compare-and-swap;
// where the repository has a check configured (flow.yaml `verify`), only to a merge that passed it. In files
// the target is this clone's branch; on a shared project it is the shared remote's, and the queue's line is
// every machine's (lib/landing/queue-target.ts).
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { isAbsolute, join, relative } from "node:path"
import { MergeQueue } from "../landing/merge-queue"
import { clearScratch, SCRATCH_REPO } from "../landing/queue-check"
import { LocalTarget, type QueueTarget, RemoteTarget } from "../landing/queue-target"
import type { QueueOptions } from "../landing/queue-types"
import { MoveJournal } from "../landing/merge-journal"
import { LandingWaits } from "../landing/landing-waits"
import { remoteUrl } from "../git/remote-git"
import { AgentGroups } from "./reaper"
import { RUN_ID } from "../cli/run-id"
import type { RunSettings } from "./settings"
import { storeSetting } from "../store/setting"
import { checkResolver } from "../landing/verify"
import { reviewGate } from "../landing/review-gate"
import type { Workspace } from "../git/workspace"

/** How many candidates of a queue are built and checked at once unless flow.yaml says (queue_depth). */
export const DEFAULT_DEPTH = 8

export class MergeQueues {
  private queues = new Map<string, Promise<MergeQueue>>()
  private checkOf: ReturnType<typeof checkResolver>
  readonly moves: MoveJournal
  private groups: AgentGroups
  private waits: LandingWaits
  /** a shared project's notifications of queue changes, taken with the first queue */
  private unlisten?: Promise<() => Promise<void>>

  constructor(
    private s: RunSettings,
    /** one git operation on a repository's worktrees at a time (lib/run/landing.ts) */
    private serial: <T>(repo: string, fn: () => Promise<T>, later?: boolean) => Promise<T>,
    private author: { name: string; email: string },
  ) {
    this.checkOf = checkResolver(s.project.dir, s.verify)
    this.moves = new MoveJournal(s.db)
    this.groups = new AgentGroups(s.db)
    this.waits = new LandingWaits(s.db)
  }

  /**
   * Clears what a killed run left: its checks' scratch worktrees in every queue's folder (clearScratch) and
   * the landing waits it recorded; in files its queues' rows too (one run at a time uses a state database: what
   * is in line is a killed run's, and the journal hands it over again). At a run's start.
   */
  async clearLeft(): Promise<void> {
    await this.waits.clearAll()
    if (!this.s.store.shared) await this.s.db.queue.clear()
    const root = join(this.s.project.stateDir, "verify")
    for (const name of existsSync(root) ? readdirSync(root) : []) {
      // Even an empty folder: a removal killed half way leaves the registration of a folder already gone.
      const dir = join(root, name)
      let repo: string
      try {
        repo = readFileSync(join(dir, SCRATCH_REPO), "utf8")
      } catch {
        rmSync(dir, { recursive: true, force: true }) // an older flow's: no repository named, nothing to prune
        continue
      }
      if (existsSync(repo)) await this.serial(repo, () => clearScratch(repo, dir))
      else rmSync(dir, { recursive: true, force: true })
    }
  }

  /** Resolves once every queue's checks are torn down and its withdrawn rows gone; the queues and their notifications stop. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.then((queue) => (queue.close(), queue.idle()))))
    const stop = this.unlisten
    this.unlisten = undefined
    await stop?.then((f) => f()).catch(() => {})
  }

  /** The queue of the workspace's repository and target. */
  for(ws: Workspace): Promise<MergeQueue> {
    const key = `${ws.repo}\0${ws.target}`
    let queue = this.queues.get(key)
    if (!queue) {
      queue = this.options(ws).then((o) => new MergeQueue(o))
      this.queues.set(key, queue)
      if (this.s.store.shared)
        this.unlisten ??= this.s.db.queue.listen(() => {
          for (const q of this.queues.values())
            void q.then(
              (x) => x.wake(),
              () => {},
            )
        })
    }
    return queue
  }

  /** What the queue of the workspace's repository and target is given. */
  private async options(ws: Workspace): Promise<QueueOptions> {
    const key = `${ws.repo}\0${ws.target}`
    const s = this.s
    const track = (pid: number, taskId: string) => this.groups.tracker(taskId)(pid)
    const serial = <T>(fn: () => Promise<T>, later?: boolean) => this.serial(ws.repo, fn, later)
    return {
      repo: ws.repo,
      target: ws.target,
      check: await this.checkOf(ws.repo),
      serial,
      bus: s.bus,
      signal: s.signal,
      author: this.author,
      depth: s.queueDepth ?? DEFAULT_DEPTH,
      batch: s.queueBatch ?? 1,
      slots: s.checks ?? s.parallelism,
      leaseMs: s.leaseMs,
      run: RUN_ID,
      state: s.db,
      into: await this.target(ws, serial),
      holds: s.store.claims && ((fence) => s.store.claims!.holds(fence)),
      review: reviewGate(s.review, s.store, s.db),
      scratchDir: join(s.project.stateDir, "verify", Bun.hash(key).toString(36)),
      keepOut: flowFilesIn(ws.repo, s.project),
      moves: this.moves,
      checkEnv: { FLOW_PROJECT: s.project.dir, FLOW_RUN_ID: RUN_ID },
      track,
      worktree: s,
      // What the screens show; a failed write must not hold up a landing.
      waits: {
        set: (taskId, reason) => void this.waits.set(taskId, ws.target, reason).catch(() => {}),
        clear: (taskId) => void this.waits.clear(taskId).catch(() => {}),
      },
    }
  }

  /** The target a queue moves: this clone's branch, or on a shared project the shared remote's. */
  private async target(ws: Workspace, serial: <T>(fn: () => Promise<T>) => Promise<T>): Promise<QueueTarget> {
    if (!this.s.store.shared) return new LocalTarget(ws.repo, ws.target, this.moves)
    const setting = await storeSetting(this.s.project)
    const project = setting.kind === "file" ? "files" : setting.key
    const remote = this.s.publish.remote
    return new RemoteTarget(ws.repo, ws.target, remote, await remoteUrl(ws.repo, remote), project, this.moves, serial)
  }
}

/** The project's own files (tasks.yaml, flow.yaml, .flow/) as paths of `repo`, where the project lives in it. */
export function flowFilesIn(repo: string, project: { dir: string; tasksFile: string; stateDir: string }): string[] {
  const real = (p: string) => (existsSync(p) ? realpathSync(p) : p)
  const root = real(repo)
  const inRepo = (p: string) => {
    const rel = relative(root, p)
    return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : undefined
  }
  const dir = real(project.dir)
  return [inRepo(join(dir, "tasks.yaml")), inRepo(join(dir, "flow.yaml")), inRepo(join(dir, ".flow"))].filter((p): p is string => p !== undefined)
}
