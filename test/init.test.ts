// `flow init` in existing folders (every file already there stays byte-identical) and `flow create`'s git
// repository: a first commit that `flow run` works from at once, or the exact commands when git is missing.
import { expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { flow, git, snapshot, tasksYaml, tempRepo } from "./helpers"

/** A temp folder outside any repository, removed when disposed. */
function tempFolder() {
  const path = realpathSync(mkdtempSync(join(tmpdir(), "flow-init-")))
  return { path, [Symbol.asyncDispose]: async () => rmSync(path, { recursive: true, force: true }) }
}

const NEXT = "Next: describe the product in PRD.md ('flow refine prd' reviews it); then 'flow plan' and 'flow generate'.\n"

test.concurrent("init in a repository with files adds only what is missing and leaves every existing file byte-identical", async () => {
  await using dir = await tempRepo({ "PRD.md": "# mine\r\nno trailing newline", "src/main.c": "int main(){}\n", ".gitignore": "build/\n" })
  writeFileSync(join(dir.path, "blob.bin"), new Uint8Array([0, 255, 13, 10, 128]))
  mkdirSync(join(dir.path, "GUIDELINES.md"))
  symlinkSync("missing-target", join(dir.path, "flow.yaml"))
  const before = snapshot(dir.path)
  const statusBefore = await git(dir.path, ["status", "--porcelain"])
  expect(await flow(dir.path, ["init"])).toEqual({
    code: 0,
    stderr: "",
    stdout:
      `Added plan.md to ${realpathSync(dir.path)}\nKept the existing PRD.md, GUIDELINES.md and flow.yaml as they were\n` +
      `To commit them: git add plan.md && git commit -m 'Start a flow project'\n${NEXT}`,
  })
  const after = snapshot(dir.path)
  expect(Object.fromEntries(Object.entries(after).filter(([k]) => k in before))).toEqual(before)
  expect(Object.keys(after).filter((k) => !(k in before))).toEqual(["plan.md"])
  // Nothing was staged or committed: only the new file shows as untracked.
  expect(await git(dir.path, ["status", "--porcelain"])).toBe(`${statusBefore}?? plan.md\n`)
  expect((await git(dir.path, ["rev-list", "--count", "HEAD"])).trim()).toBe("1")
})

test.concurrent("init adds all four files to a folder with none, and a second init changes nothing", async () => {
  await using dir = await tempRepo({ "notes.txt": "keep\n" })
  const root = realpathSync(dir.path)
  expect(await flow(dir.path, ["init"])).toEqual({
    code: 0,
    stderr: "",
    stdout:
      `Added PRD.md, plan.md, GUIDELINES.md and flow.yaml to ${root}\n` +
      `To commit them: git add PRD.md plan.md GUIDELINES.md flow.yaml && git commit -m 'Start a flow project'\n${NEXT}`,
  })
  expect(dir.read("PRD.md").split("\n")[0]).toBe(`# ${root.split("/").at(-1)}: Product Requirements`)
  const once = snapshot(dir.path)
  expect(await flow(dir.path, ["init"])).toEqual({ code: 0, stderr: "", stdout: `Nothing to add: ${root} already has every project file\n${NEXT}` })
  expect(snapshot(dir.path)).toEqual(once)
  // The commented flow.yaml is a valid, empty configuration: a run asks for agents rather than failing on it.
  dir.write("tasks.yaml", tasksYaml([{ id: "one", title: "One", status: "todo", instructions: "x" }]))
  const r = await flow(dir.path, ["run", "--headless"])
  expect({ code: r.code, stderr: r.stderr.split("\n")[0] }).toEqual({
    code: 2,
    stderr: "error: no agents: flow.yaml lists none and no --agents/--cli was given",
  })
})

test.concurrent("init outside a repository says how to make one; init of a missing folder or a file fails and writes nothing", async () => {
  await using dir = tempFolder()
  writeFileSync(join(dir.path, "a-file"), "x")
  expect(await flow(dir.path, ["init", "."])).toEqual({
    code: 0,
    stderr: "",
    stdout:
      `Added PRD.md, plan.md, GUIDELINES.md and flow.yaml to ${dir.path}\n` +
      `${dir.path} is not in a git repository, which 'flow run' needs; to make it one: git init -b main && git add -A && git commit -m 'Start'\n${NEXT}`,
  })
  const before = snapshot(dir.path)
  // A folder named on the command line that is not there is a bad value, as for -C and repo: exit 2 (docs/CLI.md).
  const hint = "hint: create it first, or run 'flow create <name>' to make a new project folder\n"
  for (const [target, error] of [
    ["nowhere", `the folder nowhere (${join(dir.path, "nowhere")}) does not exist`],
    ["a-file", `a-file (${join(dir.path, "a-file")}) is not a folder`],
    [join(dir.path, "gone"), `the folder ${join(dir.path, "gone")} does not exist`],
  ]) {
    expect(await flow(dir.path, ["init", target])).toEqual({ code: 2, stdout: "", stderr: `error: ${error}\n${hint}` })
  }
  expect(await flow(dir.path, ["init", "a", "b"])).toEqual({ code: 2, stdout: "", stderr: "error: unexpected argument 'b'\nhint: usage: flow init [<dir>]\n" })
  expect(snapshot(dir.path)).toEqual(before)
})

test.concurrent("create outside a repository makes a git repository with one clean commit, and flow run works there at once", async () => {
  await using dir = tempFolder()
  expect(await flow(dir.path, ["create", "shop"])).toEqual({
    code: 0,
    stderr: "",
    stdout: `Created shop/ with PRD.md, plan.md, GUIDELINES.md and flow.yaml
It is a git repository on 'main' with these files as its first commit: 'flow run' works there
Next: describe the product in shop/PRD.md ('flow refine prd' reviews it); then 'flow plan' writes
plan.md from it and 'flow generate' turns the plan into tasks.yaml.
`,
  })
  const shop = join(dir.path, "shop")
  expect({
    branch: (await git(shop, ["branch", "--show-current"])).trim(),
    commits: (await git(shop, ["log", "--format=%s"])).trim(),
    files: (await git(shop, ["ls-files"])).trim().split("\n"),
    status: await git(shop, ["status", "--porcelain"]),
  }).toEqual({
    branch: "main",
    commits: "Start shop: PRD.md, plan.md, GUIDELINES.md and flow.yaml from 'flow create'",
    files: ["GUIDELINES.md", "PRD.md", "flow.yaml", "plan.md"],
    status: "",
  })
  writeFileSync(join(shop, "tasks.yaml"), tasksYaml([{ id: "hello", title: "Hello", status: "todo", instructions: "```sh\necho hi > hello.txt\n```" }]))
  const run = await flow(shop, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" })
  expect((await git(shop, ["show", "main:hello.txt"])).trim()).toBe("hi")
})

test.concurrent("create without git on the PATH makes the files and prints the exact commands to run", async () => {
  await using dir = tempFolder()
  const empty = join(dir.path, "empty-bin")
  mkdirSync(empty)
  expect(await flow(dir.path, ["create", "shop"], { env: { PATH: empty } })).toEqual({
    code: 0,
    stderr: "",
    stdout: `Created shop/ with PRD.md, plan.md, GUIDELINES.md and flow.yaml
git was not found on the PATH: 'flow run' needs a repository, so install git, then run:
  cd shop && git init -b main && git add -A && git commit -m 'Start shop'
Next: describe the product in shop/PRD.md ('flow refine prd' reviews it); then 'flow plan' writes
plan.md from it and 'flow generate' turns the plan into tasks.yaml.
`,
  })
  expect(readdirSync(join(dir.path, "shop")).sort()).toEqual(["GUIDELINES.md", "PRD.md", "flow.yaml", "plan.md"])
})

test.concurrent("create . is refused with a pointer to flow init", async () => {
  await using dir = tempFolder()
  expect(await flow(dir.path, ["create", "."])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: '.' is the working folder, which flow create does not fill\nhint: run 'flow init' to add the project files to an existing folder\n",
  })
  expect(readdirSync(dir.path)).toEqual([])
})
