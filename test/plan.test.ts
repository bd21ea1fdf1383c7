// `flow plan`: the offline skeleton from PRD.md (the `flow create` template, a grouped PRD, the demo's PRD),
// compared whole; a fake `claude` CLI that writes plan.md; the shape check; --force and plan.md.bak.
import { expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs"
import { dirname, join } from "node:path"
import { type } from "arktype"
import { PlanReport } from "../lib/model/json-shapes"
import { flow, ROOT, tempRepo, type TempDir } from "./helpers"
import { terminal } from "./terminal"

const fixture = (path: string) => readFileSync(join(ROOT, "test", "fixtures", path), "utf8")
const StrictReport = PlanReport.onDeepUndeclaredKey("reject")

/** A project whose flow.yaml names a fake claude on PATH; returns the env and the prompts it received. */
function fakeClaude(dir: TempDir, env: Record<string, string> = {}) {
  const bin = join(dir.path, ".test-bin")
  mkdirSync(bin, { recursive: true })
  symlinkSync(join(ROOT, "test", "fixtures", "fake-agents", "fake-claude.ts"), join(bin, "claude"))
  const record = join(bin, "launches.jsonl")
  dir.write("flow.yaml", "agents:\n  - name: runner\n    cli: script\n  - name: planner\n    cli: claude\n")
  return {
    env: { PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`, FAKE_AGENT_RECORD: record, ...env },
    prompts: (): string[] =>
      readFileSync(record, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).prompt),
  }
}

const writes = (file: string) => ({ FAKE_AGENT_COMMANDS: JSON.stringify([["cp", join(ROOT, "test", "fixtures", file), "plan.md"]]) })

test.concurrent("offline, the PRD template of flow create is refused with what to write: no placeholder becomes a task", async () => {
  const parent = await tempRepo()
  await using _ = parent
  expect((await flow(parent.path, ["create", "shop"])).code).toBe(0)
  const dir = join(parent.path, "shop")
  const r = await flow(dir, ["plan"])
  expect(r).toEqual({
    code: 1,
    stdout: "",
    stderr: `PRD.md:11: warning: PRD.md lists nothing under 'Functional Requirements': it gives no section
  hint: write each requirement as a list item, or each feature as a heading with its work under it
PRD.md:14: warning: PRD.md lists nothing under 'Non-Functional Requirements': it gives no section
  hint: write each requirement as a list item, or each feature as a heading with its work under it
error: PRD.md has no requirement flow can read: no plan was written
hint: write each feature as a heading under '## Requirements' or '## Core Features' with its work as a list under it (or each requirement as an item such as '- FR-1: ...'), then run 'flow plan' again
`,
  })
  expect(readFileSync(join(dir, "plan.md"), "utf8")).toBe("")
})

test.concurrent("offline, a phase per requirement group, a section per labelled requirement, the success criteria as the last checks", async () => {
  await using dir = await tempRepo({ "PRD.md": fixture("skeletons/grouped.PRD.md"), "plan.md": "\n" })
  const r = await flow(dir.path, ["plan", "--offline"])
  expect(r).toEqual({
    code: 0,
    stdout: `Wrote plan.md offline, a skeleton from PRD.md's requirements (--offline): 3 phases, 6 sections
Next: name the files and components of each section ('flow refine plan' helps), then 'flow generate'
`,
    stderr: "",
  })
  expect(dir.read("plan.md")).toBe(fixture("skeletons/grouped.plan.md"))
  expect(existsSync(dir.file("plan.md.bak"))).toBe(false) // a blank plan.md is empty: nothing to keep
  const g = await flow(dir.path, ["generate", "--json"])
  expect(JSON.parse(g.stdout).tasks).toBe(6)
})

test.concurrent("offline, plain bullets right under Requirements are one section, and PRD lines that read like labels cannot become labels", async () => {
  await using dir = await tempRepo({ "PRD.md": fixture("skeletons/loose.PRD.md") })
  const r = await flow(dir.path, ["plan", "--offline"])
  expect({ code: r.code, stderr: r.stderr, first: r.stdout.split("\n")[0] }).toEqual({
    code: 0,
    stderr: `PRD.md:5: warning: 'Requirements' depends on 'the billing provider's webhook API', which names no feature of PRD.md: the plan does not wait for it
  hint: name the feature by its number, label or title ('Depends on: Feature 2', 'Dependencies: REQ-004')
`,
    first: "Wrote plan.md offline, a skeleton from PRD.md's requirements (--offline): 4 phases, 5 sections",
  })
  expect(dir.read("plan.md")).toBe(fixture("skeletons/loose.plan.md"))
  const g = await flow(dir.path, ["generate"])
  expect({ code: g.code, stdout: g.stdout.split("\n")[0], stderr: g.stderr }).toEqual({
    code: 0,
    stdout: "Wrote tasks.yaml: 5 tasks in 4 phases from plan.md",
    stderr: "",
  })
})

test.concurrent("a plan.md that is not empty is replaced only with --force, and kept as plan.md.bak", async () => {
  const old = "# Implementation Plan\n\n## Phase 1: Mine\n\n### 1.1 Hand-written\n- keep me\n"
  await using dir = await tempRepo({ "PRD.md": fixture("../../lib/templates/demo/PRD.md"), "plan.md": old })
  expect(await flow(dir.path, ["plan"])).toEqual({
    code: 1,
    stdout: "",
    stderr:
      "error: plan.md is not empty; it was left as it is\nhint: run 'flow plan --force' to replace it (the old one is kept as plan.md.bak), or 'flow refine plan' to improve it\n",
  })
  expect(dir.read("plan.md")).toBe(old)
  const r = await flow(dir.path, ["plan", "--force"])
  expect({ code: r.code, stdout: r.stdout.split("\n")[1], stderr: r.stderr }).toEqual({ code: 0, stdout: "The previous plan is in plan.md.bak", stderr: "" })
  expect(dir.read("plan.md.bak")).toBe(old)
  expect(dir.read("plan.md")).toBe(fixture("skeletons/demo-prd.plan.md"))
})

test.concurrent("with an agent configured, the agent writes plan.md from a prompt naming PRD.md, GUIDELINES.md, designs/ and research/", async () => {
  await using dir = await tempRepo({
    "PRD.md": "# Shop\n",
    "GUIDELINES.md": "# rules\n",
    "designs/cart.png": "png",
    "designs/checkout.fig": "fig",
    "designs/flows/login.png": "png",
    "designs/.DS_Store": "x",
    "designs/.git/HEAD": "x",
    "research/survey.md": "n=12\n",
  })
  const agent = fakeClaude(dir, writes("plans/basic.md"))
  const r = await flow(dir.path, ["plan"], { env: agent.env })
  expect({ ...r, stderr: r.stderr.replace(/in \d+ s/, "in N s") }).toEqual({
    code: 0,
    stdout: "Wrote plan.md by planner (claude): 2 phases, 4 sections\nNext: review it ('flow refine plan'), then 'flow generate'\n",
    stderr: `planner (claude) is writing plan.md...\n  Bash cp ${join(ROOT, "test/fixtures/plans/basic.md")} plan.md\nplanner wrote plan.md in N s\n`,
  })
  expect(dir.read("plan.md")).toBe(fixture("plans/basic.md"))
  const [prompt] = agent.prompts()
  expect(prompt).toStartWith(
    "Write the implementation plan of the project in this folder into the file plan.md (replace its content).\n\nRead PRD.md, the product requirements, and GUIDELINES.md, how agents work in this project.\nDesign files in designs/: cart.png, checkout.fig, flows/login.png.\nResearch notes in research/: survey.md. Read the ones that matter.\n",
  )
  expect(prompt).toContain("### 1.1 <section title>")
  expect(prompt).toContain("'Depends on: <n>.<m>, ...'")
  // Both lines per section, with why: parallel agents, and conflicts the merge queue can see coming.
  expect(prompt).toContain("Give every section a 'Depends on: <n>.<m>, ...' line naming only the sections whose work it really\n  needs")
  expect(prompt).toContain("Give every section a 'Files:' line naming the files and folders it will touch.")
  expect(prompt).toContain("Files: <the files and folders it touches, separated by commas>")
})

test.concurrent("the agent's plan is checked as generate reads it: what is off is reported with plan.md lines", async () => {
  await using dir = await tempRepo({ "PRD.md": "# Shop\n" })
  const agent = fakeClaude(dir, writes("plans/trailing-text.md"))
  const r = await flow(dir.path, ["plan", "--json"], { env: agent.env })
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const report = JSON.parse(r.stdout)
  if (StrictReport(report) instanceof type.errors) throw new Error(StrictReport(report).toString())
  expect({ ...report, seconds: 0 }).toEqual({
    file: dir.file("plan.md"),
    written_by: "planner",
    reason: "the first agent in flow.yaml",
    phases: 1,
    sections: 2,
    backup: null,
    seconds: 0,
    notes: [3, 8, 18, 22].map((line) => expect.objectContaining({ file: "plan.md", severity: "warning", line })),
  })
})

test.concurrent("an unusable agent plan exits 1 with its errors; a failing agent leaves plan.md as it was", async () => {
  await using dir = await tempRepo({ "PRD.md": "# Shop\n" })
  const agent = fakeClaude(dir, writes("plans/unknown-reference.md"))
  const r = await flow(dir.path, ["plan"], { env: agent.env })
  expect(r.code).toBe(1)
  expect(r.stderr).toContain("plan.md:9: error: section 1.2 refers to '1.9', which is no section number or task id\n")
  expect(r.stderr).toEndWith(
    "error: plan.md is not in the shape 'flow generate' reads\nhint: fix it at the lines above (or run 'flow refine plan'), then 'flow generate'\n",
  )
  expect(dir.read("plan.md")).toBe(fixture("plans/unknown-reference.md"))

  const old = "# Implementation Plan\n\n## Phase 1: Old\n\n### 1.1 Old\n- old\n"
  dir.write("plan.md", old)
  const failing = await flow(dir.path, ["plan", "--force", "--agent", "planner"], { env: { ...agent.env, FAKE_AGENT_COMMANDS: "[]", FAKE_AGENT_EXIT: "3" } })
  expect({ code: failing.code, error: failing.stderr.split("\n").find((l) => l.startsWith("error:")) }).toEqual({
    code: 1,
    error: "error: planner (claude) failed with exit 3; its last output:",
  })
  expect(failing.stderr).toEndWith("hint: plan.md is as it was; try again, or run 'flow plan --offline' for a skeleton from PRD.md\n")
  expect(dir.read("plan.md")).toBe(old)
  // An agent that empties plan.md and fails: the previous plan is put back.
  const emptied = await flow(dir.path, ["plan", "--force"], {
    env: { ...agent.env, FAKE_AGENT_COMMANDS: JSON.stringify([["sh", "-c", ": > plan.md"]]), FAKE_AGENT_EXIT: "1" },
  })
  expect({ code: emptied.code, hint: emptied.stderr.split("\n").find((l) => l.startsWith("hint:")) }).toEqual({
    code: 1,
    hint: "hint: plan.md is as it was; try again, or run 'flow plan --offline' for a skeleton from PRD.md",
  })
  expect(dir.read("plan.md")).toBe(old)
  const idle = await flow(dir.path, ["plan", "--force"], { env: { ...agent.env, FAKE_AGENT_COMMANDS: "[]" } })
  expect({ code: idle.code, error: idle.stderr.split("\n").find((l) => l.startsWith("error:")) }).toEqual({
    code: 1,
    error: "error: planner (claude) finished without writing plan.md; its last output:",
  })
  expect(dir.read("plan.md")).toBe(old)
})

test.concurrent("plan --force with an agent that writes plan.md again with the same text is a success", async () => {
  await using dir = await tempRepo({ "PRD.md": "# Shop\n", "plan.md": fixture("plans/basic.md") })
  const agent = fakeClaude(dir, writes("plans/basic.md"))
  const r = await flow(dir.path, ["plan", "--force"], { env: agent.env })
  expect({ code: r.code, stdout: r.stdout }).toEqual({
    code: 0,
    stdout:
      "Wrote plan.md by planner (claude): 2 phases, 4 sections\nThe previous plan is in plan.md.bak\nNext: review it ('flow refine plan'), then 'flow generate'\n",
  })
  expect(dir.read("plan.md")).toBe(fixture("plans/basic.md"))
})

test.concurrent("usage errors: an unknown agent, a script agent, --agent with --offline, an agent not installed, a missing PRD.md", async () => {
  await using dir = await tempRepo({ "PRD.md": "# Shop\n", "flow.yaml": "agents:\n  - name: runner\n    cli: script\n  - name: planner\n    cli: claude\n" })
  expect(await flow(dir.path, ["plan", "--agent", "planer"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: flow.yaml has no agent named 'planer'\nhint: did you mean 'planner'?\n",
  })
  expect((await flow(dir.path, ["plan", "--agent", "runner"])).stderr).toStartWith("error: the agent 'runner' is a 'script' agent")
  expect((await flow(dir.path, ["plan", "extra"])).code).toBe(2)
  expect(await flow(dir.path, ["plan", "--agent", "planner", "--offline"])).toEqual({
    code: 2,
    stdout: "",
    stderr:
      "error: --agent and --offline exclude each other\nhint: --agent <name> writes the plan with that agent; --offline writes the skeleton without one\n",
  })
  expect(await flow(dir.path, ["plan"], { env: { PATH: "/nonexistent" } })).toEqual({
    code: 1,
    stdout: "",
    stderr:
      "error: agent planner needs 'claude', which is not on PATH\nhint: install Claude Code: npm install -g @anthropic-ai/claude-code; or run 'flow plan --offline' for a skeleton from PRD.md\n",
  })
  await using bare = await tempRepo({ "tasks.yaml": "tasks: []\n" })
  expect(await flow(bare.path, ["plan"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: PRD.md does not exist: there is nothing to plan from\nhint: write the requirements in PRD.md first ('flow create' makes a template)\n",
  })
})

test.concurrent("on a terminal a spinner shows the elapsed time and what the agent does", async () => {
  await using dir = await tempRepo({ "PRD.md": "# Shop\n", ".test-bin/basic.md": fixture("plans/basic.md") })
  // A relative path: the line shown whole must not depend on where the checkout lives.
  const cp = JSON.stringify([["cp", ".test-bin/basic.md", "plan.md"]])
  const agent = fakeClaude(dir, { FAKE_AGENT_COMMANDS: cp, FAKE_AGENT_DELAY_MS: "1500" })
  using t = await terminal(dir.path, ["plan"], agent.env)
  const running = await t.waitFor("planner (claude) is writing plan.md: Bash cp ")
  expect(running).toMatch(/is writing plan\.md: Bash cp \.test-bin\/basic\.md plan\.md \[\d+s\]/)
  const done = await t.waitFor("EXIT=")
  expect(done).toMatch(
    /planner wrote plan\.md \[\d+s\]\nWrote plan\.md by planner \(claude\): 2 phases, 4 sections\nNext: review it \('flow refine plan'\), then 'flow generate'\nEXIT=0\n/,
  )
  expect(dir.read("plan.md")).toBe(fixture("plans/basic.md"))
})

test.concurrent("on a narrow terminal the spinner line is cut to the width with '…', never wrapped", async () => {
  await using dir = await tempRepo({ "PRD.md": "# Shop\n" })
  // The tool call names the fixture by its absolute path: wider than 70 columns wherever the checkout lives.
  const agent = fakeClaude(dir, { ...writes("plans/basic.md"), FAKE_AGENT_DELAY_MS: "1500" })
  using t = await terminal(dir.path, ["plan"], agent.env, { columns: 70, rows: 30 })
  const running = await t.waitFor("planner (claude) is writing plan.md: Bash cp ")
  const line = running.split("\n").find((l) => l.includes("is writing plan.md: Bash cp "))!
  expect(line).toMatch(/^\S {2}planner \(claude\) is writing plan\.md: Bash cp \S*… \[\d+s\]$/)
  expect(Bun.stringWidth(line)).toBeLessThanOrEqual(70)
  expect(await t.waitFor("EXIT=")).toContain("EXIT=0\n")
})

test.concurrent("Ctrl-C on a terminal stops the agent: exit 130, what it wrote is kept and the previous plan is in plan.md.bak", async () => {
  const old = "# Implementation Plan\n\n## Phase 1: Old\n\n### 1.1 Old\n- `old.ts`\n"
  await using dir = await tempRepo({ "PRD.md": "# Shop\n", "plan.md": old })
  const agent = fakeClaude(dir, { FAKE_AGENT_COMMANDS: JSON.stringify([["sh", "-c", "echo partial > plan.md"]]), FAKE_AGENT_DELAY_MS: "60000" })
  using t = await terminal(dir.path, ["plan", "--force"], agent.env)
  await t.waitFor("planner (claude) is writing plan.md: Bash sh -c echo partial > plan.md")
  // The fake shows the tool call before it runs it: wait for its write, then interrupt.
  for (const deadline = performance.now() + 20_000; dir.read("plan.md") !== "partial\n"; await Bun.sleep(20)) {
    if (performance.now() > deadline) throw new Error("the fake agent never wrote plan.md")
  }
  t.keys("C-c")
  const screen = await t.waitFor("EXIT=")
  expect(screen).toContain("error: cancelled: planner was stopped\nhint: plan.md holds what the agent wrote so far\nEXIT=130\n")
  expect(dir.read("plan.md")).toBe("partial\n")
  expect(dir.read("plan.md.bak")).toBe(old)
})
