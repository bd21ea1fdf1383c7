// `flow generate`: plan.md files of many shapes (test/fixtures/plans/<name>.md) turned into tasks.yaml and
// compared whole with <name>.yaml, with the notes compared whole with <name>.notes.txt; the demo's plan gives
// the demo's tasks.yaml; the command writes, re-generates keeping progress, and writes nothing on errors.
import { expect, test } from "bun:test"
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs"
import { dirname, join } from "node:path"
import { type } from "arktype"
import { formatNote } from "../lib/plan/plan-notes"
import { parallelism } from "../lib/graph/parallelism"
import { generateTasks } from "../lib/plan/generate"
import { GenerateReport } from "../lib/model/json-shapes"
import { shellBlocks } from "../lib/agents/script-agent"
import type { Task } from "../lib/model/task-index"
import { flow, ROOT, tempRepo, type Result } from "./helpers"

const PLANS = join(ROOT, "test", "fixtures", "plans")
const read = (name: string) => readFileSync(join(PLANS, name), "utf8")
const StrictReport = GenerateReport.onDeepUndeclaredKey("reject")

// Every generate that writes ends with the graph's parallelism. The tests of other things leave it out; the
// first command test here and test/prd-fixtures.test.ts check it whole.
const REPORT = /Parallelism:\n(?: {2}.*\n)+/
async function generate(dir: string, args: string[], opts?: Parameters<typeof flow>[2]): Promise<Result> {
  const r = await flow(dir, ["generate", ...args], opts)
  return { ...r, stdout: r.stdout.replace(REPORT, ""), stderr: r.stderr.replace(REPORT, "") }
}

const fixtures = readdirSync(PLANS)
  .filter((f) => f.endsWith(".md"))
  .map((f) => f.slice(0, -3))
  .sort()

test("there are at least ten plan fixtures, each with its expected notes", () => {
  expect(fixtures.length).toBeGreaterThanOrEqual(10)
  for (const name of fixtures) expect({ name, notes: existsSync(join(PLANS, `${name}.notes.txt`)) }).toEqual({ name, notes: true })
})

for (const name of fixtures) {
  test(`plan fixture '${name}' gives its expected tasks.yaml and notes`, async () => {
    const g = await generateTasks(read(`${name}.md`))
    const expected = existsSync(join(PLANS, `${name}.yaml`)) ? read(`${name}.yaml`) : undefined
    expect({ text: g.text, notes: g.notes.map((n) => formatNote(n, "plan.md")).join("") }).toEqual({ text: expected, notes: read(`${name}.notes.txt`) })
  })
}

test("the demo's plan.md generates the demo's tasks.yaml byte for byte, with no notes", async () => {
  const g = await generateTasks(readFileSync(join(ROOT, "lib/templates/demo/plan.md"), "utf8"))
  expect({ text: g.text, notes: g.notes }).toEqual({ text: readFileSync(join(ROOT, "lib/templates/demo/tasks.yaml"), "utf8"), notes: [] })
})

