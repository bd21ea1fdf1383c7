// The pure parts of refine and plan, in-process: applying changes, what counts as naming a file, Markdown
// lists, the skeleton's section titles, and the plan review's reading of labels and code blocks.
import { expect, test } from "bun:test"
import { listItems } from "../lib/markdown/markdown-outline"
import { planSkeleton } from "../lib/plan/plan-skeleton"
import { applyChanges, prdSectionMatches, reviewPrd } from "../lib/prd/review"
import { namesAThing, reviewPlan } from "../lib/plan/review-plan"
import type { AgentConfig } from "../lib/config/config"
import { interactiveArgv } from "../lib/plan/planning-agent"
import { planPrompt } from "../lib/plan/plan-prompt"

const lines = (text: string) => text.split("\n").map((t, i) => ({ n: i + 1, text: t }))

test("changes refer to the original lines and keep their order when they land at the same place", () => {
  const text = "a\nb\nc\n"
  expect(
    applyChanges(text, [
      { at: 3, remove: 0, lines: ["x"] },
      { at: 1, remove: 1, lines: ["B", "B2"] },
      { at: 3, remove: 0, lines: ["y"] },
      { at: 0, remove: 0, lines: ["top"] },
    ]),
  ).toBe("top\na\nB\nB2\nc\nx\ny\n")
  expect(applyChanges("no newline", [{ at: 1, remove: 0, lines: ["more"] }])).toBe("no newline\nmore\n")
})

test("a work item names a thing when it has a code span, a path, a file name, a CamelCase name or a call", () => {
  const yes = ["Update `CHANGELOG.md`", "src/export/csv.ts writes rows", "Edit README.md", "Add an ExportButton", "call render()", "the api/v1 routes"]
  const no = ["Handle credit notes", "Write tests, e.g. for errors", "Make it fast. Then ship", "Review the design"]
  expect(yes.filter((t) => !namesAThing(t))).toEqual([])
  expect(no.filter((t) => namesAThing(t))).toEqual([])
})

test("list items: bullets, numbers and checkboxes; wrapped text joined; nested lines and code blocks kept under their item", () => {
  const items = listItems(
    lines("<!-- - not an item -->\n1. first\n   wrapped\n2. [x] second\n   - nested\n\n   ```yaml\n   - code\n   ```\nA paragraph.\n- third"),
  )
  expect(items.map(({ line, text, checkbox, nested, end }) => ({ line, text, checkbox, nested, end }))).toEqual([
    { line: 2, text: "first wrapped", checkbox: undefined, nested: [], end: 3 },
    { line: 4, text: "second", checkbox: "done", nested: ["- nested", "```yaml", "- code", "```"], end: 9 },
    { line: 11, text: "third", checkbox: undefined, nested: [], end: 11 },
  ])
})

test("the skeleton's section titles drop requirement labels and keep the first clause", () => {
  const prd =
    "# P\n\n## Requirements\n- FR-1: a user can log in with e-mail; no passwords stored\n- **NFR-2**: p95 under 300 ms\n- R3: `bin/x` prints the version. It is fast\n"
  expect(
    planSkeleton(prd)
      .text!.split("\n")
      .filter((l) => l.startsWith("### ")),
  ).toEqual([
    "### 1.1 A user can log in with e-mail",
    "### 1.2 P95 under 300 ms",
    "### 1.3 `bin/x` prints the version",
    "### 2.1 Check the success criteria (checkpoint)",
  ])
})

test("the plan review skips acceptance lists, Depends on lines and code blocks when it looks for work items", () => {
  const plan =
    "# Implementation Plan\n\n## Phase 1: A\n\n### 1.1 One\nDepends on: none\n- `a.ts` does it\n```yaml\n- not: work\n```\n\nAcceptance:\n- it works\n"
  expect(reviewPlan(plan)).toEqual([])
})

test("a PRD with every recommended section, numbers, a checklist and answers has no findings", () => {
  const prd = `# X

## Overview
It exports.

## Problem Statement
Finance waits 2 days.

## Requirements

### Functional Requirements
- FR-1: export 10,000 rows in 2 s

### Non-Functional Requirements
- NFR-1: 99.9% of exports succeed

## Technical Constraints
Must use Postgres 16.

## Success Criteria
- [ ] FR-1 passes its test

## Out of Scope
- PDF: nobody asked

## Open Questions
- Which currency?
  - Decided: EUR
- Keep exports? Answer: 30 days
`
  expect(reviewPrd(prd)).toEqual([])
})

test("a PRD with no sections gets every recommended one, the requirement groups inside Requirements", async () => {
  const applied = applyChanges(
    "# X\n",
    reviewPrd("# X\n").flatMap((f) => (f.change ? [f.change] : [])),
  )
  expect(applied.split("\n").filter((l) => l.startsWith("#"))).toEqual([
    "# X",
    "## Overview",
    "## Problem Statement",
    "## Requirements",
    "### Functional Requirements",
    "### Non-Functional Requirements",
    "## Technical Constraints",
    "## Success Criteria",
    "## Out of Scope",
    "## Open Questions",
  ])
})

