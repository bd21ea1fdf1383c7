// `flow refine`: the offline review printed without a terminal (text and --json, compared whole), and the
// interactive review driven in a real terminal under tmux (send-keys, capture-pane): accept, edit, skip,
// cancel, and the hand-over to an agent CLI's interactive session.
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { type } from "arktype"
import { RefineReport } from "../lib/model/json-shapes"
import { flow, ROOT, tempRepo } from "./helpers"
import { terminal } from "./terminal"

/** The select of a finding, drawn: it reads keys now (keys sent earlier may reach the line mode). */
const FINDING = "◆  This finding:"

const fixture = (name: string) => readFileSync(join(ROOT, "test", "fixtures", "refine", name), "utf8")
const StrictReport = RefineReport.onDeepUndeclaredKey("reject")

/** fixtures/refine/PRD.md with every change its review suggests applied. */
const APPLIED_PRD = () =>
  fixture("PRD.md")
    .replace("credit notes\n", "credit notes (target: <number and unit>)\n")
    .replace("exports are fast\n", "exports are fast (target: <number and unit>)\n")
    .replace("- finance signs", "- [ ] finance signs")
    .replace("use?\n", "use?\n  - Answer: <who decides, by when>\n")
    .concat("\n## Problem Statement\n<!-- The problem users have today, with evidence; not the solution. -->\n")
    .concat("\n## Technical Constraints\n<!-- Must use, cannot use, integration points. -->\n")
    .concat("\n## Out of Scope\n<!-- What this work will not do, each with the reason. -->\n")

test.concurrent("without a terminal the PRD review is printed with its suggested changes, exit 0, nothing written", async () => {
  await using dir = await tempRepo({ "PRD.md": fixture("PRD.md") })
  const r = await flow(dir.path, ["refine", "prd"])
  expect(r).toEqual({
    code: 0,
    stderr: "",
    stdout: `PRD.md: 7 findings

PRD.md:10: the requirement 'FR-2: the export includes credit notes' has no measurable number
  fix: add a target with a number (a time, a size, a count, a rate) that a test can check
  - 2. FR-2: the export includes credit notes
  + 2. FR-2: the export includes credit notes (target: <number and unit>)

PRD.md:13: the requirement 'NFR-1: exports are fast' has no measurable number
  fix: add a target with a number (a time, a size, a count, a rate) that a test can check
  - - NFR-1: exports are fast
  + - NFR-1: exports are fast (target: <number and unit>)

PRD.md:17: the success criterion 'finance signs off on a sample export' is not a checklist item
  fix: write it as '- [ ] ...' so a reviewer can tick it
  - - finance signs off on a sample export
  + - [ ] finance signs off on a sample export

PRD.md:20: the open question 'Which currency do credit notes use?' has no answer
  fix: answer it (or name who decides, and by when) under the question
  +   - Answer: <who decides, by when>

PRD.md: the recommended section 'Problem Statement' is missing
  fix: add '## Problem Statement'
  + 
  + ## Problem Statement
  + <!-- The problem users have today, with evidence; not the solution. -->

PRD.md: the recommended section 'Technical Constraints' is missing
  fix: add '## Technical Constraints'
  + 
  + ## Technical Constraints
  + <!-- Must use, cannot use, integration points. -->

PRD.md: the recommended section 'Out of Scope' is missing
  fix: add '## Out of Scope'
  + 
  + ## Out of Scope
  + <!-- What this work will not do, each with the reason. -->

Run 'flow refine prd' in a terminal to accept, edit or skip each finding.
`,
  })
  expect(dir.read("PRD.md")).toBe(fixture("PRD.md"))
})

