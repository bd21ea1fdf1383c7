// CLI conventions through the real binary: help, version, unknown commands, -C, project discovery and
// FLOW_PROJECT, JSON errors, and colour-free output.
import { expect, test } from "bun:test"
import { mkdirSync, realpathSync } from "node:fs"
import { join, relative } from "node:path"
import { type } from "arktype"
import pkg from "../package.json" with { type: "json" }
import { COMMANDS } from "../flow"
import { ErrorReport } from "../lib/model/json-shapes"
import { flow, flowArgv, tasksYaml, tempRepo } from "./helpers"

const StrictError = ErrorReport.onDeepUndeclaredKey("reject")

/** The parsed JSON error on stderr, checked against its arktype shape. */
function jsonError(stderr: string): ErrorReport {
  const parsed = JSON.parse(stderr)
  const checked = StrictError(parsed)
  if (checked instanceof type.errors) throw new Error(`stderr is not an ErrorReport: ${checked.summary}`)
  return parsed
}

const VALID = "tasks:\n  - {id: first, title: First, status: todo, instructions: x}\n"
/** What validate prints after its summary for VALID: the parallelism of its one task. */
const VALID_REPORT = "Parallelism:\n  critical path: 1 task (first)\n  widest level: 1 task can run at once\n  edges: 0 for 1 task (0 per task)\n"
const INVALID = "tasks:\n  - {id: first, title: First, status: todo, instructions: x, depends_on: [missing-task]}\n"
const NO_PROJECT_HINT = "hint: run 'flow create <name>' to start a project, or pass -C <dir> (or set FLOW_PROJECT) to point at one\n"

test.concurrent("flow --help lists every command of the table under its group, in table order, with its summary", async () => {
  await using dir = await tempRepo()
  const result = await flow(dir.path, ["--help"])
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
  const lines = result.stdout.split("\n")
  expect(lines.slice(0, 3)).toEqual([
    "flow: from a requirements document to merged code, with coding agents working a task graph",
    "",
    "Usage: flow [-C <dir>] <command> [arguments]",
  ])
  // Read the groups back from the text: a "Group:" line, then indented "name  summary" lines.
  const listed: { group: string; name: string; summary: string }[] = []
  let group: string | undefined
  for (const line of lines.slice(3, lines.indexOf("Help topics (flow help <topic>):"))) {
    const header = /^(\S.*):$/.exec(line)
    const row = /^ {2}(\S+) +(\S.*)$/.exec(line)
    if (header) group = header[1]
    else if (row && group) listed.push({ group, name: row[1], summary: row[2] })
    else expect(line).toBe("")
  }
  const expected = Object.entries(COMMANDS).map(([name, e]) => ({ group: e.group, name, summary: e.summary }))
  // Sorted by group in first-appearance order, so every group is one block.
  const groupOrder = [...new Set(expected.map((e) => e.group))]
  expected.sort((a, b) => groupOrder.indexOf(a.group) - groupOrder.indexOf(b.group))
  expect(listed).toEqual(expected)
  expect(result.stdout).toContain("\nHelp topics (flow help <topic>):\n  config  ")
  expect(result.stdout).toContain("Global options:\n  -C <dir>        run as if flow was started in <dir>\n  -h, --help ")
  expect(result.stdout).toContain("-V, --version")
})

test.concurrent("-h, help and --help print the same help", async () => {
  await using dir = await tempRepo()
  const help = await flow(dir.path, ["--help"])
  expect(await flow(dir.path, ["-h"])).toEqual(help)
  expect(await flow(dir.path, ["help"])).toEqual(help)
})

test.concurrent("bare flow is a usage error: exit 2, the help on stderr and nothing on stdout", async () => {
  await using dir = await tempRepo()
  const help = await flow(dir.path, ["--help"])
  expect(await flow(dir.path, [])).toEqual({ code: 2, stdout: "", stderr: help.stdout })
})

for (const [name, entry] of Object.entries(COMMANDS)) {
  test.concurrent(`flow ${name} --help shows its summary, usage, options and the global options, outside any project too`, async () => {
    await using dir = await tempRepo()
    const { meta } = await entry.load()
    const result = await flow(dir.path, [name, "--help"])
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
    expect(result.stdout.startsWith(`${entry.summary}\n\nUsage: ${meta.usage}\n`)).toBe(true)
    expect(result.stdout.endsWith("\nGlobal options: -C <dir> (run in <dir>), -h/--help, -V/--version\n")).toBe(true)
    if (meta.description) expect(result.stdout).toContain(meta.description.trim())
    const missing = Object.entries(meta.options).filter(([opt, o]) => !result.stdout.includes(`--${opt}`) || !result.stdout.includes(o.help))
    expect(missing).toEqual([])
    // The same text from `-h`, from `flow help <name>`, and when other (even bad) arguments come first.
    expect(await flow(dir.path, [name, "-h"])).toEqual(result)
    expect(await flow(dir.path, ["help", name])).toEqual(result)
    expect(await flow(dir.path, [name, "--no-such-flag", "--help"])).toEqual(result)
  })
}

