// One step of a merge queue's lead (docs/RUN.md, "Merge queue"): short, and done under the queue's lead, a lease
// on the state's clock that any run of any machine takes when it is free; never held across a check. In order:
//
//   settle: what is in the target already is landed (a push whose record a kill cut off); a head that failed on
//     the target as it is now leaves with its own failure; the passed candidates at the front, each built on the
//     one ahead, move the target together, from the head, to the last one's merge, by compare-and-swap. A target
//     that moved meanwhile (a person's push) makes that fail: the window is built again on it.
//   build: every candidate of the window (queue_depth) whose merge is not built on the one ahead of it (or on the
//     target for the head) is built, or built again, skipping those that failed (their failure waits for what is
//     ahead of them to land: only then is it their own) and those that conflict with one ahead (they wait unbuilt,
//     and the rest is built without them); its old check is thrown away.
//
// Every change is written in one transaction fenced by the lead's epoch: a lead that lapsed (its machine paused
// or cut off) writes nothing, and its push, built on a target that has moved on since, is refused by the remote.
import { isAncestor, makeMergeCommit, mergeOnFirstParents, treeOf } from "../git/git"
import { type Built, close, join, kept, type Walk } from "../queue-batch/batches"
import { missingCommits } from "../git/remote-git"
import { killPoint, stopPoint } from "../cli/kill-point"
import type { QueueChange, QueueLead, QueueRow } from "../state/queue-rows"
import { timed } from "../cli/trace"
import type { QueueOptions, Verdict } from "./queue-types"

/**
 * What a step did (`changed`: it wrote), and what it leaves for later: the head's move waits for the person (a
 * change, an operation or a lock in the way); `drop`, published refs nothing holds any more, which the caller
 * removes after the step, outside the lead (a push to the remote each time: the lead is the fleet's one lane).
 */
/**
 * `wait.review`: the head waits for its reviewer (flow.yaml `review`), not for something of the person's in the
 * way; `wait.reviewer`: the agent that reviews it, when one does.
 */
export type LeadStep = {
  changed: boolean
  wait?: { taskId: string; detail: string; lock?: boolean; review?: boolean; reviewer?: string }
  drop: string[]
  swept: boolean
}

/**
 * When a step sweeps the published refs nothing in line holds (what killed runs left): "now", or "if-empty"
 * when the line empties by this step; a sweep lists the remote's refs and takes the lead's time, so the caller
 * asks for it at its first step and then now and again, not at every step.
 */
export type Sweep = "now" | "if-empty" | "no"

/**
 * Whether `r`'s run lost its claim of the task (a fleet's: its lease lapsed, and another run may have taken the
 * task over): then a "stopped" verdict, said as what happened, with the other attempt's merge when the target at
 * `tip` holds it. Not the candidate's failure: the task is another run's, and nothing of this attempt lands.
 */
async function lost(o: QueueOptions, r: QueueRow, tip: string): Promise<Extract<Verdict, { kind: "stopped" }> | undefined> {
  if (!o.holds || r.attempt === null || (await o.holds({ taskId: r.task_id, attempt: r.attempt, run: r.run_id }))) return undefined
  const merged = await mergeOnFirstParents(o.repo, tip, subjectOf(r.message), o.batch > 1)
  const landed = merged ? `, and another run landed it: ${o.into.shown} has its merge (${merged.slice(0, 12)})` : ""
  return {
    ok: false,
    kind: "stopped",
    reason: `this run no longer holds ${r.task_id} (its claim of attempt ${r.attempt} lapsed)${landed}; nothing of this attempt lands`,
  }
}

/**
 * A lead's step on queue `o`: settles the head, builds the window, and writes what changed; `trees` caches
 * commits' trees. `sweep`: when the published refs nothing in line holds are removed (what killed runs left),
 * under the lead: only the lead publishes, so none is in the making meanwhile.
 */
