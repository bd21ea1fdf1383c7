// The dependencies a plan section gets when it has no `Depends on` line (docs/PLANNING.md, "Gates"). A phase
// boundary is one gate, never every task of one phase times every task of the next: the task the previous
// phase ends in (its checkpoint, or the one section nothing else of it depends on). A phase that ends in several
// sections has no gate, and what comes after it does not wait for it (with a warning). A checkpoint waits for
// everything open before it and holds back the later sections of its phase. Every default is one edge per
// section or fewer, and a checkpoint's are the ends since the previous checkpoint: O(tasks) in all. Pure.
import type { PlanNote, PlanPhase } from "./plan-parse"
import { listed } from "../validation/findings"

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

/**
 * Section id → its default dependencies, for the sections without a `Depends on` line (`explicit` holds the
 * others' resolved ones). Notes: a phase without a gate that sections of the next one would have waited for, and
 * a section after a checkpoint of its phase whose own dependencies never reach the checkpoint.
 */
export function defaultDependencies(
  phases: readonly PlanPhase[],
  sections: readonly GateSection[],
  explicit: ReadonlyMap<string, readonly string[]>,
  notes: PlanNote[],
): Map<string, string[]> {
  const out = new Map<string, string[]>()
  const depsOf = (id: string) => explicit.get(id) ?? out.get(id) ?? []
  const numbers = [...new Set(sections.map((s) => s.phase).filter((p) => p !== undefined))].sort((a, b) => a - b)
  const inPhase = (p: number) => sections.filter((s) => s.phase === p)
  let gate: string | undefined
  let lastCheckpoint: string | undefined
  let since: GateSection[] = [] // sections since the last checkpoint, in the order they were read
  const holds: { section: GateSection; checkpoint: GateSection }[] = []
  numbers.forEach((p, i) => {
    const here = inPhase(p)
    if (i > 0) {
      const before = inPhase(numbers[i - 1])
      const ends = endsOf(before, depsOf)
      if (ends.length === 1) gate = ends[0].id
      else {
        const firstCheckpoint = here.findIndex((s) => s.checkpoint)
        const waiting = (firstCheckpoint < 0 ? here : here.slice(0, firstCheckpoint)).filter((s) => !explicit.has(s.id))
        if (waiting.length > 0 && ends.length > 1) notes.push(noGate(p, numbers[i - 1], ends, phases, waiting[0]))
      }
    }
    let held: GateSection | undefined
    for (const s of here) {
      if (!explicit.has(s.id)) {
        if (s.checkpoint) {
          const ends = endsOf(since, depsOf).map((e) => e.id)
          out.set(s.id, ends.length > 0 ? ends : lastCheckpoint ? [lastCheckpoint] : [])
        } else out.set(s.id, held ? [held.id] : gate ? [gate] : [])
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
  return out
}

/** The sections of a list that no other section of it depends on: where the list ends. */
function endsOf(list: readonly GateSection[], depsOf: (id: string) => readonly string[]): GateSection[] {
  const ids = new Set(list.map((s) => s.id))
  const dependedOn = new Set(list.flatMap((s) => depsOf(s.id)).filter((d) => ids.has(d)))
  return list.filter((s) => !dependedOn.has(s.id))
}

function noGate(phase: number, before: number, ends: readonly GateSection[], phases: readonly PlanPhase[], first: GateSection): PlanNote {
  const shown =
    ends.length > 4
      ? `${ends
          .slice(0, 3)
          .map((e) => e.ref)
          .join(", ")} and ${ends.length - 3} more`
      : listed(ends.map((e) => e.ref))
  return {
    severity: "warning",
    line: phases.find((p) => p.n === phase)?.line ?? first.line,
    message: `the sections of phase ${phase} without a 'Depends on' line do not wait for phase ${before}: it ends in ${ends.length} sections (${shown}) and has no checkpoint`,
    hint: `end phase ${before} with a '(checkpoint)' section, the one gate phase ${phase} then waits for, or give the sections of phase ${phase} 'Depends on:' lines ('Depends on: none' when they need nothing)`,
  }
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
