// What a merge queue moves (docs/RUN.md, "Merge queue"): this clone's target branch in files, a shared remote's
// in a fleet. Both move only by compare-and-swap, only to a merge the queue checked: in files `update-ref` with
// the person's checkout following by the journaled two-tree read (lib/landing/checkout-move.ts); in a fleet
// `git push --force-with-lease=refs/heads/<target>:<expected>`, after which this clone's branch follows where it
// can. In a fleet the queue's merges are pushed under refs/flow/queue/<project>/ so that any machine can check
// them, and removed once they are no longer needed.
import { moveTarget } from "./checkout-move"
import type { MoveJournal } from "./merge-journal"
import { branchHeads, isAncestor } from "../git/git"
import { timed } from "../cli/trace"
import { deleteRemoteRefs, fetchBranch, fetchRefs, hasCommit, missingCommits, pushRefs, pushTarget, remoteRefs } from "../git/remote-git"

export type TargetMove =
  | { ok: true }
  /** the target is not where the merge was built any more: the window is built again on what it is now */
  | { ok: false; why: "moved"; detail: string }
  /** something of the person's is in the way (a change, an operation, a lock): nothing moved; tried again later */
  | { ok: false; why: "wait"; detail: string; lock?: boolean }

export interface QueueTarget {
  /** the queue's key: one per target, the same from every clone of it (the remote's URL in a fleet) */
  readonly key: string
  /** the target branch */
  readonly name: string
  /** the target as a person names it: `main`, or `main of origin` (a shared remote's) */
  readonly shown: string
  /** whether machines share it (a fleet's remote): merges are published, candidates' branches fetched */
  readonly shared: boolean
  /** the target's commit: a shared remote's as the lead recorded it (`cached`) unless `fresh` is asked; a local branch is read */
  tip(cached: string | null, fresh: boolean): Promise<string>
  /** of these commits, the ones not in this clone even after their branches were fetched */
  missing(wants: readonly { head: string; branch: string }[]): Promise<Set<string>>
  /** makes merges fetchable by every machine: the ref of each (none for a local target) */
  publish(merges: readonly { id: number; gen: number; commit: string }[]): Promise<Map<number, string>>
  /** removes published refs no longer needed (best effort) */
  drop(refs: readonly string[]): Promise<void>
  /** brings a merge into this clone for its check */
  fetch(commit: string, ref: string | null): Promise<void>
  /** moves the target from `from` to `to`, by compare-and-swap */
  move(from: string, to: string, message: string): Promise<TargetMove>
  /** after a landing: this clone's branch (and the person's checkout) follows `commit` where it can; what stopped it, once */
  follow(commit: string): Promise<string | undefined>
  /** removes the published refs nothing in line holds (`live`): what killed runs left; only under the queue's lead, which publishes */
  sweep(live: ReadonlySet<string>): Promise<void>
}

/** A project in files: the target is this clone's branch, and every commit is here. */
export class LocalTarget implements QueueTarget {
  readonly shared = false
  readonly key: string

  constructor(
    private readonly repo: string,
    readonly name: string,
    private readonly moves: MoveJournal,
  ) {
    this.key = `${repo}\n${name}`
    this.shown = name
  }

  readonly shown: string

  async tip(): Promise<string> {
    const [tip] = await branchHeads(this.repo, this.name)
    if (!tip) throw new Error(`the target branch '${this.name}' does not exist in ${this.repo}`)
    return tip
  }

  async missing(): Promise<Set<string>> {
    return new Set()
  }

  async publish(): Promise<Map<number, string>> {
    return new Map()
  }

  async drop(): Promise<void> {}

  async fetch(): Promise<void> {}

  move(from: string, to: string, message: string): Promise<TargetMove> {
    return moveTarget(this.repo, this.name, from, to, message, this.moves)
  }

  async follow(): Promise<string | undefined> {
    return undefined
  }

  async sweep(): Promise<void> {}
}

/** A shared project: the target is the remote's; this clone's follows it. */
export class RemoteTarget implements QueueTarget {
  readonly shared = true