export async function leadStep(o: QueueOptions, lead: QueueLead, trees: Map<string, string>, sweep: Sweep): Promise<LeadStep> {
  const rows = o.state.queue
  let line = await rows.line(o.into.key)
  if (line.length === 0) {
    if (sweep !== "no") await o.into.sweep(new Set())
    return { changed: false, drop: [], swept: sweep !== "no" }
  }
  const changes: QueueChange[] = []
  const drop: string[] = []
  const leave = (r: QueueRow, verdict: Verdict, state: "landed" | "left" = "left") => {
    changes.push({ id: r.id, gen: r.gen, state, verdict, reason: verdict.ok ? null : verdict.reason })
    if (r.ref) drop.push(r.ref)
  }
  // A new window starts from the target as it is now: a shared remote's is fetched, so a push made outside flow
  // since the last window is seen before anything is built on it. Within a window its compare-and-swap says so.
  let tip = await o.into.tip(lead.tip, lead.tip === null || line.every((r) => r.merge === null))
  let wait: LeadStep["wait"]
  for (let round = 0; round < 3; round++) {
    // A merge already in the target landed (its record cut off by a kill, or by a lead that lapsed after its push).
    // One this clone lacks is not in it: the target's commit is here with all its history.
    while (line[0]?.merge && line[0].base !== tip && (await inTarget(o, line[0].merge, tip))) {
      const r = line.shift()!
      leave(r, { ok: true, commit: r.merge!, alreadyMerged: r.merge === r.base }, "landed")
    }
    // A head that failed on the target as it is now: its failure is its own (unless its task is another run's now).
    while (line[0]?.state === "failed" && line[0].base === tip) {
      const r = line.shift()!
      leave(r, (await lost(o, r, tip)) ?? (r.verdict as Verdict))
    }
    line = await reviewed(o, line, leave)
    const front = await passedFront(o, line, tip, leave)
    const batch = front.batch
    line = front.line
    wait = wait ?? front.wait
    if (batch.length === 0) break
    const to = batch.at(-1)!.merge!
    await o.into.fetch(to, batch.at(-1)!.ref) // another machine's build is pushed from here
    if (to !== tip) stopPoint("before-push")
    const moved =
      to === tip
        ? { ok: true as const }
        : await timed(batch[0].task_id, "move", () => o.into.move(tip, to, `flow: ${batch.map((r) => subjectOf(r.message)).join("; ")}`))
    if (!moved.ok && moved.why === "wait") {
      wait = { taskId: batch[0].task_id, detail: moved.detail, lock: moved.lock }
      break
    }
    if (!moved.ok) {
      // Someone moved the target: what is in it now is looked at again, and the window is built on it.
      tip = await o.into.tip(null, true)
      // Not when another lead landed this very window meanwhile (this one's lead had lapsed): the next round sees it.
      const where = o.into.shared ? `${o.target} of the shared remote` : o.target
      if (!(await inTarget(o, to, tip)))
        o.bus.emit({ type: "notice", text: `${where} moved meanwhile (a commit made outside flow): the merge queue is built again on it` })
      continue
    }
    if (to !== tip) killPoint(o.into.shared ? "after-push" : "after-merge")
    for (const r of batch) leave(r, { ok: true, commit: r.merge!, alreadyMerged: r.merge === r.base }, "landed")
    line = line.slice(batch.length)
    tip = to
  }
  changes.push(...(await build(o, line, tip, trees, drop)))
  if (!(await rows.apply(lead, changes, tip))) {
    // The lead lapsed under this step: another run leads now, and what this one published is nobody's.
    return { changed: false, drop: changes.flatMap((c) => (c.build?.ref ? [c.build.ref] : [])), swept: false }
  }
  const after = sweep === "now" || (sweep === "if-empty" && changes.length > 0) ? await rows.line(o.into.key) : undefined
  if (after && (sweep === "now" || after.length === 0)) {
    await o.into.sweep(new Set(after.flatMap((r) => (r.ref ? [r.ref] : []))))
    return { changed: changes.length > 0, wait, drop: [], swept: true }
  }
  return { changed: changes.length > 0, wait, drop, swept: false }
}

/**
 * The passed candidates at the front of `line`, each built on the one ahead (the head on `tip`), that may move
 * the target together: up to one whose review waits (then `wait` says so; those behind it are checked meanwhile)
 * or one whose task another run took over (it leaves, and `line` is without it).
 */