test("no instruction of the demo uses command substitution, which Gemini CLI refuses to run even in yolo mode", () => {
  // An agent reading these instructions copies them; `$(`, `<(`, `>(` and backticks are what it refuses.
  const data = Bun.YAML.parse(readFileSync(join(ROOT, "lib/templates/demo/tasks.yaml"), "utf8")) as { tasks: Task[] }
  const texts: { id: string; text: string }[] = []
  const walk = (tasks: Task[]) => {
    for (const t of tasks) {
      texts.push({ id: t.id, text: t.instructions ?? "" })
      for (const step of t.steps ?? []) texts.push({ id: step.id, text: step.instruction })
      walk(t.subtasks ?? [])
    }
  }
  walk(data.tasks)
  expect(texts.filter((t) => shellBlocks(t.text).length > 0).length).toBeGreaterThanOrEqual(10)
  for (const { id, text } of texts) {
    expect({ id, substitution: text.includes("$(") }).toEqual({ id, substitution: false })
    for (const block of shellBlocks(text)) expect({ id, found: block.match(/<\(|>\(|`/)?.[0] ?? null }).toEqual({ id, found: null })
  }
})

test.concurrent("flow generate writes tasks.yaml from plan.md, and it passes flow validate", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": read("basic.md") })
  const r = await flow(dir.path, ["generate"])
  const report = `Parallelism:
  critical path: 2 tasks (project-skeleton → export-as-csv)
  widest level: 2 tasks can run at once
  edges: 4 for 4 tasks (1 per task)
`
  expect(r).toEqual({ code: 0, stdout: `Wrote tasks.yaml: 4 tasks in 2 phases from plan.md\n${report}`, stderr: "" })
  expect(dir.read("tasks.yaml")).toBe(read("basic.yaml"))
  expect(await flow(dir.path, ["validate"])).toEqual({ code: 0, stdout: `tasks.yaml: 4 tasks checked\n0 errors, 0 warnings\n${report}`, stderr: "" })
  expect((await flow(dir.path, ["list"])).stdout).toStartWith("Phase 1: Setup\n")
  // Again, unchanged: nothing to write.
  expect((await generate(dir.path, [])).stdout).toBe(
    "tasks.yaml is up to date: 4 tasks in 2 phases from plan.md\n  kept with their progress: project-skeleton, continuous-integration, export-as-csv, import-from-csv\n",
  )
})

test.concurrent("the demo's plan.md run through flow generate gives the demo's tasks.yaml", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": readFileSync(join(ROOT, "lib/templates/demo/plan.md"), "utf8") })
  const r = await generate(dir.path, [])
  expect(r).toEqual({ code: 0, stdout: "Wrote tasks.yaml: 12 tasks in 3 phases from plan.md\n", stderr: "" })
  expect(dir.read("tasks.yaml")).toBe(readFileSync(join(ROOT, "lib/templates/demo/tasks.yaml"), "utf8"))
})

test.concurrent("warnings go to stderr with plan.md lines; a folder holding only plan.md is a project", async () => {
  await using dir = await tempRepo({ "plan.md": read("trailing-text.md") })
  const r = await generate(dir.path, [])
  expect(r).toEqual({ code: 0, stdout: "Wrote tasks.yaml: 2 tasks in 1 phase from plan.md\n", stderr: read("trailing-text.notes.txt") })
})

test.concurrent("re-generating a CRLF tasks.yaml keeps it CRLF, and an unchanged plan writes nothing", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": read("basic.md"), "tasks.yaml": read("basic.yaml").replaceAll("\n", "\r\n") })
  expect((await generate(dir.path, [])).stdout).toStartWith("tasks.yaml is up to date")
  expect(dir.read("tasks.yaml")).toBe(read("basic.yaml").replaceAll("\n", "\r\n"))
  dir.write("plan.md", `${read("basic.md")}\n### 2.3 Export as JSON\n\n- Write \`src/json.ts\`\n`)
  expect((await generate(dir.path, [])).code).toBe(0)
  const text = dir.read("tasks.yaml")
  expect(text).toContain("export-as-json")
  expect(text.replaceAll("\r\n", "").includes("\n")).toBe(false)
})

test.concurrent("re-generating a tasks.yaml that starts with a byte order mark keeps the mark and the CRLF lines", async () => {
  const original = `\uFEFF${read("basic.yaml").replaceAll("\n", "\r\n")}`
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": read("basic.md"), "tasks.yaml": original })
  expect((await generate(dir.path, [])).stdout).toStartWith("tasks.yaml is up to date")
  expect(dir.read("tasks.yaml")).toBe(original)
  dir.write("plan.md", `${read("basic.md")}\n### 2.3 Export as JSON\n\n- Write \`src/json.ts\`\n`)
  expect((await generate(dir.path, [])).code).toBe(0)
  const text = dir.read("tasks.yaml")
  expect({ bom: text.startsWith("\uFEFF"), json: text.includes("export-as-json"), lf: text.replaceAll("\r\n", "").includes("\n") }).toEqual({
    bom: true,
    json: true,
    lf: false,
  })
})

test.concurrent("--dry-run prints the tasks.yaml and writes nothing", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": read("numbered-lists.md") })
  const r = await generate(dir.path, ["--dry-run"])
  expect(r).toEqual({ code: 0, stdout: read("numbered-lists.yaml"), stderr: "Would write tasks.yaml: 2 tasks in 1 phase from plan.md\n" })
  expect(existsSync(dir.file("tasks.yaml"))).toBe(false)
})

test.concurrent("subtasks nest at any depth: '##### 1.1.1.1' is a subtask of '#### 1.1.1'; a skipped level is a warning with its line", async () => {
  await using dir = await tempRepo({ "plan.md": read("deep-subtasks.md") })
  const r = await generate(dir.path, ["--dry-run"])
  expect(r).toEqual({
    code: 0,
    stdout: read("deep-subtasks.yaml"),
    stderr: `${read("deep-subtasks.notes.txt")}Would write tasks.yaml: 6 tasks in 1 phase from plan.md\n`,
  })
})

test.concurrent("a plan written as lists under phase headings is refused with the heading to write, made from its own line", async () => {
  await using dir = await tempRepo({ "plan.md": read("list-only.md") })
  const r = await generate(dir.path, [])
  expect(r).toEqual({
    code: 1,
    stdout: "",
    stderr: `${read("list-only.notes.txt")}error: plan.md has 1 error: tasks.yaml was not written\nhint: fix the plan at the lines above and run 'flow generate' again\n`,
  })
  expect(existsSync(dir.file("tasks.yaml"))).toBe(false)
})

test.concurrent("--json reports the outcome in the GenerateReport shape", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": read("duplicate-titles.md") })
  const r = await generate(dir.path, ["--json"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const report = JSON.parse(r.stdout)
  const checked = StrictReport(report)
  if (checked instanceof type.errors) throw new Error(checked.summary)
  expect(report).toEqual({
    plan: join(dir.path, "plan.md"),
    file: join(dir.path, "tasks.yaml"),
    written: true,
    dry_run: false,
    tasks: 6,
    phases: 2,
    added: ["phase-1", "tests", "backend-docs", "tests-2", "tests-3", "docs"],
    removed: [],
    kept: [],
    requeued: [],
    joins: ["phase-1"],
    parallelism: {
      tasks: 6,
      edges: 3,
      edges_per_task: 0.5,
      critical_path: { tasks: ["tests", "tests-2"], minutes: null, timed: 0 },
      widest_level: { level: 2, tasks: ["tests-2", "tests-3", "docs"] },
    },
    notes: [
      {
        severity: "warning",
        line: 13,
        message: "section 2.1 has the same id as an earlier section; it is 'tests-2'",
        hint: "give it its own title or an id: {#tests-<something>}",
      },
      {
        severity: "warning",
        line: 16,
        message: "section 2.2 has the same id as an earlier section; it is 'tests-3'",
        hint: "give it its own title or an id: {#tests-<something>}",
      },
    ],
  })
})

test.concurrent("errors in the plan stop the command: exit 1, every error with its line, tasks.yaml untouched", async () => {
  const before = "tasks:\n  - {id: old, title: Old, status: done, instructions: x}\n"
  await using dir = await tempRepo({ "plan.md": read("unknown-reference.md"), "tasks.yaml": before })
  const r = await generate(dir.path, [])
  expect(r).toEqual({
    code: 1,
    stdout: "",
    stderr: `${read("unknown-reference.notes.txt")}error: plan.md has 3 errors: tasks.yaml was not written\nhint: fix the plan at the lines above and run 'flow generate' again\n`,
  })
  expect(dir.read("tasks.yaml")).toBe(before)
  const cycle = await generate(dir.path, ["--json"])
  expect(cycle.code).toBe(1)
  await Bun.write(dir.file("plan.md"), read("cycle.md"))
  const c = await generate(dir.path, [])
  expect({ code: c.code, stderr: c.stderr.split("\n")[0] }).toEqual({
    code: 1,
    stderr: "plan.md:5: error: Circular dependency detected: first → second → first (tasks.yaml would not pass 'flow validate')",
  })
  expect(dir.read("tasks.yaml")).toBe(before)
})

test.concurrent("re-generating keeps status, notes, times, agent and step progress of surviving ids, and lists the changes", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": read("steps-and-subtasks.md") })
  expect((await generate(dir.path, [])).code).toBe(0)
  for (const args of [
    ["step", "start", "search-index.1"],
    ["step", "done", "search-index.1"],
    ["note", "search-index", "tokenizer is fast"],
    ["assign", "search-box", "claude-a"],
    ["done", "empty-state"],
  ]) {
    const r = await flow(dir.path, args)
    expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" })
  }
  // A setting a person put on a task in tasks.yaml is theirs, like its assignment.
  dir.write("tasks.yaml", dir.read("tasks.yaml").replace("  - id: search-index\n", "  - id: search-index\n    task_timeout: 20m\n"))
  const before = Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: Record<string, any>[] }
  // The plan changes: the review section is renamed (a new id), a step and a subtask are added.
  const plan = read("steps-and-subtasks.md")
    .replace("### 1.3 Search review (checkpoint)", "### 1.3 Search acceptance (checkpoint)")
    .replace("#### Step 3\n", "#### Step 3\nWire it in.\n\n#### Step 4\n")
    .replace("#### Subtask: Empty state {#empty-state}", "#### 1.2.4 Pagination\n- src/ui/pages.tsx\n\n#### Subtask: Empty state {#empty-state}")
  await Bun.write(dir.file("plan.md"), plan)
  const r = await generate(dir.path, [])
  expect(r).toEqual({
    code: 0,
    stdout: `Wrote tasks.yaml: 7 tasks in 1 phase from plan.md
  added: pagination, search-acceptance
  removed: search-review (was todo)
  kept with their progress: search-index, search-ui, search-box, results-list, empty-state
`,
    stderr: "",
  })
  const after = Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: Record<string, any>[] }
  const [index, ui] = after.tasks
  expect(index.status).toBe(before.tasks[0].status)
  expect(index.ai_notes).toEqual(["tokenizer is fast"])
  expect(index.started_at).toBe(before.tasks[0].started_at)
  expect(index.task_timeout).toBe("20m")
  expect(index.steps.map((s: Record<string, unknown>) => [s.id, s.status ?? "pending", typeof s.started_at, typeof s.completed_at])).toEqual([
    ["search-index.1", "done", "string", "string"],
    ["search-index.2", "pending", "undefined", "undefined"],
    ["search-index.3", "pending", "undefined", "undefined"],
    ["search-index.4", "pending", "undefined", "undefined"],
  ])
  expect(index.steps[0]).toEqual(before.tasks[0].steps[0])
  expect(ui.subtasks.map((s: Record<string, unknown>) => [s.id, s.status, s.agent_name])).toEqual([
    ["search-box", "todo", "claude-a"],
    ["results-list", "todo", undefined],
    ["pagination", "todo", undefined],
    ["empty-state", "done", undefined],
  ])
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("a missing plan.md and an invalid tasks.yaml are errors that write nothing", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n" })
  expect(await generate(dir.path, [])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: cannot read plan.md: no such file\nhint: write the plan first ('flow plan' drafts it from PRD.md)\n",
  })
  const bad = "tasks:\n  - {id: a, title: A, status: doing, instructions: x}\n"
  dir.write("tasks.yaml", bad)
  dir.write("plan.md", read("basic.md"))
  const r = await generate(dir.path, [])
  expect({ code: r.code, first: r.stderr.split("\n")[0] }).toEqual({ code: 3, first: "error: tasks.yaml is invalid (1 error, 0 warnings); the first:" })
  expect(dir.read("tasks.yaml")).toBe(bad)
  expect((await generate(dir.path, ["a", "b"])).code).toBe(2)
})

test.concurrent("flow generate <plan-file> reads another file", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plans/v2.md": read("crlf.md") })
  const r = await generate(dir.path, ["plans/v2.md"])
  expect(r).toEqual({ code: 0, stdout: "Wrote tasks.yaml: 1 task in 1 phase from plans/v2.md\n", stderr: "" })
  // The header and every note name the file read, not plan.md.
  expect(dir.read("tasks.yaml")).toBe(read("crlf.yaml").replace("from plan.md.", "from v2.md."))
  dir.write("plans/empty.md", "\n")
  dir.write("plans/list.md", "# Implementation Plan\n\n## Phase 1: A\n\n- do a\n")
  expect(await generate(dir.path, ["plans/empty.md"])).toEqual({
    code: 1,
    stdout: "",
    stderr:
      "plans/empty.md: error: plans/empty.md is empty\n  hint: write plans/empty.md as '# Implementation Plan', '## Phase <n>: <title>', '### <n>.<m> <title>' with work items (or run 'flow plan')\n" +
      "error: plans/empty.md has 1 error: tasks.yaml was not written\nhint: fix the plan at the lines above and run 'flow generate' again\n",
  })
  expect((await generate(dir.path, ["plans/list.md"])).stderr).toContain(
    "plans/list.md:5: error: plans/list.md has its work as list items, not as '### <n>.<m> <title>' sections",
  )
})

test.concurrent("flow generate <plan-file> outside any project writes tasks.yaml in the working folder", async () => {
  await using dir = await tempRepo({ "p1.md": read("basic.md") })
  expect(await generate(dir.path, ["p1.md"])).toEqual({ code: 0, stdout: "Wrote tasks.yaml: 4 tasks in 2 phases from p1.md\n", stderr: "" })
  expect(dir.read("tasks.yaml")).toBe(read("basic.yaml").replace("from plan.md.", "from p1.md."))
})

test.concurrent("--enrich: an agent's proposals for instructions and criteria are checked and laid over the generated tasks", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": read("basic.md"), "flow.yaml": "agents:\n  - name: planner\n    cli: claude\n" })
  const bin = join(dir.path, ".test-bin")
  mkdirSync(bin)
  symlinkSync(join(ROOT, "test", "fixtures", "fake-agents", "fake-claude.ts"), join(bin, "claude"))
  const proposals = {
    "project-skeleton": {
      instructions: "- Create `package.json` with `bun test` as its test script\n- Add `src/index.ts` exporting `main()`",
      acceptance_criteria: ["`bun test` passes"],
    },
    "import-from-csv": { acceptance_criteria: ["a file written by export reads back equal"] },
    nope: { instructions: "x" },
  }
  const env = {
    PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`,
    FAKE_AGENT_RECORD: join(bin, "launches.jsonl"),
    FAKE_AGENT_COMMANDS: JSON.stringify([["sh", "-c", `printf '%s' '${JSON.stringify(proposals)}' > .flow/enrich.json`]]),
  }
  const r = await generate(dir.path, ["--enrich"], { env })
  expect({ ...r, stderr: r.stderr.replace(/in \d+ s/, "in N s").replace(/Bash .*\n/, "Bash ...\n") }).toEqual({
    code: 0,
    stdout: "Wrote tasks.yaml: 4 tasks in 2 phases from plan.md\n  enriched by planner: project-skeleton, import-from-csv\n",
    stderr:
      "planner (claude) is reviewing the tasks...\n  Bash ...\nplanner proposed changes in N s\nplan.md: warning: the agent proposed changes for 'nope', which is no task of the plan (ignored)\n",
  })
  const expected = read("basic.yaml")
    .replace(
      "    instructions: |\n      - Create package.json with a test script\n      - Add src/index.ts exporting main()\n",
      '    instructions: |\n      - Create `package.json` with `bun test` as its test script\n      - Add `src/index.ts` exporting `main()`\n    acceptance_criteria:\n      - "`bun test` passes"\n',
    )
    .replace(
      "    instructions: src/import.ts reads what export writes\n",
      "    instructions: src/import.ts reads what export writes\n    acceptance_criteria:\n      - a file written by export reads back equal\n",
    )
  expect(dir.read("tasks.yaml")).toBe(expected)
  expect(existsSync(dir.file(".flow/enrich.json"))).toBe(false)
  const prompt = JSON.parse(readFileSync(join(bin, "launches.jsonl"), "utf8").trim()).prompt as string
  expect(prompt).toContain("Write your proposals as JSON to the file .flow/enrich.json, and change no other file:")
  expect(prompt).toContain(
    '"id": "continuous-integration",\n    "title": "Continuous integration",\n    "instructions": ".github/workflows/ci.yml runs the tests on every push",\n    "acceptance_criteria": []',
  )

  // An agent that fails leaves tasks.yaml as it was.
  const before = dir.read("tasks.yaml")
  const failed = await generate(dir.path, ["--agent", "planner"], { env: { ...env, FAKE_AGENT_COMMANDS: "[]", FAKE_AGENT_EXIT: "2" } })
  expect({ code: failed.code, error: failed.stderr.split("\n").find((l) => l.startsWith("error:")) }).toEqual({
    code: 1,
    error: "error: planner (claude) failed with exit 2; tasks.yaml was not written; its last output:",
  })
  expect(dir.read("tasks.yaml")).toBe(before)
  dir.write("flow.yaml", "agents:\n  - name: runner\n    cli: script\n")
  expect((await generate(dir.path, ["--enrich"])).stderr).toBe(
    "error: --enrich needs an agent CLI: flow.yaml has only script agents\nhint: add an agent (for example 'cli: claude') to flow.yaml, or run 'flow generate' without --enrich\n",
  )
})

test.concurrent("re-generating puts a ready task back to todo when the plan gives it a dependency that is not done, and warns for started and done ones", async () => {
  const v1 =
    "# Implementation Plan\n\n## Phase 1: A\n\n### 1.1 One\n- a.ts\n\n## Phase 2: B\n\n### 2.1 Two\n- b.ts\n\n### 2.2 Three\n- c.ts\n\n### 2.3 Four\n- d.ts\n"
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": v1 })
  expect((await generate(dir.path, [])).code).toBe(0)
  for (const args of [
    ["done", "one"],
    ["start", "three"],
    ["done", "four"],
  ])
    expect((await flow(dir.path, args)).code).toBe(0)
  // Phase 1 still ends in one section, its gate: phase 2 waits for zero now.
  dir.write("plan.md", v1.replace("## Phase 2", "### 1.2 Zero\nDepends on: 1.1\n- z.ts\n\n## Phase 2"))
  expect(await generate(dir.path, [])).toEqual({
    code: 0,
    stdout: `Wrote tasks.yaml: 5 tasks in 2 phases from plan.md
  added: zero
  kept with their progress: one, two, three, four
  back to todo, a new dependency is not done: two
`,
    stderr: `plan.md:17: warning: 'three' is in_progress, but the plan now makes it depend on zero (todo), not done
  hint: it keeps its status; 'flow todo three' makes it wait for them
plan.md:20: warning: 'four' is done, but the plan now makes it depend on zero (todo), not done
  hint: check that its work still holds once they are done
`,
  })
  expect((await flow(dir.path, ["next", "--json"])).stdout).toContain('"id": "zero"')
  expect((await flow(dir.path, ["next", "--json"])).stdout).not.toContain('"id": "two"')
  const tasks = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { id: string; status: string }[] }).tasks
  expect(tasks.map((t) => [t.id, t.status])).toEqual([
    ["one", "done"],
    ["zero", "todo"],
    ["two", "todo"],
    ["three", "in_progress"],
    ["four", "done"],
  ])
})

test.concurrent("step progress follows the step's text when steps are inserted or reordered; a step whose text changed starts again, with a warning", async () => {
  const v1 = "# Implementation Plan\n\n## Phase 1: A\n\n### 1.1 Index\n\n#### Step 1: Tokenizer\n\n#### Step 2: Inverted index\n\n#### Step 3: Ranking\n"
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": v1 })
  expect((await generate(dir.path, [])).code).toBe(0)
  for (const args of [
    ["step", "start", "index.1"],
    ["step", "done", "index.1"],
    ["step", "start", "index.2"],
    ["step", "done", "index.2"],
  ]) {
    expect((await flow(dir.path, args)).code).toBe(0)
  }
  const before = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { steps: Record<string, string>[] }[] }).tasks[0].steps
  dir.write(
    "plan.md",
    v1
      .replace("#### Step 1: Tokenizer", "#### Step 1: Schema\n\n#### Step 2: Tokenizer")
      .replace("Step 2: Inverted index", "Step 3: Inverted index, persisted"),
  )
  const r = await generate(dir.path, [])
  expect(r).toEqual({
    code: 0,
    stdout: "Wrote tasks.yaml: 1 task in 1 phase from plan.md\n  kept with their progress: index\n",
    stderr: `plan.md:5: warning: step index.2 of 'index' was done ("Inverted index"), and no step of the plan has that text now: its progress is dropped
  hint: a step whose text changed is a new, pending step
`,
  })
  const steps = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { steps: Record<string, string>[] }[] }).tasks[0].steps
  expect(steps).toEqual([
    { id: "index.1", instruction: "Schema" },
    { id: "index.2", instruction: "Tokenizer", status: "done", started_at: before[0].started_at, completed_at: before[0].completed_at },
    { id: "index.3", instruction: "Inverted index, persisted" },
    { id: "index.4", instruction: "Ranking" },
  ])
})

test.concurrent("re-generating keeps the keys flow does not know on kept tasks and steps, as flow validate promises", async () => {
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": "# Implementation Plan\n\n## Phase 1: A\n\n### 1.1 One\n- a.ts\n\n#### Step 1: First\n" })
  expect((await generate(dir.path, [])).code).toBe(0)
  dir.write(
    "tasks.yaml",
    dir
      .read("tasks.yaml")
      .replace("    status: todo\n", "    status: todo\n    priority: high\n    labels: {team: core, size: 3}\n    reviewers: [ana, 2]\n")
      .replace("        instruction: First\n", "        instruction: First\n        estimate: 2h\n"),
  )
  dir.write("plan.md", `${dir.read("plan.md")}\n### 1.2 Two\n- b.ts\n`)
  expect((await generate(dir.path, [])).code).toBe(0)
  const [one] = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: Record<string, any>[] }).tasks
  expect({ priority: one.priority, labels: one.labels, reviewers: one.reviewers, estimate: one.steps[0].estimate }).toEqual({
    priority: "high",
    labels: { team: "core", size: 3 },
    reviewers: ["ana", 2],
    estimate: "2h",
  })
  const v = await flow(dir.path, ["validate"])
  // One warning per record, naming its unknown fields.
  expect({ code: v.code, unknown: v.stdout.split("\n").filter((l) => l.includes("unknown")) }).toEqual({
    code: 0,
    unknown: [
      "WARNING: Step 'one.1' of task 'one' has unknown field 'estimate' (kept as is; flow does not use it)",
      "WARNING: Task 'one' has unknown fields 'priority', 'labels' and 'reviewers' (kept as is; flow does not use them)",
    ],
  })
})

