// The run's merge queues, one per repository and target branch, made on first use. Every landing goes
// through one (docs/RUN.md, "Landing"): merges are made off-tree and the target moves by compare-and-swap;
// where the repository has a check configured (flow.yaml `verify`), only to a merge that passed it.
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { isAbsolute, join, relative } from "node:path"
import { clearScratch, MergeQueue, type QueueOptions, SCRATCH_REPO } from "../landing/merge-queue"
import { MoveJournal } from "../landing/merge-journal"
import { LandingWaits } from "../landing/landing-waits"
import { AgentGroups } from "./reaper"
import { RUN_ID } from "../cli/run-id"
import { RemoteLanding } from "../landing/remote-landing"
import type { RunSettings } from "./settings"
import type { LandingLock } from "../store/open"
import { checkResolver } from "../landing/verify"
import type { Workspace } from "../git/workspace"

/** How many candidates of a queue are built and checked at once unless flow.yaml says (queue_depth). */
export const DEFAULT_DEPTH = 8

export class MergeQueues {
  private queues = new Map<string, Promise<MergeQueue>>()
  private remotes = new Map<string, Promise<RemoteLanding>>()
  private checkOf: ReturnType<typeof checkResolver>
  readonly moves: MoveJournal
  private groups: AgentGroups
  private waits: LandingWaits

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
   * the landing waits it recorded. At a run's start.
   */
  async clearLeft(): Promise<void> {
    await this.waits.clearAll()
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

  /** Resolves once every queue's scratch worktrees are torn down and removed. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.queues.values(), ...this.remotes.values()].map((q) => q.then((queue) => queue.idle())))
  }

  /** The queue of the workspace's repository and target. */
  for(ws: Workspace): Promise<MergeQueue> {
    const key = `${ws.repo}\0${ws.target}`
    let queue = this.queues.get(key)
    if (!queue) {
      queue = this.options(ws).then((o) => new MergeQueue(o))
      this.queues.set(key, queue)
    }
    return queue
  }

  /** The landing of a shared project's workspace into its remote's target (lib/landing/remote-landing.ts). */
  remote(ws: Workspace, remote: string, lock: LandingLock): Promise<RemoteLanding> {
    const key = `${ws.repo}\0${ws.target}`
    let landing = this.remotes.get(key)
    if (!landing) {
      landing = this.options(ws).then((o) => new RemoteLanding(o, remote, lock))
      this.remotes.set(key, landing)
    }
    return landing
  }

  /** What a queue (or a remote landing) of the workspace's repository and target is given. */
  private async options(ws: Workspace): Promise<QueueOptions> {
    const key = `${ws.repo}\0${ws.target}`
    const s = this.s
    const track = (pid: number, taskId: string) => this.groups.tracker(taskId)(pid)
    return {
      repo: ws.repo,
      target: ws.target,
      check: await this.checkOf(ws.repo),
      serial: (fn, later) => this.serial(ws.repo, fn, later),
      bus: s.bus,
      signal: s.signal,
      author: this.author,
      depth: s.queueDepth ?? DEFAULT_DEPTH,
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
