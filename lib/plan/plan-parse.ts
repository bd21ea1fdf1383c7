// plan.md → phases, sections and their sub-headings, every piece with its line in the file (SPEC section 1,
// "Plan shape"). Pure: no IO. Real plans are messy, so the parser is generous about heading forms and
// reports, with line numbers, every piece of text it could not place instead of dropping it.
import { splitLines, trackBlocks, type PlanLine, type PlanNote } from "../markdown/markdown-blocks"
import { writtenLines } from "../markdown/markdown-outline"
import { cleanTitle, HEADING_DEPENDS, readLabel, REFS_START } from "../markdown/plan-labels"

/** One source line: its 1-based number in plan.md and its text. */
export type { PlanLine }

/** Something the reader of plan.md should know; errors stop `flow generate` before it writes. */
export type { PlanNote }

/** A `## Phase <n>: <title>` heading. */
export type PlanPhase = { n: number; title: string; line: number }

/** A `#### ...` heading inside a section: a step of the section's task, or a subtask (`#####` and deeper: a subtask's subtask). */
export type PlanChild = {
  kind: "step" | "subtask"
  /** 1 for a `####` heading, 2 for a `#####` one under a subtask, ...; a step is always 1 */
  depth: number
  /** `2.1.3` for a numbered subtask, `2.1.3.1` one level deeper */
  number?: string
  title: string
  /** from a `{#id}` attribute at the end of the heading */
  id?: string
  checkpoint: boolean
  line: number
  body: PlanLine[]
}

/** A `### <n>.<m> <title>` heading and everything under it up to the next heading of level 3 or less. */
export type PlanSection = {
  /** `1.2`; absent when the heading has no number */
  number?: string
  /** from the enclosing phase heading, else from the number */
  phase?: number
  title: string
  id?: string
  checkpoint: boolean
  line: number
  /** the lines before the first step or subtask heading */
  body: PlanLine[]
  children: PlanChild[]
}

export type ParsedPlan = { title?: string; phases: PlanPhase[]; sections: PlanSection[]; notes: PlanNote[] }

const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/
// "Phase 2: API", "Phase 2 - API (week 2)", "Milestone 2. API", "2. API": the word is optional, the number is not.
const PHASE = /^(?:(?:phase|milestone|stage|part)\s+)?(\d+(?:\.\d+)?)\s*(?:[:.)\-–—]\s*|\s+|$)(.*)$/i
// "1.2 Title", "1.2. Title", "1.2: Title", "Task 1.2 - Title", "Section 1.2 Title"
const SECTION = /^(?:(?:task|section|step|item)\s+)?(\d+)\.(\d+)\.?\s*(?:[:)\-–—]\s*)?(.*)$/i
const SUBTASK_NUMBER = /^(\d+\.\d+\.\d+(?:\.\d+)*)\.?\s*(?:[:)\-–—]\s*)?(.*)$/
const SUBTASK_WORD = /^subtask\b\s*(?:\d+\s*)?[:.)\-–—]?\s*(.*)$/i
const STEP_WORD = /^step\s*(\d+)?\s*[:.)\-–—]?\s*(.*)$/i
/**
 * Splits plan.md into its phases and sections; every line lands in a section or in a note. `name` is the
 * file as the notes call it (`flow generate other-plan.md`).
 */
export function parsePlan(text: string, name = "plan.md"): ParsedPlan {
  const lines = splitLines(text)
  const reader = new PlanReader(name)
  const blocks = trackBlocks()
  for (const [i, raw] of lines.entries()) {
    const line: PlanLine = { n: i + 1, text: raw }
    // A heading in a code block or an HTML comment is text, not a task.
    const h = blocks.line(raw) ? null : raw.match(HEADING)
    const level = h ? h[1].length : 0
    const content = (h?.[2] ?? "").trim()
    if (level === 0) reader.place(line)
    else if (level === 1) reader.top(content, line)
    else if (level === 2) reader.phaseHeading(content, line)
    else if (level === 3) reader.sectionHeading(content, line)
    else reader.childHeading(level, content, line)
  }
  reader.end(lines, blocks.open)
  return reader.out
}