test("a checkpoint holds back the later sections of its own phase, and a section that does not wait for it is a warning", async () => {
  const plan = `# Implementation Plan

## Phase 1: Build

### 1.1 Feature
- \`src/feature.ts\`

## Phase 2: Release

### 2.1 Review (checkpoint)
- A person tries the feature

### 2.2 Tag
- \`git tag v1\`

### 2.3 Release notes
Depends on: 1.1
- \`NOTES.md\`
`
  const g = await generateTasks(plan)
  expect(g.tasks.map((t) => [t.id, t.depends_on ?? []])).toEqual([
    ["feature", []],
    ["review", ["feature"]],
    ["tag", ["review"]],
    ["release-notes", ["feature"]],
  ])
  expect(g.notes.map((n) => formatNote(n, "plan.md")).join("")).toBe(
    `plan.md:16: warning: section 2.3 comes after the checkpoint 2.1 in phase 2 but does not wait for it: it can land before the review
  hint: add 2.1 to its 'Depends on' line, or move it before the checkpoint or into another phase
`,
  )
})

/** A plan of `phases` phases of `width` sections each, none with a 'Depends on' line; `checkpoints` ends each phase with one. */
function widePlan(phases: number, width: number, checkpoints: boolean): string {
  const out = ["# Implementation Plan"]
  for (let p = 1; p <= phases; p++) {
    out.push("", `## Phase ${p}: Part ${p}`)
    for (let s = 1; s <= width; s++) out.push("", `### ${p}.${s} Work item ${p} ${s}`, `- \`src/p${p}/s${s}.ts\``)
    if (checkpoints) out.push("", `### ${p}.${width + 1} Review part ${p} (checkpoint)`, "- A person checks the part")
  }
  return `${out.join("\n")}\n`
}