test("a plan without its title is told so at line 1", () => {
  expect(reviewPlan("## Phase 1: A\n\n### 1.1 One\n- `a.ts`\n")).toEqual([
    { rule: "plan-shape", line: 1, message: "plan.md has no '# Implementation Plan' title", suggestion: "start plan.md with '# Implementation Plan'" },
  ])
})

test("requirements written as headings with prose under them are sections of the skeleton", () => {
  const prd =
    "# P\n\n## Requirements\n\n### Functional Requirements\n\n#### FR-1: Export\nA user exports a month as CSV in 2 s.\n\n#### FR-2: Import\nThe export reads back.\n"
  expect(planSkeleton(prd).text!.split("\n").slice(4, 17)).toEqual([
    "## Phase 1: Functional Requirements",
    "",
    "### 1.1 Export",
    "Depends on: none",
    "FR-1: Export",
    "",
    "A user exports a month as CSV in 2 s.",
    "",
    "### 1.2 Import",
    "Depends on: none",
    "FR-2: Import",
    "",
    "The export reads back.",
  ])
})

test("a byte order mark before the first heading changes nothing for the skeleton and the reviews", () => {
  const prd = "# P\n\n## Requirements\n- FR-1: export in 2 s\n"
  const plan = "# Implementation Plan\n\n## Phase 1: A\n\n### 1.1 One\n- `a.ts` does it\n"
  // JSON drops the findings' edit functions, which differ by identity.
  const seen = (text: string, bom: string) =>
    JSON.stringify({ skeleton: planSkeleton(bom + text).text, prd: reviewPrd(bom + text), plan: reviewPlan(bom + plan) })
  expect(seen(prd, "\uFEFF")).toBe(seen(prd, ""))
  expect(reviewPlan(`\uFEFF${plan}`)).toEqual([])
})

test("headings inside a multi-line HTML comment of the PRD are not requirement groups", () => {
  const prd = "# P\n\n## Requirements\n<!--\n### Example group\n- an example item\n-->\n- FR-1: export in 2 s\n"
  expect(
    planSkeleton(prd)
      .text!.split("\n")
      .filter((l) => l.startsWith("#")),
  ).toEqual([
    "# Implementation Plan",
    "## Phase 1: Requirements",
    "### 1.1 Export in 2 s",
    "## Phase 2: Acceptance",
    "### 2.1 Check the success criteria (checkpoint)",
  ])
})

test("a prompt names at most 50 files of a folder and says how many more there are", () => {
  const designs = Array.from({ length: 53 }, (_, i) => `screens/s${String(i).padStart(2, "0")}.png`)
  const line = planPrompt({ guidelines: false, designs, research: [] })
    .split("\n")
    .find((l) => l.startsWith("Design files"))
  expect(line).toBe(`Design files in designs/: ${designs.slice(0, 50).join(", ")} and 3 more. Read the ones that matter.`)
})

test("the interactive argv of each agent CLI that takes a first prompt; none for the others", () => {
  const argv = (cli: string, extra: Record<string, unknown> = {}) => interactiveArgv({ name: "a", cli, ...extra } as AgentConfig, "Help me", "/p")
  expect({
    claude: argv("claude", { model: "opus", args: ["--verbose"] }),
    codex: argv("codex"),
    gemini: argv("gemini"),
    copilot: argv("copilot", { model: "gpt-5" }),
    command: argv("command", { command: ["my-agent", "--cwd", "{cwd}", "{prompt}"] }),
    goose: argv("goose"),
    opencode: argv("opencode"),
    cursor: argv("cursor"),
  }).toEqual({
    claude: ["claude", "--model", "opus", "--verbose", "--", "Help me"],
    codex: ["codex", "--", "Help me"],
    gemini: ["gemini", "--prompt-interactive", "Help me"],
    copilot: ["copilot", "--model", "gpt-5", "--interactive", "Help me"],
    command: ["my-agent", "--cwd", "/p", "Help me"],
    goose: undefined,
    opencode: ["opencode", "--prompt", "Help me"],
    cursor: undefined,
  })
})

test("an edit starts from the line's text, and a typed list mark, checkbox or 'Answer:' is not doubled", () => {
  const prd =
    "# P\n\n## Requirements\n\n### Functional Requirements\n2. FR-2: fast\n\n## Success Criteria\n  - signs off\n\n## Open Questions\n- Which currency?\n"
  const edits = Object.fromEntries(reviewPrd(prd).flatMap((f) => (f.edit && f.line ? [[f.rule, f.edit]] : [])))
  expect(edits["unmeasurable-requirement"].initial).toBe("FR-2: fast")
  expect(edits["criteria-not-checklist"].initial).toBe("signs off")
  const lines = (rule: string, typed: string) => edits[rule].change(typed).lines
  expect(lines("unmeasurable-requirement", "- FR-3: under 2 s")).toEqual(["2. FR-3: under 2 s"])
  expect(lines("unmeasurable-requirement", "FR-2: under 2 s")).toEqual(["2. FR-2: under 2 s"])
  expect(lines("criteria-not-checklist", "- [ ] signs off in a week")).toEqual(["  - [ ] signs off in a week"])
  expect(lines("unanswered-question", "- Answer: EUR")).toEqual(["  - Answer: EUR"])
})

