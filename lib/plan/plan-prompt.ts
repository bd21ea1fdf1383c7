// The prompts flow gives an agent CLI to write or refine a plan: the files to read and the exact plan
// shape `flow generate` reads (SPEC section 1), so what the agent writes turns into tasks without edits.
import { readdirSync, statSync } from "node:fs"
import { join, sep } from "node:path"

/** Paths of the files under `dir/sub` (designs/, research/) and its sub-folders, relative to it and sorted; none when it is missing. */
export function filesUnder(dir: string, sub: string): string[] {
  let entries: string[]
  try {
    entries = readdirSync(join(dir, sub), { recursive: true, encoding: "utf8" })
  } catch {
    return []
  }
  // Hidden files and folders (.DS_Store, .git) are no design or research.
  const visible = entries.filter((path) => !path.split(sep).some((part) => part.startsWith(".")))
  return visible
    .filter((path) => statSync(join(dir, sub, path), { throwIfNoEntry: false })?.isFile())
    .map((path) => path.split(sep).join("/"))
    .sort()
}

/** A prompt names at most this many files of a folder: past that, the agent lists the folder itself. */
const MAX_LISTED = 50

export type PlanInputs = { guidelines: boolean; designs: string[]; research: string[] }

export const PLAN_SHAPE = `# Implementation Plan

## Phase 1: <phase title>

### 1.1 <section title>
Depends on: none
Files: <the files and folders it touches, separated by commas>
- <work item: what to build, naming the file or component it touches>
- <work item>

Acceptance:
- <a check that proves the section is done>

### 1.2 <section title>
Depends on: 1.1
Files: <files>
- <work item>

## Phase 2: <phase title>
...`

const RULES = `Rules of the shape (flow generate turns each ### section into one task):
- Give every section a 'Depends on: <n>.<m>, ...' line naming only the sections whose work it really
  needs ('Depends on: none' when it needs none). Agents work on sections in parallel, each in its own
  worktree, as soon as what a section depends on is done: every dependency that is not needed makes the
  whole run slower. Phases group the work; they order it only for a section without a 'Depends on' line,
  which waits for the whole previous phase (its checkpoint, the one section it ends in, or all of its sections).
- Give every section a 'Files:' line naming the files and folders it will touch. Sections that may run at
  the same time and touch the same files are likely to conflict when their work is merged: flow's merge
  queue and 'flow refine plan' use these lines to see it coming, so make such sections depend on one
  another or split the files between them.
- Put ' (checkpoint)' after the title of a section where a person must review the work before it goes on;
  it waits for the sections before it and holds back the later sections of its phase.
- Work that builds on itself in one session may be split into '#### Step <k>: <text>' headings inside a
  section; independent parts that may run in parallel into '#### <n>.<m>.<k> <title>' subtask headings.
- Every work item names the files or components it touches; every requirement of PRD.md is covered by a
  section; the success criteria of PRD.md appear as 'Acceptance:' items.
- Keep text outside sections to the title line: anything else is not carried into the tasks.`

/** The prompt that asks an agent to write plan.md from the PRD. */
export function planPrompt(inputs: PlanInputs): string {
  return `Write the implementation plan of the project in this folder into the file plan.md (replace its content).

Read PRD.md, the product requirements${inputs.guidelines ? ", and GUIDELINES.md, how agents work in this project" : ""}.${listing(inputs)}
Do not start the implementation: write plan.md and nothing else.

The plan must have exactly this shape:

${PLAN_SHAPE}

${RULES}
`
}

/** The prompt that starts an agent's interactive session on PRD.md or plan.md. */
export function refinePrompt(file: "PRD.md" | "plan.md", inputs: PlanInputs): string {
  const what =
    file === "PRD.md"
      ? "the product requirements document PRD.md. Recommended sections: Overview, Problem Statement, Requirements (Functional and Non-Functional, each item specific, measurable and independent), Technical Constraints, Success Criteria (a checklist), Out of Scope (with reasons), Open Questions."
      : `the implementation plan plan.md, written from PRD.md. Its shape:\n\n${PLAN_SHAPE}\n\n${RULES}`
  return `Help me improve ${what}
${listing(inputs)}
Read it, then ask me clarifying questions one at a time about what is vague, missing or contradictory, and
suggest concrete improvements. Edit ${file} only after I agree to a change.
`
}

function listing({ designs, research }: PlanInputs): string {
  const parts: string[] = []
  if (designs.length > 0) parts.push(`Design files in designs/: ${capped(designs)}.`)
  if (research.length > 0) parts.push(`Research notes in research/: ${capped(research)}.`)
  return parts.length > 0 ? `\n${parts.join("\n")} Read the ones that matter.` : ""
}

function capped(files: readonly string[]): string {
  if (files.length <= MAX_LISTED) return files.join(", ")
  return `${files.slice(0, MAX_LISTED).join(", ")} and ${files.length - MAX_LISTED} more`
}