test("a phase boundary is one gate: phases of 18 sections never make every task of a phase depend on every task of the one before", async () => {
  const gated = await generateTasks(widePlan(3, 18, true))
  const p = parallelism(gated.tasks)
  // Each checkpoint waits for its 18 sections; each section of the next phase waits for the checkpoint alone.
  expect({ tasks: p.tasks, edges: p.edges, path: p.critical_path.tasks.length, widest: p.widest_level.tasks.length, notes: gated.notes }).toEqual({
    tasks: 57,
    edges: 3 * 18 + 2 * 18,
    path: 6,
    widest: 18,
    notes: [],
  })
  expect(p.edges).toBeLessThanOrEqual(2 * p.tasks)
  // Without checkpoints each phase that the next waits for is one join: its sections become its subtasks, and
  // each section of the next phase waits for the join alone.
  const joined = await generateTasks(widePlan(3, 18, false))
  const q = parallelism(joined.tasks)
  expect({
    tops: joined.tasks.map((t) => [t.id, t.subtasks?.length ?? 0]),
    edges: q.edges,
    path: q.critical_path.tasks.length,
    widest: q.widest_level.tasks.length,
    notes: joined.notes,
  }).toEqual({
    tops: [["phase-1", 18], ["phase-2", 18], ...Array.from({ length: 18 }, (_, i) => [`work-item-3-${i + 1}`, 0])],
    edges: 2 * 18,
    path: 3,
    widest: 18,
    notes: [],
  })
  expect(q.edges).toBeLessThanOrEqual(2 * q.tasks)
})

