// `flow create` through the real CLI: the files it makes and their content, the folder's mode, refusing unsafe
// names and non-empty folders without touching anything, and finding the new project from inside it.
import { expect, test } from "bun:test"
import { mkdirSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { flow, snapshot, tempRepo } from "./helpers"

/** create's output for a project made inside the temp repository `repo` (a project there does not get a repository of its own). */
const created = (name: string, repo: string) => `Created ${name}/ with PRD.md, plan.md, GUIDELINES.md and flow.yaml
It is part of the git repository ${realpathSync(repo)}: commit the files there when you are ready
Next: describe the product in ${name}/PRD.md ('flow refine prd' reviews it); then 'flow plan' writes
plan.md from it and 'flow generate' turns the plan into tasks.yaml.
`

const UNSAFE_HINT = "hint: use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most 100 characters), for example 'billing-export'\n"

test.concurrent("create makes exactly PRD.md, an empty plan.md and GUIDELINES.md, and nothing else", async () => {
  await using dir = await tempRepo({ "README.md": "hi\n" })
  const before = snapshot(dir.path)
  expect(await flow(dir.path, ["create", "billing-export"])).toEqual({ code: 0, stdout: created("billing-export", dir.path), stderr: "" })
  const after = snapshot(dir.path)
  // The folder and its three files are all that is new: no staging folder left behind, no tasks.yaml yet.
  expect(
    Object.keys(after)
      .filter((k) => !(k in before))
      .sort(),
  ).toEqual(["billing-export", "billing-export/GUIDELINES.md", "billing-export/PRD.md", "billing-export/flow.yaml", "billing-export/plan.md"])
  expect(readdirSync(dir.path).sort()).toEqual([".git", "README.md", "billing-export"])
  expect(dir.read("billing-export/plan.md")).toBe("")
})

test.concurrent("PRD.md has the title and every recommended and optional section of the spec, in order", async () => {
  await using dir = await tempRepo()
  expect((await flow(dir.path, ["create", "shop"])).code).toBe(0)
  const prd = dir.read("shop/PRD.md")
  const headings = prd.split("\n").filter((line) => line.startsWith("#"))
  expect(headings).toEqual([
    "# shop: Product Requirements",
    "## Overview",
    "## Problem Statement",
    "## Requirements",
    "### Functional Requirements",
    "### Non-Functional Requirements",
    "## Technical Constraints",
    "## Success Criteria",
    "## Out of Scope",
    "## Open Questions",
    "## User Stories (optional)",
    "## Edge Cases (optional)",
    "## API Contract (optional)",
    "## Integration Notes (optional)",
  ])
  // Each section says what belongs in it.
  const sections = prd.split(/\n(?=#)/).slice(1)
  expect(sections.filter((s) => !s.startsWith("## Requirements\n") && !s.includes("<!--"))).toEqual([])
  expect(prd).not.toContain("{{")
})

test.concurrent("GUIDELINES.md names the project and tells agents every flow command they use", async () => {
  await using dir = await tempRepo()
  expect((await flow(dir.path, ["create", "shop"])).code).toBe(0)
  const guidelines = dir.read("shop/GUIDELINES.md")
  const commands = ["flow step done", "flow done", "flow block", "flow ask", "flow note"]
  expect(commands.filter((c) => !guidelines.includes(`\`${c} `))).toEqual([])
  expect(guidelines.split("\n")[0]).toBe("# Guidelines for agents working on shop")
  expect(guidelines).not.toContain("{{")
})

test.concurrent("the project folder and its files get the ordinary modes of the umask, not a private 0700", async () => {
  await using dir = await tempRepo()
  expect((await flow(dir.path, ["create", "shop"])).code).toBe(0)
  // What a plain mkdir and a plain file write give under the same umask (the subprocess inherits ours).
  mkdirSync(dir.file("plain-dir"))
  writeFileSync(dir.file("plain-file"), "")
  const mode = (p: string) => (statSync(dir.file(p)).mode & 0o7777).toString(8)
  expect({ folder: mode("shop"), prd: mode("shop/PRD.md"), plan: mode("shop/plan.md"), guidelines: mode("shop/GUIDELINES.md") }).toEqual({
    folder: mode("plain-dir"),
    prd: mode("plain-file"),
    plan: mode("plain-file"),
    guidelines: mode("plain-file"),
  })
  if ((process.umask() & 0o077) !== 0o077) expect(mode("shop")).not.toBe("700")
})

test.concurrent("names with letters, digits, '.', '_' and '-' are accepted, up to 100 characters", async () => {
  await using dir = await tempRepo()
  for (const name of ["a", "Billing_Export.v2", "9lives", "x".repeat(100)]) {
    expect(await flow(dir.path, ["create", name])).toEqual({ code: 0, stdout: created(name, dir.path), stderr: "" })
    expect(readdirSync(dir.file(name)).sort()).toEqual(["GUIDELINES.md", "PRD.md", "flow.yaml", "plan.md"])
  }
})

test.concurrent("unsafe names are refused with exit 2 and nothing is created anywhere", async () => {
  await using dir = await tempRepo({ "work/keep.txt": "keep\n" })
  const work = dir.file("work")
  // Run from a subfolder, so a name that escapes upward would still land inside the temp repo and be seen.
  const names = ["../x", "..", ".hidden", "a/b", "/tmp/abs", "", "x".repeat(101), "a..b", "has space", "-rf", "_lead", "tab\tname", "ünïcode"]
  const before = snapshot(dir.path)
  for (const name of names) {
    // "--" so that "-rf" reaches create as a name rather than as flags.
    expect({ name, ...(await flow(work, ["create", "--", name])) }).toEqual({
      name,
      code: 2,
      stdout: "",
      stderr: `error: '${name}' is not a safe folder name\n${UNSAFE_HINT}`,
    })
  }
  expect(snapshot(dir.path)).toEqual(before)
})

test.concurrent("create without a name, or with two, is a usage error that creates nothing", async () => {
  await using dir = await tempRepo()
  const before = snapshot(dir.path)
  expect(await flow(dir.path, ["create"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: missing <project_name>\nhint: usage: flow create <project_name>\n",
  })
  expect(await flow(dir.path, ["create", "one", "two"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unexpected argument 'two'\nhint: usage: flow create <project_name>\n",
  })
  expect(await flow(dir.path, ["create", "--force", "one"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: Unknown option '--force'\nhint: run 'flow create --help' for its usage\n",
  })
  expect(snapshot(dir.path)).toEqual(before)
})

test.concurrent("an existing non-empty folder is refused with exit 1 and left exactly as it was", async () => {
  await using dir = await tempRepo({ "shop/notes.md": "mine\n", "dotted/.keep": "" })
  const before = snapshot(dir.path)
  const root = realpathSync(dir.path)
  const hint = (name: string) => `hint: choose another name, or run 'flow init ${name}' to add the project files to it\n`
  expect(await flow(dir.path, ["create", "shop"])).toEqual({
    code: 1,
    stdout: "",
    stderr: `error: ${join(root, "shop")} already exists and is not empty\n${hint("shop")}`,
  })
  // A folder holding only a hidden file is not empty either.
  expect(await flow(dir.path, ["create", "dotted"])).toEqual({
    code: 1,
    stdout: "",
    stderr: `error: ${join(root, "dotted")} already exists and is not empty\n${hint("dotted")}`,
  })
  expect(snapshot(dir.path)).toEqual(before)
})

test.concurrent("a file in the way is refused with exit 1 and left as it was", async () => {
  await using dir = await tempRepo({ shop: "a file\n" })
  const before = snapshot(dir.path)
  expect(await flow(dir.path, ["create", "shop"])).toEqual({
    code: 1,
    stdout: "",
    stderr: `error: ${join(realpathSync(dir.path), "shop")} exists and is not a readable folder\nhint: choose another name\n`,
  })
  expect(snapshot(dir.path)).toEqual(before)
})

test.concurrent("an existing empty folder is filled", async () => {
  await using dir = await tempRepo()
  mkdirSync(dir.file("shop"))
  expect(await flow(dir.path, ["create", "shop"])).toEqual({ code: 0, stdout: created("shop", dir.path), stderr: "" })
  expect(readdirSync(dir.file("shop")).sort()).toEqual(["GUIDELINES.md", "PRD.md", "flow.yaml", "plan.md"])
  expect(readdirSync(dir.path).sort()).toEqual([".git", "shop"])
})

test.concurrent("-C <dir> creates the project inside <dir>", async () => {
  await using dir = await tempRepo({ "work/.keep": "" })
  expect(await flow(dir.path, ["-C", "work", "create", "shop"])).toEqual({ code: 0, stdout: created("shop", dir.path), stderr: "" })
  expect(readdirSync(dir.file("work/shop")).sort()).toEqual(["GUIDELINES.md", "PRD.md", "flow.yaml", "plan.md"])
  expect(readdirSync(dir.path).sort()).toEqual([".git", "work"])
})

test.concurrent("the new project is found from a subfolder: validate reports its missing tasks.yaml with exit 3", async () => {
  await using dir = await tempRepo()
  expect((await flow(dir.path, ["create", "shop"])).code).toBe(0)
  mkdirSync(dir.file("shop/src/deep"), { recursive: true })
  const tasks = join(realpathSync(dir.path), "shop", "tasks.yaml")
  expect(await flow(dir.file("shop/src/deep"), ["validate"])).toEqual({
    code: 3,
    stdout: "",
    stderr: `error: ${tasks} does not exist\nhint: run 'flow generate' to make it from plan.md\n`,
  })
  // Once tasks.yaml is written, the same command from the same subfolder checks it.
  dir.write("shop/tasks.yaml", "tasks:\n  - {id: first, title: First, status: todo, instructions: x}\n")
  expect(await flow(dir.file("shop/src/deep"), ["validate"])).toEqual({
    code: 0,
    stdout:
      "../../tasks.yaml: 1 task checked\n0 errors, 0 warnings\nParallelism:\n  critical path: 1 task (first)\n  widest level: 1 task can run at once\n  edges: 0 for 1 task (0 per task)\n",
    stderr: "",
  })
})