/** The reader's place in plan.md as it goes down the lines: the phase, section and step or subtask they belong to. */
class PlanReader {
  readonly out: ParsedPlan = { phases: [], sections: [], notes: [] }
  private phase: PlanPhase | undefined
  private section: PlanSection | undefined
  private child: PlanChild | undefined
  // Text that belongs to no section: collected per region and reported once per region.
  private stray: { where: string; lines: PlanLine[] } | undefined = { where: "before the first phase", lines: [] }

  constructor(private readonly name: string) {}

  place(line: PlanLine): void {
    if (this.child) this.child.body.push(line)
    else if (this.section) this.section.body.push(line)
    else this.stray?.lines.push(line)
  }

  private flushStray(): void {
    const content = writtenLines(this.stray?.lines ?? [])
    if (this.stray && content.length > 0) {
      const first = content[0].n
      const last = content.at(-1)!.n
      this.out.notes.push({
        severity: "warning",
        line: first,
        message: `${first === last ? `line ${first}` : `lines ${first}-${last}`} ${this.stray.where} ${first === last ? "belongs" : "belong"} to no section: not in tasks.yaml`,
        hint: "move the text under a '### <n>.<m> <title>' section if an agent should see it",
      })
    }
    this.stray = undefined
  }

  /** A `#` heading: the plan's title the first time, else the start of text that belongs to no phase. */
  top(content: string, line: PlanLine): void {
    const out = this.out
    if (out.title === undefined && out.sections.length === 0) {
      out.title = content
      if (!/^implementation plan\b/i.test(content)) {
        out.notes.push({
          severity: "warning",
          line: line.n,
          message: `the title is '${content}', not 'Implementation Plan'`,
          hint: `start ${this.name} with '# Implementation Plan'`,
        })
      }
      return
    }
    this.flushStray()
    ;[this.phase, this.section, this.child] = [undefined, undefined, undefined]
    this.stray = { where: `under '# ${content}'`, lines: [] }
  }

  /** A `##` heading: a phase when it has a number, else text that belongs to no phase. */
  phaseHeading(content: string, line: PlanLine): void {
    const out = this.out
    this.flushStray()
    ;[this.section, this.child] = [undefined, undefined]
    const m = content.match(PHASE)
    if (!m) {
      this.phase = undefined
      this.stray = { where: `under '## ${content}'`, lines: [] }
      return
    }
    const phase: PlanPhase = { n: Number(m[1]), title: cleanTitle(m[2]).title, line: line.n }
    this.phase = phase
    if (!/^phase\s+\d+(?:\.\d+)?\s*:\s*\S/i.test(content)) {
      const read = phase.title ? `phase ${phase.n} '${phase.title}'` : `phase ${phase.n}, without a title`
      out.notes.push({ severity: "warning", line: line.n, message: `read '## ${content}' as ${read}`, hint: "write phase headings as '## Phase <n>: <title>'" })
    }
    const twice = out.phases.find((p) => p.n === phase.n)
    if (twice)
      out.notes.push({
        severity: "warning",
        line: line.n,
        message: `phase ${phase.n} appears twice (first at line ${twice.line})`,
        hint: "number the phases 1, 2, 3, ...",
      })
    out.phases.push(phase)
    this.stray = { where: `under '## ${content}' before its first section`, lines: [] }
  }