test("a phase that ends in one section gates the next, and a checkpoint without 'Depends on' waits for everything open before it", async () => {
  const plan = `# Implementation Plan

## Phase 1: Base

### 1.1 Schema
- \`db/schema.sql\`

### 1.2 Migrations
Depends on: 1.1
- \`db/migrate.ts\`

## Phase 2: Features

### 2.1 Export
- \`src/export.ts\`

### 2.2 Import
- \`src/import.ts\`

### 2.3 Search
Depends on: none
- \`src/search.ts\`

## Phase 3: Release

### 3.1 Sign-off (checkpoint)
- A person signs off
`
  const g = await generateTasks(plan)
  expect(g.tasks.map((t) => [t.id, t.depends_on ?? []])).toEqual([
    ["schema", []],
    ["migrations", ["schema"]],
    ["export", ["migrations"]],
    ["import", ["migrations"]],
    ["search", []],
    ["sign-off", ["export", "import", "search"]],
  ])
  expect(g.notes).toEqual([])
})

test("ids made from headings are at most 24 characters, small words going first; an id of the old 40-character rule in tasks.yaml is kept", async () => {
  const plan = `# Implementation Plan

## Phase 1: A

### 1.1 Sign in with a card number
- \`src/signin.ts\`

### 1.2 Integrate the payment provider and its webhooks
- \`src/pay.ts\`

### 1.3 Integrate the payment provider and its refunds
- \`src/refund.ts\`
`
  const g = await generateTasks(plan)
  expect(g.tasks.map((t) => t.id)).toEqual(["sign-in-with-card-number", "integrate-payment", "integrate-payment-2"])
  expect(g.tasks.every((t) => t.id.length <= 24)).toBe(true)
  // Re-generating a tasks.yaml made before the limit keeps its ids, and the progress they carry.
  const old = {
    tasks: [{ id: "integrate-the-payment-provider-and-its", title: "x", status: "done" as const, instructions: "x" }],
  }
  const again = await generateTasks(plan, old)
  expect(again.tasks.map((t) => [t.id, t.status])).toEqual([
    ["sign-in-with-card-number", "todo"],
    ["integrate-the-payment-provider-and-its", "done"],
    ["integrate-payment", "todo"],
  ])
})