test("the plan review flags a phase that is all chained, one whose sections all depend on the same several, and sections that may run at once over the same files", () => {
  const plan = `# Implementation Plan

## Phase 1: Base
### 1.1 Schema
Depends on: none
Files: db/schema.sql
- the tables

### 1.2 Seed
Depends on: none
Files: db/seed.sql
- the rows

### 1.3 Fixtures
Depends on: none
Files: db/
- the fixtures

## Phase 2: Chain
### 2.1 Parse
Depends on: 1.1, 1.2, 1.3
Files: \`src/parse.ts\`
- parse

### 2.2 Check
Depends on: 2.1
Files: src/check.ts
- check

### 2.3 Emit
Depends on: 2.2
Files: src/emit.ts
- emit

## Phase 3: Fan
### 3.1 Export
Depends on: 1.1, 1.2, 1.3
Files: src/export/*.ts
- export

### 3.2 Import
Depends on: 1.1, 1.2, 1.3
Files: src/export/csv.ts
- import
`
  expect(reviewPlan(plan).map((f) => ({ rule: f.rule, line: f.line, message: f.message }))).toEqual([
    {
      rule: "files-overlap",
      line: 14,
      message: "'fixtures' and 'schema' may run at the same time and both touch 'db/schema.sql': their merges are likely to conflict",
    },
    {
      rule: "files-overlap",
      line: 14,
      message: "'fixtures' and 'seed' may run at the same time and both touch 'db/seed.sql': their merges are likely to conflict",
    },
    { rule: "chained-phase", line: 19, message: "the 3 sections of phase 2 are all chained: only one of them can run at a time" },
    {
      rule: "all-to-all-phase",
      line: 35,
      message: "each of the 2 sections of phase 3 depends on the same 3 sections (fixtures, schema, seed): 6 edges where one gate would do",
    },
    {
      rule: "files-overlap",
      line: 41,
      message: "'import' and 'export' may run at the same time and both touch 'src/export/*.ts': their merges are likely to conflict",
    },
  ])
})

test("the plan review pairs sections on the same files with no dependency path between them, at any levels of the graph", () => {
  const plan = `# Plan

## Phase 1: Compiler
### 1.1 Lexer
Depends on: none
Files: src/lex.ts
- tokens

### 1.2 Types
Depends on: none
Files: src/ast.ts
- the tree's types

### 1.3 Parser
Depends on: 1.1
Files: src/ast.ts
- the parser

### 1.4 Printer
Depends on: 1.2
Files: src/ast.ts
- the printer
`
  // Parser (level 2) waits for Lexer only: it may run beside Types (level 1). Printer waits for Types.
  expect(
    reviewPlan(plan)
      .filter((f) => f.rule === "files-overlap")
      .map((f) => ({ line: f.line, message: f.message })),
  ).toEqual([
    { line: 14, message: "'parser' and 'types' may run at the same time and both touch 'src/ast.ts': their merges are likely to conflict" },
    { line: 19, message: "'printer' and 'parser' may run at the same time and both touch 'src/ast.ts': their merges are likely to conflict" },
  ])
})

test("the PRD review takes the sections people name otherwise for flow's, and numbered and tagged headings are read as headings", () => {
  const prd = `<context>
# Shop: Product Requirements Document

## 1. Project Overview
A shop.

## 2. Non-Goals
- Marketplaces: one seller only.

## 3. Core Features
### 3.1 Cart
- \`src/cart.ts\`
</context>
<PRD>
## 4. Success Metrics
- [ ] checkout under 2 s

## 5. Open Questions
- Which payment provider? Decided: Stripe.
</PRD>
`
  expect(prdSectionMatches(prd)).toEqual([
    { section: "Overview", heading: "1. Project Overview", line: 4 },
    { section: "Requirements", heading: "3. Core Features", line: 10 },
    { section: "Functional Requirements", heading: "3. Core Features", line: 10 },
    { section: "Success Criteria", heading: "4. Success Metrics", line: 15 },
    { section: "Out of Scope", heading: "2. Non-Goals", line: 7 },
    { section: "Open Questions", heading: "5. Open Questions", line: 18 },
  ])
  // Only what no heading stands for is missing; new sections go in at the chapter level.
  expect(reviewPrd(prd).map((f) => f.suggestion)).toEqual([
    "add '## Problem Statement'",
    "add '## Non-Functional Requirements'",
    "add '## Technical Constraints'",
  ])
})
