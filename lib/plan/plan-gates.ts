// The dependencies a plan section gets when it has no `Depends on` line (docs/PLANNING.md, "the gate rule"). A
// phase boundary is one gate, never every task of one phase times every task of the next: the task the previous
// phase ends in (its checkpoint, or the one section nothing else of it depends on), or, when it ends in several,
// its join: one task made of the phase, whose subtasks its sections become (plan-joins.ts builds it), done when
// they are. A checkpoint waits for everything open before it and holds back the later sections of its phase.
// Every default is one edge per section or fewer, and a checkpoint's are the ends since the previous
// checkpoint: O(tasks) in all. Pure.
import type { PlanNote } from "./plan-parse"

/** A top-level section as the gate rule sees it. */
export type GateSection = {
  id: string
  phase?: number
  checkpoint: boolean
  line: number
  /** how notes name it: "section 1.2" */
  where: string
  /** how a `Depends on` line names it: "1.2", or its id */
  ref: string
}

export type Gates = {
  /** section id → its default dependencies */
  defaults: Map<string, string[]>
  /** phase number → the id of its join, for each phase that ends in several sections and that a later section waits for */
  joins: Map<number, string>
}

/**
 * The default dependencies of the sections without a `Depends on` line (`explicit` holds the others' resolved
 * ones), and the joins they wait for; `joinId` names a phase's join. Notes: a section after a checkpoint of its
 * phase whose own dependencies never reach the checkpoint.
 */
export function defaultDependencies(
  sections: readonly GateSection[],
  explicit: ReadonlyMap<string, readonly string[]>,
  joinId: (phase: number) => string,
  notes: PlanNote[],
): Gates {
  const out = new Map<string, string[]>()
  const joins = new Map<number, string>()
  // The sections of a phase whose join a later section waits for: a checkpoint after that section reaches them through it.
  const joined = new Set<string>()
  const depsOf = (id: string) => explicit.get(id) ?? out.get(id) ?? []
  const numbers = [...new Set(sections.map((s) => s.phase).filter((p) => p !== undefined))].sort((a, b) => a - b)
  const inPhase = (p: number) => sections.filter((s) => s.phase === p)
  let gate: string | undefined
  let join: { phase: number; id: string } | undefined // the previous phase's join, when it is the gate
  let lastCheckpoint: string | undefined
  let since: GateSection[] = [] // sections since the last checkpoint, in the order they were read
  const holds: { section: GateSection; checkpoint: GateSection }[] = []
  numbers.forEach((p, i) => {
    const here = inPhase(p)
    if (i > 0) {
      const ends = endsOf(inPhase(numbers[i - 1]), depsOf)
      if (ends.length === 1) {
        gate = ends[0].id
        join = undefined
      } else if (ends.length > 1) {
        join = { phase: numbers[i - 1], id: joinId(numbers[i - 1]) }
        gate = join.id
      }
      // No end at all is a cycle, which validation reports: the earlier gate stands.
    }
    let held: GateSection | undefined
    for (const s of here) {
      if (!explicit.has(s.id)) {
        if (s.checkpoint) {
          const ends = endsOf(
            since.filter((o) => !joined.has(o.id)),
            depsOf,
          ).map((e) => e.id)
          out.set(s.id, ends.length > 0 ? ends : lastCheckpoint ? [lastCheckpoint] : [])
        } else {
          out.set(s.id, held ? [held.id] : gate ? [gate] : [])
          if (!held && join && !joins.has(join.phase)) {
            joins.set(join.phase, join.id)
            for (const o of inPhase(join.phase)) joined.add(o.id)
          }
        }
      } else if (held) holds.push({ section: s, checkpoint: held })
      if (s.checkpoint) {
        held = s
        lastCheckpoint = s.id
        since = []
      } else since.push(s)
    }
  })
  for (const s of sections) if (s.phase === undefined && !explicit.has(s.id)) out.set(s.id, [])
  notes.push(...heldBackNotes(holds, sections, depsOf))
  return { defaults: out, joins }
}

/** The sections of a list that no other section of it depends on: where the list ends. */
function endsOf(list: readonly GateSection[], depsOf: (id: string) => readonly string[]): GateSection[] {
  const ids = new Set(list.map((s) => s.id))
  const dependedOn = new Set(list.flatMap((s) => depsOf(s.id)).filter((d) => ids.has(d)))
  return list.filter((s) => !dependedOn.has(s.id))
}

/** A warning for each section after a checkpoint of its phase that does not depend on it, directly or through others. */
function heldBackNotes(
  holds: readonly { section: GateSection; checkpoint: GateSection }[],
  sections: readonly GateSection[],
  depsOf: (id: string) => readonly string[],
): PlanNote[] {
  if (holds.length === 0) return []
  // Who depends on whom, backwards: from a checkpoint to every section that reaches it.
  const dependents = new Map<string, string[]>()
  for (const s of sections) for (const d of depsOf(s.id)) dependents.set(d, [...(dependents.get(d) ?? []), s.id])
  const reaching = new Map<string, Set<string>>()
  const reach = (checkpoint: string) => {
    let found = reaching.get(checkpoint)
    if (found) return found
    found = new Set<string>()
    const queue = [checkpoint]
    while (queue.length > 0) {
      for (const d of dependents.get(queue.pop()!) ?? []) {
        if (found.has(d)) continue
        found.add(d)
        queue.push(d)
      }
    }
    reaching.set(checkpoint, found)
    return found
  }
  return holds
    .filter(({ section, checkpoint }) => !reach(checkpoint.id).has(section.id))
    .map(({ section, checkpoint }) => ({
      severity: "warning",
      line: section.line,
      message: `${section.where} comes after the checkpoint ${checkpoint.ref} in phase ${checkpoint.phase} but does not wait for it: it can land before the review`,
      hint: `add ${checkpoint.ref} to its 'Depends on' line, or move it before the checkpoint or into another phase`,
    }))
}