  /** A `###` heading: a section, numbered or inside a phase; else commentary. */
  sectionHeading(content: string, line: PlanLine): void {
    const out = this.out
    const phase = this.phase
    const m = content.match(SECTION)
    if (!m && !phase) {
      // A `###` outside any phase and without a number is commentary, not work.
      if (this.section) {
        ;[this.section, this.child] = [undefined, undefined]
        this.stray = { where: `under '### ${content}'`, lines: [] }
      }
      this.stray ??= { where: `under '### ${content}'`, lines: [] }
      this.stray.lines.push(line)
      return
    }
    this.flushStray()
    this.child = undefined
    const { title, id, checkpoint, depends } = headingParts(m ? m[3] : content, line, out.notes)
    const number = m ? `${Number(m[1])}.${Number(m[2])}` : undefined
    this.section = { number, phase: phase?.n ?? (m ? Number(m[1]) : undefined), title, id, checkpoint, line: line.n, body: depends, children: [] }
    if (!m) {
      out.notes.push({
        severity: "warning",
        line: line.n,
        message: `section '${content}' has no <n>.<m> number`,
        hint: `number it, for example '### ${phase!.n}.${sectionsIn(out, phase!.n) + 1} ${content}'`,
      })
    } else if (phase && Number(m[1]) !== phase.n) {
      out.notes.push({
        severity: "warning",
        line: line.n,
        message: `section ${number} is under phase ${phase.n} (line ${phase.line}); it is put in phase ${phase.n}`,
        hint: `renumber it ${phase.n}.<m> or move it under its phase`,
      })
    } else if (!phase) {
      out.notes.push({
        severity: "warning",
        line: line.n,
        message: `section ${number} is under no '## Phase ${m[1]}' heading; it is put in phase ${m[1]}`,
        hint: `add '## Phase ${m[1]}: <title>' above it`,
      })
    }
    if (!title)
      out.notes.push({
        severity: "warning",
        line: line.n,
        message: `section ${number ?? ""} has no title`.replace("  ", " "),
        hint: "write a title after the number",
      })
    out.sections.push(this.section)
  }

  /** A heading of level 4-6: a step or subtask of the section; any other (a "#### Notes") is text of what is above. */
  childHeading(level: number, content: string, line: PlanLine): void {
    const section = this.section
    const kind = section ? childKind(content) : undefined
    // A step is a `####` heading of the section; a `#####` "Step" is text of the subtask above it.
    if (!section || !kind || (level !== 4 && kind.kind !== "subtask")) {
      this.place(line)
      return
    }
    const { title, id, checkpoint, depends } = headingParts(kind.title, line, this.out.notes)
    // A subtask heading one level below the previous subtask is its child (SPEC 2.3: any depth); one that
    // skips a level has no heading to hang from, so it goes one below the deepest open subtask.
    const above = section.children.at(-1)
    const deepest = above?.kind === "subtask" ? above.depth : 0
    const depth = Math.min(level - 3, deepest + 1)
    if (depth < level - 3) {
      this.out.notes.push({
        severity: "warning",
        line: line.n,
        message: `'${"#".repeat(level)} ${content}' is ${level - 3 - depth} heading level${level - 3 - depth > 1 ? "s" : ""} deeper than the subtask above it: read as ${depth === 1 ? "a subtask of the section" : "a subtask of the subtask above it"}`,
        hint: `write it as '${"#".repeat(depth + 3)} ${content}'`,
      })
    }
    const child: PlanChild = { kind: kind.kind, depth, number: kind.number, title, id, checkpoint, line: line.n, body: depends }
    this.child = child
    const other = section.children.find((c) => c.kind !== kind.kind && c.depth === 1)
    if (depth === 1 && other) {
      // A task with both would never run: it waits for its subtasks, and its steps keep it from finishing.
      // Markdown makes a `#### Step` after a `#### 1.2.1` its sibling, not its child, so it is not guessed.
      const [step, subtask] = kind.kind === "step" ? [child, other] : [other, child]
      this.out.notes.push({
        severity: "error",
        line: line.n,
        message: `section ${section.number ?? `'${section.title}'`} has both steps (line ${step.line}) and subtasks (line ${subtask.line}): a task has one or the other`,
        hint: "move the steps into their own section, or write them as the subtask's text",
      })
    }
    section.children.push(child)
  }