test.concurrent("flow --version, -V and version print the version from package.json, the commit and the build target", async () => {
  await using dir = await tempRepo()
  const first = await flow(dir.path, ["--version"])
  // From source the commit is "source"; a build (scripts/build.ts) compiles in the commit and the target.
  const target = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`
  const commit = process.env.FLOW_BIN ? "[0-9a-f]{12}(-dirty)?|unknown" : "source"
  expect(first.stdout).toMatch(new RegExp(`^flow ${pkg.version.replaceAll(".", "\\.")} \\(commit (${commit}), ${target}\\)\n$`))
  const expected = { code: 0, stdout: first.stdout, stderr: "" }
  expect(first).toEqual(expected)
  expect(await flow(dir.path, ["-V"])).toEqual(expected)
  expect(await flow(dir.path, ["version"])).toEqual(expected)
})

test.concurrent("an unknown command suggests the closest one and exits 2", async () => {
  await using dir = await tempRepo({ "tasks.yaml": VALID })
  expect(await flow(dir.path, ["valdate"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unknown command 'valdate'\nhint: did you mean 'flow validate'? run 'flow --help' for the list of commands\n",
  })
  expect(await flow(dir.path, ["crate", "x"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unknown command 'crate'\nhint: did you mean 'flow create'? run 'flow --help' for the list of commands\n",
  })
  expect(await flow(dir.path, ["xyzzy"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unknown command 'xyzzy'\nhint: run 'flow --help' for the list of commands\n",
  })
  // An unknown global flag is an unknown command, not a crash; "toString" is not a command either.
  expect(await flow(dir.path, ["--verbose"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unknown command '--verbose'\nhint: run 'flow --help' for the list of commands\n",
  })
  expect((await flow(dir.path, ["toString"])).code).toBe(2)
})

test.concurrent("-C <dir> runs the command as if started in <dir>; -C twice goes relative to the first", async () => {
  await using dir = await tempRepo({ "proj/tasks.yaml": VALID, "proj/sub/.keep": "" })
  const ok = { code: 0, stdout: `tasks.yaml: 1 task checked\n0 errors, 0 warnings\n${VALID_REPORT}`, stderr: "" }
  expect(await flow(dir.path, ["-C", "proj", "validate"])).toEqual(ok)
  expect(await flow(dir.path, ["-C", dir.file("proj"), "validate"])).toEqual(ok)
  expect(await flow(dir.path, ["-C", "proj", "-C", "sub", "validate"])).toEqual({
    ...ok,
    stdout: `../tasks.yaml: 1 task checked\n0 errors, 0 warnings\n${VALID_REPORT}`,
  })
})

test.concurrent("-C with a missing folder, a file, or no folder at all is a usage error", async () => {
  await using dir = await tempRepo({ "tasks.yaml": VALID, "afile.txt": "x\n" })
  const real = realpathSync(dir.path)
  expect(await flow(dir.path, ["-C", "missing", "validate"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: the folder missing (${join(real, "missing")}) does not exist\n`,
  })
  expect(await flow(dir.path, ["-C", "afile.txt", "validate"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: afile.txt (${join(real, "afile.txt")}) is not a folder\n`,
  })
  expect(await flow(dir.path, ["-C"])).toEqual({ code: 2, stdout: "", stderr: "error: -C needs a folder\nhint: usage: flow -C <dir> <command> ...\n" })
  const json = await flow(dir.path, ["-C", "missing", "validate", "--json"])
  expect({ code: json.code, stdout: json.stdout, error: jsonError(json.stderr) }).toEqual({
    code: 2,
    stdout: "",
    error: { error: `the folder missing (${join(real, "missing")}) does not exist`, exit: 2 },
  })
})

test.concurrent("the project is the nearest folder above holding tasks.yaml or PRD.md", async () => {
  await using dir = await tempRepo({ "tasks.yaml": INVALID, "inner/PRD.md": "# inner\n", "inner/tasks.yaml": VALID, "inner/a/b/.keep": "" })
  expect(await flow(dir.file("inner/a/b"), ["validate"])).toEqual({
    code: 0,
    stdout: `../../tasks.yaml: 1 task checked\n0 errors, 0 warnings\n${VALID_REPORT}`,
    stderr: "",
  })
  // A folder with only PRD.md is a project too: the search stops there instead of going on to the outer tasks.yaml.
  await using outer = await tempRepo({ "tasks.yaml": VALID, "inner/PRD.md": "# inner\n" })
  expect(await flow(outer.file("inner"), ["validate"])).toEqual({
    code: 3,
    stdout: "",
    stderr: `error: ${join(realpathSync(outer.path), "inner", "tasks.yaml")} does not exist\nhint: run 'flow generate' to make it from plan.md\n`,
  })
})

test.concurrent("FLOW_PROJECT overrides discovery, relative to the working directory", async () => {
  await using here = await tempRepo({ "tasks.yaml": INVALID })
  await using there = await tempRepo({ "tasks.yaml": VALID })
  const shown = relative(realpathSync(here.path), join(realpathSync(there.path), "tasks.yaml"))
  const ok = { code: 0, stdout: `${shown}: 1 task checked\n0 errors, 0 warnings\n${VALID_REPORT}`, stderr: "" }
  expect(await flow(here.path, ["validate"], { env: { FLOW_PROJECT: there.path } })).toEqual(ok)
  expect(await flow(here.path, ["validate"], { env: { FLOW_PROJECT: relative(here.path, there.path) } })).toEqual(ok)
  // An empty FLOW_PROJECT is the same as none.
  expect((await flow(here.path, ["validate"], { env: { FLOW_PROJECT: "" } })).code).toBe(1)
})

test.concurrent("FLOW_PROJECT naming no folder is an error with exit 3", async () => {
  await using dir = await tempRepo({ "tasks.yaml": VALID, "afile.txt": "x\n" })
  const root = realpathSync(dir.path)
  const hint = "hint: unset FLOW_PROJECT or point it at a project folder\n"
  expect(await flow(dir.path, ["validate"], { env: { FLOW_PROJECT: "nowhere" } })).toEqual({
    code: 3,
    stdout: "",
    stderr: `error: FLOW_PROJECT names ${join(root, "nowhere")}, which is not a folder\n${hint}`,
  })
  expect(await flow(dir.path, ["validate"], { env: { FLOW_PROJECT: "afile.txt" } })).toEqual({
    code: 3,
    stdout: "",
    stderr: `error: FLOW_PROJECT names ${join(root, "afile.txt")}, which is not a folder\n${hint}`,
  })
})

test.concurrent("outside any project, commands that need one say what they looked for and exit 3", async () => {
  await using dir = await tempRepo({ "src/.keep": "" })
  const where = realpathSync(dir.file("src"))
  const expected = {
    code: 3,
    stdout: "",
    stderr: `error: no flow project here: looked for tasks.yaml or PRD.md in ${where} and every folder above it\n${NO_PROJECT_HINT}`,
  }
  expect(await flow(dir.file("src"), ["validate"])).toEqual(expected)
  expect(await flow(dir.file("src"), ["note", "a", "some text"])).toEqual(expected)
  // -C names the folder the search starts from.
  expect(await flow(dir.path, ["-C", "src", "validate"])).toEqual(expected)
})

test.concurrent("with --json, errors go to stderr as one JSON object {error, hint, exit} and stdout stays empty", async () => {
  await using dir = await tempRepo({ "src/.keep": "" })
  const where = realpathSync(dir.file("src"))
  const outside = await flow(dir.file("src"), ["validate", "--json"])
  expect({ code: outside.code, stdout: outside.stdout, error: jsonError(outside.stderr) }).toEqual({
    code: 3,
    stdout: "",
    error: {
      error: `no flow project here: looked for tasks.yaml or PRD.md in ${where} and every folder above it`,
      hint: NO_PROJECT_HINT.slice("hint: ".length, -1),
      exit: 3,
    },
  })
  const unknown = await flow(dir.path, ["valdate", "--json"])
  expect({ code: unknown.code, stdout: unknown.stdout, error: jsonError(unknown.stderr) }).toEqual({
    code: 2,
    stdout: "",
    error: { error: "unknown command 'valdate'", hint: "did you mean 'flow validate'? run 'flow --help' for the list of commands", exit: 2 },
  })
  // stderr is exactly one line of JSON.
  expect(unknown.stderr.endsWith("}\n") && unknown.stderr.indexOf("\n") === unknown.stderr.length - 1).toBe(true)
})

test.concurrent("with NO_COLOR set, no output carries an escape code, even when colour is forced", async () => {
  await using dir = await tempRepo({ "tasks.yaml": INVALID.replace("tasks:\n", "extra: 1\ntasks:\n") })
  const runs = [["validate"], ["validate", "--json"], ["--help"], ["validate", "--help"], [], ["valdate"], ["-C", "missing", "validate"]]
  for (const env of [{ NO_COLOR: "1" }, { NO_COLOR: "1", FORCE_COLOR: "1", TERM: "xterm-256color" }]) {
    for (const args of runs) {
      const { stdout, stderr } = await flow(dir.path, args, { env })
      expect({ args, env, escapes: `${stdout}${stderr}`.includes("\x1b") }).toEqual({ args, env, escapes: false })
    }
  }
})

test.concurrent("schema prints the JSON Schema of tasks.yaml and takes no arguments", async () => {
  await using dir = await tempRepo()
  const result = await flow(dir.path, ["schema"])
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
  const schema = JSON.parse(result.stdout)
  const root = schema.$ref ? schema.$defs[schema.$ref.replace("#/$defs/", "")] : schema
  expect({ $schema: schema.$schema, type: root.type, required: root.required }).toEqual({
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    required: ["tasks"],
  })
  expect(await flow(dir.path, ["schema", "extra"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unexpected argument 'extra'\nhint: usage: flow schema\n",
  })
})

test.concurrent("a usage error is reported before the project is looked for", async () => {
  await using dir = await tempRepo()
  mkdirSync(dir.file("empty"))
  expect(await flow(dir.file("empty"), ["validate", "--bogus"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: Unknown option '--bogus'\nhint: run 'flow validate --help' for its usage\n",
  })
})

test.concurrent("FORCE_COLOR colours validate's labels and error lines; without it a pipe gets plain text", async () => {
  await using dir = await tempRepo({ "tasks.yaml": INVALID })
  const forced = await flow(dir.path, ["validate"], { env: { NO_COLOR: undefined, FORCE_COLOR: "1" } })
  expect(forced.stdout).toContain("\x1b[31m\x1b[1mERROR\x1b[22m\x1b[39m: ")
  const missing = await flow(dir.path, ["show-me"], { env: { NO_COLOR: undefined, FORCE_COLOR: "1" } })
  expect(missing.stderr.startsWith("\x1b[31m\x1b[1merror:")).toBe(true)
  const piped = await flow(dir.path, ["validate"], { env: { NO_COLOR: undefined, FORCE_COLOR: undefined } })
  expect(piped.stdout.includes("\x1b")).toBe(false)
  expect(piped.stdout.replace(/\x1b\[\d+m/g, "")).toBe(forced.stdout.replace(/\x1b\[\d+m/g, ""))
})

test.concurrent("output into a pipe whose reader has gone ends quietly with exit 0 (flow list | head)", async () => {
  const tasks = Array.from({ length: 3000 }, (_, i) => ({ id: `t-${i}`, title: `Task number ${i} with a longer title`, status: "todo", instructions: "x" }))
  await using dir = await tempRepo({ "tasks.yaml": tasksYaml(tasks) })
  const proc = Bun.spawn(["sh", "-c", `"$@" list | head -n 1`, "sh", ...flowArgv()], {
    cwd: dir.path,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, NO_COLOR: "1" },
  })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  expect({ out, err }).toEqual({ out: "No phase\n", err: "" })
})

test.concurrent("output refused for want of room (> /dev/full) is an error with exit 1; a reader gone, exit 0", async () => {
  const tasks = Array.from({ length: 3000 }, (_, i) => ({ id: `t-${i}`, title: `Task number ${i}`, status: "todo", instructions: "x" }))
  await using dir = await tempRepo({ "tasks.yaml": tasksYaml(tasks) })
  /** What `script` (bash, flow as "$@") wrote on stderr: flow's, then the exit code it echoes. */
  const stderrOf = async (script: string) => {
    const proc = Bun.spawn(["bash", "-c", script, "bash", ...flowArgv()], {
      cwd: dir.path,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, NO_COLOR: "1" },
    })
    const [err] = await Promise.all([new Response(proc.stderr).text(), new Response(proc.stdout).text(), proc.exited])
    return err
  }
  const full = "error: could not write to standard output: ENOSPC: no space left on device, write\nhint: send the output where there is room (a full disk?)\n"
  for (const command of ["--version", "list"])
    expect({ command, err: await stderrOf(`"$@" ${command} > /dev/full; echo "exit $?" >&2`) }).toEqual({ command, err: `${full}exit 1\n` })
  expect(await stderrOf(`"$@" --version | true; echo "exit \${PIPESTATUS[0]}" >&2`)).toBe("exit 0\n")
})