test.concurrent("by default the plan is reviewed once it is not empty; --json gives the RefineReport shape", async () => {
  await using dir = await tempRepo({ "PRD.md": fixture("PRD.md"), "plan.md": fixture("plan.md"), "flow.yaml": "agents:\n  - name: helper\n    cli: claude\n" })
  const r = await flow(dir.path, ["refine", "--json"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const report = JSON.parse(r.stdout)
  if (StrictReport(report) instanceof type.errors) throw new Error(String(StrictReport(report)))
  expect(report).toEqual({
    file: dir.file("plan.md"),
    findings: [
      {
        rule: "item-without-file",
        line: 7,
        message: "the work item 'Handle credit notes' in 1.1 CSV writer names no file or component",
        suggestion: "name the file or component it touches, so the agent knows where to work",
        change: null,
      },
      {
        rule: "section-without-items",
        line: 12,
        message: "section 1.2 Download button has no work items",
        suggestion: "list the work as bullets, each naming the files or components it touches",
        change: null,
      },
      {
        rule: "plan-shape",
        line: 17,
        message: "section 2.1 refers to '1.3', which is no section number or task id",
        suggestion: "did you mean '1.1'?",
        change: null,
      },
    ],
  })
  const text = await flow(dir.path, ["refine"])
  expect(text.stdout).toStartWith("plan.md: 3 findings\n")
  expect(text.stdout).toEndWith("Run 'flow refine plan' in a terminal to accept, edit or skip each finding, then talk it over with helper (claude).\n")
  dir.write("plan.md", "\n")
  expect((await flow(dir.path, ["refine"])).stdout).toStartWith("PRD.md: 7 findings\n")
})

test.concurrent("usage: refine prd|plan only; a missing file is an error", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n" })
  expect(await flow(dir.path, ["refine", "tasks"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: refine what? 'tasks' is neither prd nor plan\nhint: usage: flow refine [prd|plan] [--apply] [--agent <name>] [--no-agent] [--json]\n",
  })
  expect(await flow(dir.path, ["refine", "plan"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: plan.md does not exist\nhint: run 'flow plan' to write it from PRD.md\n",
  })
})

test.concurrent("in a terminal: accept, edit and skip findings; the changes are written with a backup, then the agent takes over", async () => {
  const agent = `agents:\n  - name: helper\n    cli: command\n    command: ["sh", "-c", "printf 'agent session: %s\\\\n' \\"$(printf '%s' \\"$1\\" | head -n 1)\\"", "sh", "{prompt}"]\n`
  await using dir = await tempRepo({ "PRD.md": fixture("PRD.md"), "flow.yaml": agent })
  using t = await terminal(dir.path, ["refine", "prd"])
  await t.waitForPrompt("1/7 PRD.md:10: the requirement 'FR-2: the export includes credit notes' has no measurable number", FINDING)
  t.keys("Enter") // accept
  await t.waitForPrompt("2/7 PRD.md:13", FINDING)
  t.keys("Down", "Enter") // edit: the field starts with the requirement as it is, without its list mark
  await t.waitForPrompt("The requirement, with a number:", "NFR-1: exports are fast")
  // Cleared and typed again with a list mark: the line keeps one mark, not "- - NFR-1".
  t.keys("C-u")
  t.type("- NFR-1: p95 export time under 2 s")
  t.keys("Enter")
  await t.waitForPrompt("3/7 PRD.md:17", FINDING)
  t.keys("Down", "Enter") // edit: appended to the criterion's current text
  await t.waitForPrompt("The criterion, as a checkable statement:", "finance signs off on a sample export")
  t.type(" within a week")
  t.keys("Enter")
  await t.waitForPrompt("4/7 PRD.md:20", FINDING)
  t.keys("Down", "Enter") // edit the answer
  await t.waitFor("Answer to 'Which currency do credit notes use?':")
  t.type("EUR, decided by finance")
  t.keys("Enter")
  await t.waitForPrompt("5/7 PRD.md: the recommended section 'Problem Statement' is missing", FINDING)
  t.keys("Enter") // accept
  for (const n of [6, 7]) {
    await t.waitForPrompt(`${n}/7 PRD.md:`, FINDING)
    t.keys("Down", "Down", "Enter")
  }
  const screen = await t.waitFor("EXIT=")
  expect(screen).toContain("Wrote PRD.md: 5 changes; the previous version is in PRD.md.bak")
  expect(screen).toContain("Handing the terminal to helper (command); leave its session to come back")
  expect(screen).toContain("agent session: Help me improve the product requirements document PRD.md. Recommended sections:")
  expect(screen).toContain("EXIT=0")
  expect(dir.read("PRD.md.bak")).toBe(fixture("PRD.md"))
  expect(dir.read("PRD.md")).toBe(`# Export: Product Requirements

## Overview
Finance exports invoices every month.

## Requirements

### Functional Requirements
1. FR-1: a user can export a month of invoices as CSV within 2 s
2. FR-2: the export includes credit notes (target: <number and unit>)

### Non-Functional Requirements
- NFR-1: p95 export time under 2 s

## Success Criteria
- [ ] all FR items pass their acceptance tests
- [ ] finance signs off on a sample export within a week

## Open Questions
- Which currency do credit notes use?
  - Answer: EUR, decided by finance
- Do we keep exports?
  - Answer: 30 days, decided by finance

## Problem Statement
<!-- The problem users have today, with evidence; not the solution. -->
`)
})

test.concurrent("in a terminal: the plan review adds work items to an empty section; Esc stops with nothing written", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": fixture("plan.md") })
  {
    using t = await terminal(dir.path, ["refine", "--no-agent"])
    await t.waitForPrompt("1/3 plan.md:7: the work item 'Handle credit notes' in 1.1 CSV writer names no file or component", FINDING)
    t.keys("Enter") // edit is the first choice: there is no automatic fix
    await t.waitFor("Which file or component does it touch?")
    t.type("src/export/credit-notes.ts")
    t.keys("Enter")
    await t.waitForPrompt("2/3 plan.md:12", FINDING)
    t.keys("Enter")
    await t.waitFor("The work of 1.2 Download button (one item per line):")
    t.type("src/ui/ExportButton.tsx calls the export endpoint")
    t.keys("Enter")
    await t.waitForPrompt("3/3 plan.md:17", FINDING)
    t.keys("Enter") // skip: the only choice for a shape note
    const screen = await t.waitFor("EXIT=0")
    expect(screen).toContain("No agent to talk it over with (--no-agent)")
  }
  expect(dir.read("plan.md")).toBe(
    fixture("plan.md")
      .replace("- Handle credit notes\n", "- Handle credit notes (`src/export/credit-notes.ts`)\n")
      .replace("### 1.2 Download button\n", "### 1.2 Download button\n- src/ui/ExportButton.tsx calls the export endpoint\n"),
  )
  const edited = dir.read("plan.md")
  using t = await terminal(dir.path, ["refine", "plan"])
  await t.waitForPrompt("plan.md", FINDING)
  t.keys("Escape")
  const screen = await t.waitFor("EXIT=")
  expect(screen).toContain("error: refine cancelled: plan.md was left as it was")
  expect(screen).toContain("EXIT=130")
  expect(dir.read("plan.md")).toBe(edited)
})

test.concurrent("--apply applies every suggested change without a terminal, keeps a backup, and says what needs a person", async () => {
  await using dir = await tempRepo({ "PRD.md": fixture("PRD.md") })
  const r = await flow(dir.path, ["refine", "prd", "--apply"])
  expect(r).toEqual({
    code: 0,
    stderr: "",
    stdout: `applied: PRD.md:10: add a target with a number (a time, a size, a count, a rate) that a test can check
applied: PRD.md:13: add a target with a number (a time, a size, a count, a rate) that a test can check
applied: PRD.md:17: write it as '- [ ] ...' so a reviewer can tick it
applied: PRD.md:20: answer it (or name who decides, and by when) under the question
applied: PRD.md: add '## Problem Statement'
applied: PRD.md: add '## Technical Constraints'
applied: PRD.md: add '## Out of Scope'
Wrote PRD.md: 7 changes; the previous version is in PRD.md.bak
`,
  })
  expect(dir.read("PRD.md.bak")).toBe(fixture("PRD.md"))
  expect(dir.read("PRD.md")).toBe(APPLIED_PRD())
  // Now only findings a person must write are left: applying again changes nothing, and the review says what.
  expect((await flow(dir.path, ["refine", "prd", "--apply"])).stdout).toBe("PRD.md is unchanged: no finding has a suggested change\n")
  expect((await flow(dir.path, ["refine", "prd"])).stdout).toBe(`PRD.md: 6 findings

PRD.md:10: the requirement 'FR-2: the export includes credit notes (target: <number a...' has no measurable number
  fix: replace '(target: <number and unit>)' with the number

PRD.md:13: the requirement 'NFR-1: exports are fast (target: <number and unit>)' has no measurable number
  fix: replace '(target: <number and unit>)' with the number

PRD.md:21: the open question 'Which currency do credit notes use?' has no answer yet
  fix: replace '<who decides, by when>' with the answer

PRD.md:25: 'Problem Statement' is empty
  fix: write it: The problem users have today, with evidence; not the solution.

PRD.md:28: 'Technical Constraints' is empty
  fix: write it: Must use, cannot use, integration points.

PRD.md:31: 'Out of Scope' is empty
  fix: write it: What this work will not do, each with the reason.

Run 'flow refine prd' in a terminal to accept, edit or skip each finding.
`)
  await using plan = await tempRepo({ "PRD.md": "# x\n", "plan.md": fixture("plan.md") })
  expect((await flow(plan.path, ["refine", "--apply"])).stdout).toBe("plan.md is unchanged: no finding has a suggested change\n")
})

test.concurrent("--apply keeps a CRLF PRD.md's line endings and its byte order mark", async () => {
  const crlf = (text: string) => `\uFEFF${text.replace(/\n/g, "\r\n")}`
  const original = crlf(fixture("PRD.md"))
  await using dir = await tempRepo({ "PRD.md": original })
  const r = await flow(dir.path, ["refine", "prd", "--apply"])
  expect({ code: r.code, stderr: r.stderr, last: r.stdout.split("\n").at(-2) }).toEqual({
    code: 0,
    stderr: "",
    last: "Wrote PRD.md: 7 changes; the previous version is in PRD.md.bak",
  })
  expect(dir.read("PRD.md.bak")).toBe(original)
  expect(dir.read("PRD.md")).toBe(crlf(APPLIED_PRD()))
})

test.concurrent("in a terminal, a CLI that takes no first prompt gets the prompt printed to paste", async () => {
  await using dir = await tempRepo({
    "PRD.md": "# x\n",
    "plan.md": "# Implementation Plan\n\n## Phase 1: A\n\n### 1.1 One\n- `a.ts`\n",
    "flow.yaml": "agents:\n  - name: g\n    cli: goose\n",
  })
  using t = await terminal(dir.path, ["refine"])
  const screen = await t.waitFor("EXIT=")
  expect(screen).toContain("The offline review found nothing to change.")
  expect(screen).toContain("goose is not started interactively by flow: start it yourself and paste the prompt below")
  expect(screen).toContain("Help me improve the implementation plan plan.md, written from PRD.md. Its shape:")
  expect(screen).toContain("EXIT=0")
})

test.concurrent("in a terminal, 'Stop here' keeps what was accepted and skips the rest", async () => {
  await using dir = await tempRepo({ "PRD.md": fixture("PRD.md") })
  {
    using t = await terminal(dir.path, ["refine", "prd"])
    await t.waitForPrompt("1/7 PRD.md:10", FINDING)
    t.keys("Enter") // accept
    await t.waitForPrompt("2/7 PRD.md:13", FINDING)
    t.keys("Down", "Down", "Down", "Enter") // stop here
    const screen = await t.waitFor("EXIT=")
    expect(screen).toContain("Wrote PRD.md: 1 change; the previous version is in PRD.md.bak")
    expect(screen).toContain("EXIT=0")
  }
  expect(dir.read("PRD.md")).toBe(fixture("PRD.md").replace("credit notes\n", "credit notes (target: <number and unit>)\n"))
})
