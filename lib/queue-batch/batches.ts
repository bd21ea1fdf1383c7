// The merge queue's batches (docs/RUN.md, "Batches"), as the lead builds its window (lib/landing/queue-lead.ts):
// up to N consecutive candidates are merged in a chain as one at a time (a on the target, b on a's merge, ...), and
// the batch's last candidate gets the batch's commit: the chain's tree on the target as it was (first parent),
// the chain's last merge as its second parent. Only that commit is checked; the candidates ahead of it in the
// batch are `covered` by its check and land with it. So the target's first-parent history holds only checked
// commits, one per batch, and every task's merge once (in the batch's second-parent chain).
//
// A batch that fails at the head of the line (built on the target, nothing ahead of it) is built again as its two
// halves, each a batch, the second on the first: checked side by side, and so on until the failing candidate is
// alone, when its failure is its own (as any candidate's). A batch behind others that fails waits, as a failure
// behind the head does: the rest is built without it, and it is bisected only once at the head.
import { makeBatchCommit } from "../git/git"
import type { QueueRow } from "../state/queue-rows"

/** How a bisection's rebuild says why (the run counts them: a failure's bisection steps in the queue report). */
export const BISECTED = "failed: checked again as halves"

/** What a batch's build needs of its queue (lib/landing/queue-types.ts QueueOptions has it). */
export type BatchQueue = {
  repo: string
  target: string
  author: { name: string; email: string }
  into: { fetch(commit: string, ref: string | null): Promise<void> }
}

/** A build the lead records: `covered`, its check is its batch's last candidate's; `spent`, its failure bisected its batch (no check thrown). */
export type Built = { r: QueueRow; base: string; merge: string; ahead: string[]; already: boolean; reason: string | null; covered?: boolean; spent?: boolean }

/** A candidate of the batch being built: kept as it was built before, or built now (its chain's merge). */
type Entry = { r: QueueRow; kept: boolean; base: string; merge: string; ahead: string[]; reason: string | null }

/** The batch being built: what it is built on (its commit's first parent) and its ref, the tasks ahead of it, its candidates, its largest size. */
type Open = { from: string; fromRef: string | null; before: string[]; rows: Entry[]; cap: number }

/** The window's build as the lead walks the line. */
export type Walk = {
  o: BatchQueue
  /** the batch size (1: no batches) */
  size: number
  /** what the next candidate is built on, where it is fetched from, and the tasks whose merges it holds */
  base: string
  baseRef: string | null
  chain: string[]
  built: Built[]
  /** refs published for builds that no longer hold */
  drop: string[]
  open?: Open
  /** a bisection's halves: their candidates' batch size, rebuilt whatever they were, and why */
  caps: Map<number, number>
  forced: Set<number>
  why: Map<number, string>
  /** a batch (or a candidate) ahead in the window is built and its check not over */
  busy?: boolean
}

/** Adds a candidate to the batch being built (a new batch when none is), and builds on its merge. */
export function join(w: Walk, e: Entry): void {
  if (!w.open) w.open = { from: e.base, fromRef: w.baseRef, before: [...w.chain], rows: [], cap: Math.min(w.size, w.caps.get(e.r.id) ?? w.size) }
  w.open.rows.push(e)
  w.chain.push(e.r.task_id)
  w.base = e.merge
}

/**
 * A candidate built on what it should be (`line[i]`), kept as it is: a covered one joins its batch; the last of a
 * batch ends it; a batch that failed is bisected at the head, or waits behind it. The index the walk starts again from (a
 * bisection rebuilds from the batch's first candidate), or undefined.
 */
export async function kept(w: Walk, line: readonly QueueRow[], i: number, tip: string): Promise<number | undefined> {
  const r = line[i]
  const e: Entry = { r, kept: true, base: r.base!, merge: r.merge!, ahead: r.ahead, reason: r.reason }
  if (r.state === "covered") {
    join(w, e)
    w.baseRef = r.ref
    return undefined
  }
  const g = w.open
  if (r.state === "failed") {
    // A failure alone behind the head waits for what is ahead of it; the rest is built without it.
    if (!g) return undefined
    w.open = undefined
    const at = line.indexOf(g.rows[0].r)
    if (at === 0 && g.from === tip) return bisect(w, [...g.rows.map((x) => x.r), r], tip)
    // A batch that failed behind others waits as a failure does: the rest is built without any of it.
    w.base = g.from
    w.baseRef = g.fromRef
    w.chain = g.before
    return undefined
  }
  // A batch ahead not checked yet: a batch behind it that is not full waits to fill (close, `end`).
  if (r.state === "ready" || r.state === "checking") w.busy = true
  w.open = undefined
  w.chain.push(r.task_id)
  w.base = r.merge!
  w.baseRef = r.ref
  return undefined
}

/** A batch that failed at the head: its candidates rebuilt as two halves on the target. The index to build again from. */
function bisect(w: Walk, rows: QueueRow[], tip: string): number {
  const k = rows.length
  const first = Math.ceil(k / 2)
  const why = `its batch of ${k} (${rows.map((x) => x.task_id).join(", ")}) ${BISECTED} of ${first} and ${k - first}`
  for (const [j, x] of rows.entries()) {
    w.caps.set(x.id, j < first ? first : k - first)
    w.forced.add(x.id)
    w.why.set(x.id, why)
  }
  w.base = tip
  w.baseRef = null
  w.chain = []
  return 0
}

/**
 * Ends the batch being built: its last candidate's merge becomes the batch's commit (when it holds more than one),
 * the one checked. At the window's `end`, a batch not full behind one whose check is not over is left covered, every
 * candidate of it: it takes in those handed over meanwhile, and is checked once the one ahead is done.
 */
export async function close(w: Walk, end = false): Promise<void> {
  const g = w.open
  if (!g) return
  w.open = undefined
  const last = g.rows.at(-1)!
  const tasks = g.rows.map((e) => e.r.task_id)
  if (end && w.busy && g.rows.length < g.cap) {
    const fills = `waits for more candidates (a batch of up to ${g.cap}) while the one ahead is checked`
    for (const e of g.rows)
      if (!e.kept) w.built.push({ r: e.r, base: e.base, merge: e.merge, ahead: e.ahead, already: false, reason: e.reason ?? fills, covered: true })
    return
  }
  w.busy = true
  const built = (e: Entry, merge: string, covered: boolean, reason: string | null): Built => ({
    r: e.r,
    base: e.base,
    merge,
    ahead: e.ahead,
    already: false,
    reason,
    covered,
    spent: w.forced.has(e.r.id) && e.r.state === "failed",
  })
  const said = `checked as one batch of ${tasks.length} (${tasks.join(", ")})`
  for (const e of g.rows.slice(0, -1)) if (!e.kept) w.built.push(built(e, e.merge, true, e.reason ?? said))
  if (last.kept && last.r.ref) w.drop.push(last.r.ref)
  if (g.rows.length === 1) {
    w.built.push(built(last, last.merge, false, last.reason))
    return
  }
  await w.o.into.fetch(g.from, g.fromRef)
  await w.o.into.fetch(last.merge, last.kept ? last.r.ref : null)
  const message = `Merge a batch of ${tasks.length} into ${w.o.target}: ${tasks.join(", ")}`
  const commit = await makeBatchCommit(w.o.repo, g.from, last.merge, message, w.o.author)
  w.built.push(built(last, commit, false, last.reason ?? said))
  w.base = commit
  w.baseRef = null
}