async function passedFront(
  o: QueueOptions,
  line: QueueRow[],
  tip: string,
  leave: (r: QueueRow, v: Verdict) => void,
): Promise<{ batch: QueueRow[]; line: QueueRow[]; wait?: NonNullable<LeadStep["wait"]> }> {
  const batch: QueueRow[] = []
  // A batch's covered candidates move with its last one, once that one passed (docs/RUN.md, "Batches").
  let covered: QueueRow[] = []
  for (const r of line) {
    if (r.base !== (covered.at(-1)?.merge ?? batch.at(-1)?.merge ?? tip)) break
    if (r.state === "covered") {
      covered.push(r)
      continue
    }
    if (r.state !== "passed") break
    for (const x of [...covered, r]) {
      const review = await o.review?.(x.task_id, x.head)
      if (review?.state === "waiting") {
        const agent = review.agent
        const by = agent ? ` by agent ${agent}` : ""
        const detail = `its merge passed and waits for review${by}: 'flow review ${x.task_id}' shows it, then approve or ask for changes`
        return { batch, line, wait: { taskId: x.task_id, detail, review: true, ...(agent ? { reviewer: agent } : {}) } }
      }
      // Nothing of a task another run took over lands (its run's claim, asked now: a fleet's).
      const gone = await lost(o, x, tip)
      if (gone) {
        leave(x, gone)
        return { batch, line: line.filter((y) => y !== x) }
      }
    }
    batch.push(...covered, r)
    covered = []
  }
  return { batch, line }
}

/**
 * The line without the candidates a reviewer asked changes of, wherever they are in it: each leaves with the
 * comment (its task's agent gets it as a fix round), and those behind it are built again without it.
 */
async function reviewed(o: QueueOptions, line: QueueRow[], leave: (r: QueueRow, v: Verdict) => void): Promise<QueueRow[]> {
  if (!o.review) return line
  const kept: QueueRow[] = []
  for (const r of line) {
    const review = r.state === "passed" || r.state === "covered" ? await o.review(r.task_id, r.head) : undefined
    if (review?.state !== "changes") kept.push(r)
    else leave(r, { ok: false, kind: "review", reason: `the reviewer asked for changes: ${review.comment}`, comment: review.comment })
  }
  return kept
}

/** A merge's subject: its message's first line (its evidence's trailers follow: lib/run/evidence.ts), as `git log %s` shows it. */
function subjectOf(message: string): string {
  return message.split("\n", 1)[0]
}

/** Whether `commit` is in the target at `tip` (a commit this clone lacks is not: the tip is here with its history). */
async function inTarget(o: QueueOptions, commit: string, tip: string): Promise<boolean> {
  return (await missingCommits(o.repo, [commit])).size === 0 && isAncestor(o.repo, commit, tip)
}

/**
 * The changes that build the window on `tip`: every candidate not built on the one ahead of it, within queue_depth
 * batches. Batches (docs/RUN.md, "Batches"): up to `o.batch` consecutive candidates are built as a chain of merges,
 * the last one's check covering the others (`covered`), and the last one's merge is the batch's commit on the
 * target. A batch that failed at the head is built again as its two halves, checked side by side.
 */
