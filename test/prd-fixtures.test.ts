// From a real PRD to a graph with real parallelism (issue 34), through the CLI (the compiled binary with
// FLOW_BIN): five PRDs in the shapes people write them (test/fixtures/prds/; one with German headings), each
// through `refine prd`, `plan --offline`, `generate` and `validate`. Every feature heading is a section, no placeholder becomes a
// task, edges stay under twice the tasks, and the critical path is the PRD's own longest chain of
// dependencies plus the acceptance checkpoint.
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { type } from "arktype"
import { GenerateReport, PlanReport, RefineReport, ValidateReport } from "../lib/model/json-shapes"
import { flow, ROOT, tempRepo } from "./helpers"

const prd = (name: string) => readFileSync(join(ROOT, "test", "fixtures", "prds", `${name}.PRD.md`), "utf8")
const strict = <T>(shape: { onDeepUndeclaredKey: (m: "reject") => (data: unknown) => T | type.errors }, data: unknown): T => {
  const out = shape.onDeepUndeclaredKey("reject")(data)
  if (out instanceof type.errors) throw new Error(out.summary)
  return out
}

type Case = {
  name: string
  /** the features of the PRD, read here with a pattern of its own: each must be a section title */
  features: (text: string) => string[]
  /** what refine takes for flow's sections, where the heading has another name */
  took: string[]
  /** the recommended sections the PRD really lacks */
  missing: string[]
  /** the longest chain of dependencies the PRD states, then the checkpoint */
  criticalPath: string[]
  phases: number
}

const all = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].map((m) => m[1])
const under = (text: string, heading: string) => text.slice(text.indexOf(heading), text.indexOf("\n## ", text.indexOf(heading) + 1))