  constructor(
    private readonly repo: string,
    readonly name: string,
    private readonly remote: string,
    /** the remote's URL: every clone of it agrees on the queue */
    url: string,
    /** the project's key in the database: its queues' refs are its own */
    private readonly project: string,
    private readonly moves: MoveJournal,
    /** fetches take their turn with the clone's worktree changes (docs/FLEET.md, "A clone's fetches take their turn") */
    private readonly serial: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {
    this.key = `${url}\n${name}`
    this.shown = `${name} of ${remote}`
  }

  readonly key: string
  readonly shown: string

  private get prefix(): string {
    return `refs/flow/queue/${this.project}/`
  }

  async tip(cached: string | null, fresh: boolean): Promise<string> {
    if (cached && !fresh && (await hasCommit(this.repo, cached))) return cached
    const tip = await timed("queue", "fetch-tip", () => this.serial(() => fetchBranch(this.repo, this.remote, this.name)))
    if (!tip) throw new Error(`the remote '${this.remote}' of ${this.repo} has no branch '${this.name}'`)
    return tip
  }

  async missing(wants: readonly { head: string; branch: string }[]): Promise<Set<string>> {
    const absent = await missingCommits(
      this.repo,
      wants.map((w) => w.head),
    )
    if (absent.size === 0) return absent
    // Another machine's candidates: their branches were pushed before they were handed over.
    const branches = wants.filter((w) => absent.has(w.head)).map((w) => `refs/heads/${w.branch}`)
    await timed("queue", "fetch-branches", () => this.serial(() => fetchRefs(this.repo, this.remote, branches))).catch(() => {})
    return missingCommits(this.repo, [...absent])
  }

  async publish(merges: readonly { id: number; gen: number; commit: string }[]): Promise<Map<number, string>> {
    const refs = merges.map((m) => ({ id: m.id, commit: m.commit, ref: `${this.prefix}${m.id}-${m.gen + 1}` }))
    await timed("queue", "publish", () => pushRefs(this.repo, this.remote, refs))
    return new Map(refs.map((r) => [r.id, r.ref]))
  }

  drop(refs: readonly string[]): Promise<void> {
    return refs.length ? timed("queue", "drop", () => deleteRemoteRefs(this.repo, this.remote, refs)) : Promise.resolve()
  }

  async fetch(commit: string, ref: string | null): Promise<void> {
    if (await hasCommit(this.repo, commit)) return
    if (!ref) throw new Error(`the merge ${commit.slice(0, 12)} is not in ${this.repo} and was not published`)
    await timed("queue", "fetch-merge", () => this.serial(() => fetchRefs(this.repo, this.remote, [ref])))
  }

  async move(from: string, to: string): Promise<TargetMove> {
    const pushed = await pushTarget(this.repo, this.remote, to, this.name, from)
    if (pushed.ok) return { ok: true }
    if (pushed.rejected) return { ok: false, why: "moved", detail: pushed.detail }
    throw new Error(pushed.detail)
  }

  async follow(commit: string): Promise<string | undefined> {
    // Landed by another machine's push: its merge is fetched with the remote's target.
    if (!(await hasCommit(this.repo, commit))) await this.serial(() => fetchBranch(this.repo, this.remote, this.name))
    const [local] = await branchHeads(this.repo, this.name)
    if (local === commit || (local && (await isAncestor(this.repo, commit, local)))) return undefined // it is there already
    if (local && (await isAncestor(this.repo, local, commit))) {
      const moved = await moveTarget(this.repo, this.name, local, commit, `flow: ${this.name} follows ${this.remote}`, this.moves)
      return moved.ok ? undefined : moved.detail
    }
    return `${this.name} in ${this.repo} holds commits that ${this.remote}'s lacks`
  }

  async sweep(live: ReadonlySet<string>): Promise<void> {
    const left = (await timed("queue", "sweep", () => remoteRefs(this.repo, this.remote, this.prefix))).filter((ref) => !live.has(ref))
    await this.drop(left)
  }
}