test("a 'Files:' line becomes the task's files, read as generate reads every label", async () => {
  const plan =
    "# Implementation Plan\n\n## Phase 1: A\n\n### 1.1 Store\nFiles: `src/store.ts`, lib/db/ (the pool); docs/STORE.md\n- the store\n\n### 1.2 Docs\n- the store's docs\n\nFiles:\n- `docs/`\n- README.md\n"
  const g = await generateTasks(plan)
  expect(g.tasks.map((t) => [t.id, t.files, t.instructions])).toEqual([
    ["store", ["src/store.ts", "lib/db/", "docs/STORE.md"], "the store"],
    ["docs", ["docs/", "README.md"], "the store's docs"],
  ])
  expect(g.text).toContain("    files: [src/store.ts, lib/db/, docs/STORE.md]\n")
})

test.concurrent("a phase that ends in several sections and has no checkpoint is one join: the next phase waits for it alone, and it is done with its sections", async () => {
  const plan = `# Implementation Plan

## Phase 1: Foundations

### 1.1 Storage
- \`src/store.ts\`

### 1.2 Config
- \`src/config.ts\`

### 1.3 Logging
- \`src/log.ts\`

## Phase 2: Features

### 2.1 Search
- \`src/search.ts\`

### 2.2 Export
- \`src/export.ts\`

### 2.3 Import
Depends on: none
- \`src/import.ts\`

## Phase 3: Release

### 3.1 Review (checkpoint)
- A person tries the features
`
  await using dir = await tempRepo({ "PRD.md": "# x\n", "plan.md": plan })
  const r = await flow(dir.path, ["generate", "--json"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const report = JSON.parse(r.stdout)
  // No warning: phase 2 waits for phase 1 through its join, one edge per section (before, it did not wait at all).
  expect({
    notes: report.notes,
    joins: report.joins,
    tasks: report.tasks,
    edges: report.parallelism.edges,
    path: report.parallelism.critical_path.tasks,
  }).toEqual({
    notes: [],
    joins: ["phase-1"],
    tasks: 8,
    edges: 2 + 3,
    path: ["storage", "search", "review"],
  })
  expect(report.parallelism.edges).toBeLessThanOrEqual(2 * report.tasks)
  const data = Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: Task[] }
  expect(data.tasks.map((t) => [t.id, t.depends_on ?? [], (t.subtasks ?? []).map((s) => [s.id, s.depends_on ?? []])])).toEqual([
    [
      "phase-1",
      [],
      [
        ["storage", []],
        ["config", []],
        ["logging", []],
      ],
    ],
    // Phase 2 is no join: nothing after it waits for it by default (the checkpoint waits for what is open).
    ["search", ["phase-1"], []],
    ["export", ["phase-1"], []],
    ["import", [], []],
    ["review", ["search", "export", "import"], []],
  ])
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
  // The join is nobody's work: only its sections are offered, and the last of them done releases phase 2.
  expect((await flow(dir.path, ["next"])).stdout).toBe("[todo] storage Storage\n[todo] config Config\n[todo] logging Logging\n[todo] import Import\n")
  for (const id of ["storage", "config"]) expect((await flow(dir.path, ["done", id])).code).toBe(0)
  expect((await flow(dir.path, ["done", "logging"])).stdout).toBe(
    "logging: todo → done\nphase-1: todo → done (all subtasks done)\nsearch: todo → ready_for_agent (dependencies done)\nexport: todo → ready_for_agent (dependencies done)\n",
  )
  // A section added to the done phase opens its join again, and what was waiting for it waits again.
  dir.write("plan.md", plan.replace("## Phase 2", "### 1.4 Metrics\n- `src/metrics.ts`\n\n## Phase 2"))
  const again = await generate(dir.path, [])
  expect(again).toEqual({
    code: 0,
    stdout: `Wrote tasks.yaml: 9 tasks in 3 phases from plan.md
  one task for each phase that ends in several sections, which the next phase waits for: phase-1
  added: metrics
  kept with their progress: phase-1, storage, config, logging, search, export, import, review
  back to todo, a new dependency is not done: search, export
`,
    stderr: "",
  })
  expect((await flow(dir.path, ["show", "phase-1", "--json"])).stdout).toContain('"status": "todo"')
})