const CASES: Case[] = [
  {
    name: "offline-notes",
    features: (t) => all(t, /^### US-\d+: (.+)$/gm),
    took: [
      "Goals for Requirements",
      "User Stories for Functional Requirements",
      "Technical Design for Technical Constraints",
      "Success Metrics for Success Criteria",
      "Non-Goals for Out of Scope",
    ],
    missing: ["Non-Functional Requirements", "Open Questions"],
    criticalPath: ["write-notes-no", "changes-reach-server", "resolve-conflicting", "checklists-merge-item", "check-success-criteria"],
    phases: 2,
  },
  {
    name: "team-chat",
    features: (t) => [
      ...all(under(t, "## Core Features"), /^### \d+\. (.+)$/gm),
      "Functional Requirements",
      "Performance Requirements",
      "Security Requirements",
    ],
    took: [
      "Project Overview for Overview",
      "The Problem for Problem Statement",
      "Core Features for Requirements",
      "Core Features for Functional Requirements",
      "Performance Requirements for Non-Functional Requirements",
      "Technical Architecture for Technical Constraints",
      "Acceptance Criteria for Success Criteria",
    ],
    missing: ["Out of Scope"],
    criticalPath: ["workspaces-and-members", "channels", "threaded-messages", "search", "check-success-criteria"],
    phases: 3,
  },
  {
    name: "recipe-box",
    features: (t) => all(t, /^\d+\. \*\*(.+?)\.\*\*/gm),
    took: ["User Stories for Requirements", "User Stories for Functional Requirements"],
    missing: ["Overview", "Problem Statement", "Non-Functional Requirements", "Technical Constraints", "Success Criteria", "Out of Scope", "Open Questions"],
    criticalPath: ["save-a-recipe-web-page", "scale-a-recipe", "check-success-criteria"],
    phases: 2,
  },
  {
    name: "library-loans",
    features: (t) => all(t, /^### 3\.\d+\.\d+ REQ-\d+ (.+)$/gm),
    took: [
      "1 Introduction for Overview",
      "1.3 Background for Problem Statement",
      "3 Specific Requirements for Requirements",
      "3 Specific Requirements for Functional Requirements",
      "3.7 Performance Requirements for Non-Functional Requirements",
      "2.2 Design and Implementation Constraints for Technical Constraints",
      "4 Verification for Success Criteria",
      "5 Open Issues for Open Questions",
    ],
    missing: ["Out of Scope"],
    criticalPath: ["register-a-patron", "check-out-an-item", "renew-loan-before-due", "send-due-date-reminders", "check-success-criteria"],
    phases: 9,
  },
  {
    // German headings, numbered requirements under "5 Anforderungen", dependencies as "Abhängig von: 5.1".
    name: "werkstatt-termine",
    features: (t) => [...all(t, /^### 5\.\d+ (.+)$/gm), "Nicht-funktionale Anforderungen"],
    took: [
      "1 Überblick for Overview",
      "2 Problemstellung for Problem Statement",
      "5 Anforderungen for Requirements",
      "6 Nicht-funktionale Anforderungen for Non-Functional Requirements",
      "7 Technische Rahmenbedingungen for Technical Constraints",
      "8 Akzeptanzkriterien for Success Criteria",
      "4 Nicht-Ziele for Out of Scope",
      "9 Offene Fragen for Open Questions",
    ],
    // A plain "Requirements" (Anforderungen) stands for Requirements alone, as in English.
    missing: ["Functional Requirements"],
    criticalPath: ["termin-online-buchen", "werkstattkalender", "reparaturauftrag", "abholung-und-bezahlung", "check-success-criteria"],
    phases: 3,
  },
]

for (const c of CASES) {
  test.concurrent(`PRD '${c.name}': refine prd, plan --offline, generate and validate give every feature a section and the PRD's own critical path`, async () => {
    const text = prd(c.name)
    await using dir = await tempRepo({ "PRD.md": text, "plan.md": "" })

    // refine prd: only what is really missing, and which heading it took for which section.
    const refine = await flow(dir.path, ["refine", "prd", "--json"])
    expect({ code: refine.code, stderr: refine.stderr }).toEqual({ code: 0, stderr: "" })
    const review = strict(RefineReport, JSON.parse(refine.stdout))
    const missing = review.findings.filter((f) => f.rule === "missing-section").map((f) => f.message.match(/'(.+)'/)![1])
    const took = review.sections!.filter((s) => s.heading.replace(/^[\d.]+\s+/, "") !== s.section).map((s) => `${s.heading} for ${s.section}`)
    expect({ missing, took }).toEqual({ missing: c.missing, took: c.took })
    const printed = await flow(dir.path, ["refine", "prd"])
    for (const t of c.took) expect(printed.stdout).toContain(`: took '${t.replace(" for ", "' for ")}\n`)

    // plan --offline: a section per feature, the PRD's words as its title, and no placeholder.
    const plan = await flow(dir.path, ["plan", "--offline", "--json"])
    expect({ code: plan.code, stderr: plan.stderr }).toEqual({ code: 0, stderr: "" })
    const planned = strict(PlanReport, JSON.parse(plan.stdout))
    expect(planned.notes.filter((n) => n.severity === "error")).toEqual([])
    const planText = dir.read("plan.md")
    const sections = all(planText, /^### \d+\.\d+ (.+)$/gm)
    expect(sections).toEqual([...c.features(text), "Check the success criteria (checkpoint)"])
    expect({ phases: planned.phases, sections: planned.sections }).toEqual({ phases: c.phases, sections: sections.length })
    expect(planText).not.toMatch(/in PRD\.md \(none are listed yet\)|then run 'flow plan --force' again/)

    // generate: one task per section, no note, edges under twice the tasks, the PRD's critical path.
    const generate = await flow(dir.path, ["generate", "--json"])
    expect({ code: generate.code, stderr: generate.stderr }).toEqual({ code: 0, stderr: "" })
    const generated = strict(GenerateReport, JSON.parse(generate.stdout))
    const p = generated.parallelism!
    expect({ tasks: generated.tasks, notes: generated.notes, path: p.critical_path.tasks }).toEqual({
      tasks: sections.length,
      notes: [],
      path: c.criticalPath,
    })
    expect(p.edges).toBeLessThanOrEqual(2 * p.tasks)
    expect(generated.added.every((id) => id.length <= 24)).toBe(true)

    // validate: valid, with the same report; its text prints it.
    const validate = await flow(dir.path, ["validate", "--json"])
    const checked = strict(ValidateReport, JSON.parse(validate.stdout))
    expect({ code: validate.code, valid: checked.valid, findings: checked.findings, parallelism: checked.parallelism }).toEqual({
      code: 0,
      valid: true,
      findings: [],
      parallelism: p,
    })
    const shown = await flow(dir.path, ["validate"])
    expect(shown.stdout).toContain(`Parallelism:\n  critical path: ${c.criticalPath.length} tasks (`)
    expect(shown.stdout).toContain(`  widest level: ${p.widest_level.tasks.length} tasks can run at once\n`)
    expect(shown.stdout).toContain(`  edges: ${p.edges} for ${p.tasks} tasks (${p.edges_per_task} per task)\n`)
    // No line of flow list runs away: a checkpoint waiting for dozens of tasks names the first few.
    const list = await flow(dir.path, ["list"])
    expect(Math.max(...list.stdout.split("\n").map((l) => l.length))).toBeLessThanOrEqual(240)
  })
}

test.concurrent("the features' files become the tasks' files, and flow show --json has them", async () => {
  await using dir = await tempRepo({ "PRD.md": prd("team-chat"), "plan.md": "" })
  expect((await flow(dir.path, ["plan", "--offline"])).code).toBe(0)
  expect((await flow(dir.path, ["generate"])).code).toBe(0)
  const show = await flow(dir.path, ["show", "file-sharing", "--json"])
  expect(JSON.parse(show.stdout).task.files).toEqual(["server/files/", "web/src/files/Preview.tsx"])
})

test.concurrent("the features' acceptance lists become their tasks' acceptance criteria; the PRD's checklists the checkpoint's", async () => {
  await using dir = await tempRepo({ "PRD.md": prd("offline-notes"), "plan.md": "" })
  expect((await flow(dir.path, ["plan", "--offline"])).code).toBe(0)
  expect((await flow(dir.path, ["generate"])).code).toBe(0)
  const show = async (id: string) => JSON.parse((await flow(dir.path, ["show", id, "--json"])).stdout).task
  expect((await show("resolve-conflicting")).acceptance_criteria).toEqual([
    "When the server has a newer version of a note that was also changed offline, both versions are kept.",
    "The note shows a conflict banner; opening it shows the two versions block by block, side by side.",
    "The person can keep one version, the other, or both (the blocks of both, one after the other).",
    "Until it is resolved, the conflict does not block other changes from syncing.",
    "The merge view is `src/ui/conflict/ConflictView.tsx`.",
  ])
  const checkpoint = await show("check-success-criteria")
  expect({ checkpoint: checkpoint.checkpoint, criteria: checkpoint.acceptance_criteria.length }).toEqual({ checkpoint: true, criteria: 4 })
})