async function build(o: QueueOptions, line: QueueRow[], tip: string, trees: Map<string, string>, drop: string[]): Promise<QueueChange[]> {
  const size = o.check ? o.batch : 1
  const reach = o.depth * size
  const changes: QueueChange[] = []
  // Every candidate of the window, built or not: a build another machine's lead made may be rebuilt here, on a
  // clone that never fetched that candidate's branch.
  const missing = await o.into.missing(line.slice(0, reach))
  const w: Walk = { o, size, base: tip, baseRef: null, chain: [], built: [], drop, caps: new Map(), forced: new Set(), why: new Map() }
  for (let i = 0; i < line.length; i++) {
    const r = line[i]
    if (r.merge && r.base === w.base && !w.forced.has(r.id)) {
      const split = await kept(w, line, i, tip)
      if (split !== undefined) i = split - 1
      continue
    }
    const thrown = checkThrown(r)
    if (i >= reach) {
      await close(w)
      // Built on what no longer holds, and not to be built now: it waits.
      if (r.merge) changes.push({ id: r.id, gen: r.gen, state: "waiting", build: { base: null, merge: null, ref: null, ahead: [] }, reason: null, thrown })
      if (r.ref) drop.push(r.ref)
      continue
    }
    if (r.ref) drop.push(r.ref)
    if (missing.has(r.head)) {
      const reason = `its branch's commit ${r.head.slice(0, 12)} is not on the shared remote (its push failed?): nothing to merge`
      changes.push({ id: r.id, gen: r.gen, state: "left", reason, verdict: { ok: false, kind: "refused", reason } })
      continue
    }
    if (w.open && w.open.rows.length >= w.open.cap) await close(w)
    const on = w.base
    await o.into.fetch(on, w.baseRef) // a merge another machine built, which this one builds on
    const m = await timed(r.task_id, "build", () => makeMergeCommit(o.repo, on, r.head, r.message, o.author, o.keepOut))
    const reason = w.why.get(r.id) ?? (r.merge ? `rebuilt on ${w.chain.at(-1) ?? o.target}` : null)
    // A branch in the target already merges to the target's own tree; only then is git asked whether it is.
    if (m.ok && m.tree === (await cachedTree(o.repo, trees, on)) && (await isAncestor(o.repo, r.head, on))) {
      // Never inside a batch: what passes at once must be a checked commit, the batch's own.
      await close(w)
      w.built.push({ r, base: w.base, merge: w.base, ahead: [...w.chain], already: true, reason: "already in the target" })
      continue
    }
    // Not a conflict (git could not merge at all): the queue's failure, not the candidate's.
    if (!m.ok && m.conflicts.length === 0) throw new Error(`could not merge ${r.branch} on ${on.slice(0, 12)}: ${m.reason}`)
    if (!m.ok) {
      if (i === 0) {
        // A task another run took over conflicts with its merge there: not this candidate's to fail.
        const verdict = (await lost(o, r, on)) ?? ({ ok: false, kind: "conflict", conflicts: m.conflicts, reason: m.reason } as const)
        changes.push({ id: r.id, gen: r.gen, state: "left", reason: verdict.reason, verdict })
        continue
      }
      // It conflicts with a candidate ahead: it waits unbuilt until that one lands or leaves (then, at the head, it
      // is built on the target, and most often leaves with the conflict, its agent's to fix). The rest is built
      // without it, as behind a failure, so their checks run meanwhile instead of waiting too. Said once: a step
      // that wrote the same wait again would count as a change, and the queue would step again at once.
      const why = `conflicts with ${w.chain.join(", ")} ahead of it: waits for them to land or leave`
      if (r.merge !== null || r.state !== "waiting" || r.reason !== why)
        changes.push({ id: r.id, gen: r.gen, state: "waiting", build: { base: null, merge: null, ref: null, ahead: [] }, reason: why, thrown })
      continue
    }
    trees.set(m.commit, m.tree)
    if (m.dropped.length && r.gen === 0)
      o.bus.emit({
        type: "notice",
        taskId: r.task_id,
        text: `${r.branch} changes ${m.dropped.slice(0, 5).join(", ")}, flow's own file${m.dropped.length === 1 ? "" : "s"}: left out of the merge (flow's state never comes from a task's branch)`,
      })
    join(w, { r, kept: false, base: on, merge: m.commit, ahead: [...w.chain], reason })
    w.baseRef = null // built here: this clone has it
  }
  await close(w, true)
  changes.push(...(await published(o, w.built)))
  return changes
}

/** 1 when `r`'s check ran or runs: building it again throws that check away (counted in the queue's report). */
function checkThrown(r: QueueRow): 0 | 1 {
  return r.state === "checking" || r.state === "passed" || r.state === "failed" ? 1 : 0
}

/** The tree of `commit`, from `trees` when it was read before. */
async function cachedTree(repo: string, trees: Map<string, string>, commit: string): Promise<string> {
  let tree = trees.get(commit)
  if (tree === undefined) trees.set(commit, (tree = await treeOf(repo, commit)))
  return tree
}

/** The changes that record the builds, once their merges are published for every machine (a fleet's). */
async function published(o: QueueOptions, built: readonly Built[]): Promise<QueueChange[]> {
  const changes: QueueChange[] = []
  const refs = await o.into.publish(built.filter((b) => !b.already).map((b) => ({ id: b.r.id, gen: b.r.gen, commit: b.merge })))
  for (const b of built) {
    const thrown = b.spent ? 0 : checkThrown(b.r)
    changes.push({
      id: b.r.id,
      gen: b.r.gen,
      state: b.already || !o.check ? "passed" : b.covered ? "covered" : "ready",
      build: { base: b.base, merge: b.merge, ref: refs.get(b.r.id) ?? null, ahead: b.ahead },
      reason: b.reason,
      thrown,
    })
  }
  return changes
}