  /** After the last line: a block never closed, the text left over, a missing title, a plan with no section. */
  end(lines: readonly string[], open: ReturnType<typeof trackBlocks>["open"]): void {
    const out = this.out
    const name = this.name
    if (open?.kind === "code") {
      out.notes.push({
        severity: "warning",
        line: open.at,
        message: "this code block is never closed: it runs to the end of the file",
        hint: `close it with ${open.marker}`,
      })
    } else if (open) {
      out.notes.push({
        severity: "warning",
        line: open.at,
        message: "this HTML comment is never closed: it runs to the end of the file",
        hint: "close it with -->",
      })
    }
    this.flushStray()
    if (out.title === undefined && out.sections.length > 0) {
      out.notes.push({
        severity: "warning",
        line: 1,
        message: `${name} has no '# Implementation Plan' title`,
        hint: `start ${name} with '# Implementation Plan'`,
      })
    }
    if (out.sections.length > 0) return
    const example = listAsSections(lines, out.phases)
    out.notes.push({
      severity: "error",
      line: example?.line,
      message: !lines.some((l) => l.trim())
        ? `${name} is empty`
        : example
          ? `${name} has its work as list items, not as '### <n>.<m> <title>' sections: there is nothing to make tasks of`
          : `${name} has no '### <n>.<m> <title>' sections: there is nothing to make tasks of`,
      hint: example
        ? `make each task a heading under its phase: line ${example.line} '${example.text.trim()}' becomes '${example.heading}'`
        : `write ${name} as '# Implementation Plan', '## Phase <n>: <title>', '### <n>.<m> <title>' with work items (or run 'flow plan')`,
    })
  }
}

const LIST_ITEM = /^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.+)$/

/**
 * For a plan written as lists (`1. Set up the repo` under a phase heading): the first top-level item and the
 * section heading it would be. The hint shows the fix on the file's own line rather than a generic template.
 */
function listAsSections(lines: readonly string[], phases: readonly PlanPhase[]): { line: number; text: string; heading: string } | undefined {
  const blocks = trackBlocks()
  let count = 0
  for (const [i, raw] of lines.entries()) {
    if (blocks.line(raw)) continue
    if (HEADING.test(raw)) count = 0
    const m = raw.match(LIST_ITEM)
    if (!m || m[1].length > 0) continue
    count++
    const phase = phases.filter((p) => p.line < i + 1).at(-1)?.n ?? 1
    return { line: i + 1, text: raw, heading: `### ${phase}.${count} ${m[2].trim()}` }
  }
  return undefined
}

function sectionsIn(plan: ParsedPlan, phase: number): number {
  return plan.sections.filter((s) => s.phase === phase).length
}

function childKind(content: string): { kind: PlanChild["kind"]; number?: string; title: string } | undefined {
  if (readLabel(content)) return undefined
  const step = content.match(STEP_WORD)
  if (step) return { kind: "step", title: step[2] }
  const numbered = content.match(SUBTASK_NUMBER)
  if (numbered) return { kind: "subtask", number: numbered[1].split(".").map(Number).join("."), title: numbered[2] }
  const word = content.match(SUBTASK_WORD)
  if (word) return { kind: "subtask", title: word[1] }
  return undefined
}

/**
 * A section or subtask heading's title, id and checkpoint (cleanTitle), and a dependency written in it
 * (`### 1.6 Tests (depends on 1.5)`): taken out of the title, it becomes the first line of the body as a
 * `Depends on:` label at the heading's line, so it is read, resolved and reported as one. A "(depends on
 * ...)" naming no section number stays in the title, with a warning.
 */
function headingParts(raw: string, line: PlanLine, notes: PlanNote[]): ReturnType<typeof cleanTitle> & { depends: PlanLine[] } {
  const m = raw.match(HEADING_DEPENDS)
  if (m && REFS_START.test(m[2].trim())) {
    const cleaned = cleanTitle(`${raw.slice(0, m.index)} ${raw.slice(m.index! + m[0].length)}`)
    return { ...cleaned, depends: [{ n: line.n, text: `Depends on: ${m[2].trim()}` }] }
  }
  if (m && /^depend/i.test(m[1]))
    notes.push({
      severity: "warning",
      line: line.n,
      message: `'${m[0].trim()}' in the heading reads like a dependency but names no section number: it stays in the title`,
      hint: "write '(depends on 1.2)' with section numbers, or a 'Depends on: 1.2' line under the heading",
    })
  return { ...cleanTitle(raw), depends: [] }
}
