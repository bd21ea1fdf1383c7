// flow.yaml: the reference (`flow help config`, the file `flow create` writes, docs/RUN.md's copy) and the
// errors a bad file gets: every problem at its line, in words, an unknown field with the closest known one.
import { expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentConfig, CopyConfig, FlowConfig, loadConfig, PortsConfig, repoEntries, VerifyConfig } from "../lib/config/config"
import { flow, ROOT, tasksYaml, tempRepo } from "./helpers"

const REFERENCE = readFileSync(join(ROOT, "lib/templates/flow.yaml"), "utf8")

/** loadConfig on `text` as a project's flow.yaml: the config, or the error's message and hint. */
function load(text: string) {
  const dir = mkdtempSync(join(tmpdir(), "flow-config-"))
  try {
    writeFileSync(join(dir, "flow.yaml"), text)
    return loadConfig(dir)
  } catch (e) {
    const { message, hint, exit } = e as { message: string; hint?: string; exit?: number }
    return { error: message.replaceAll(dir, "<dir>"), hint, exit }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test.concurrent("flow help config prints the reference, anywhere; flow create writes the same text", async () => {
  await using dir = await tempRepo()
  expect(await flow(dir.path, ["help", "config"])).toEqual({ code: 0, stdout: REFERENCE, stderr: "" })
  expect((await flow(dir.path, ["--help"])).stdout).toContain("Help topics (flow help <topic>):\n  config ")
  expect(await flow(dir.path, ["help", "confg"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: no command or help topic 'confg'\nhint: did you mean 'flow help config'? run 'flow --help' for the list\n",
  })
  expect((await flow(dir.path, ["create", "shop"])).code).toBe(0)
  expect(dir.read("shop/flow.yaml")).toBe(REFERENCE)
})

test("docs/RUN.md holds the reference word for word", () => {
  expect(readFileSync(join(ROOT, "docs/RUN.md"), "utf8")).toContain(`\n\`\`\`yaml\n${REFERENCE}\`\`\`\n`)
})

test("the reference names every field of the schema, loads as an empty configuration, and each example is valid", () => {
  const fields = [FlowConfig, AgentConfig, VerifyConfig, CopyConfig, PortsConfig].flatMap((t) => t.props.map((p) => String(p.key))).concat(["base", "draft"])
  expect(fields.filter((f) => !new RegExp(`^#.*\\b${f}:`, "m").test(REFERENCE))).toEqual([])
  expect(load(REFERENCE)).toEqual({})
  // Each commented setting, uncommented on its own (a `# key:` line and the indented lines under it).
  const lines = REFERENCE.split("\n")
  const examples = lines.flatMap((line, i) => {
    if (!/^# [a-z_]+:/.test(line)) return []
    const block = [line]
    for (let j = i + 1; j < lines.length && /^# {2}/.test(lines[j]); j++) block.push(lines[j])
    return [block.map((l) => l.slice(2)).join("\n")]
  })
  expect(examples.length).toBe(31)
  for (const example of examples) expect({ example, loaded: "error" in load(example) }).toEqual({ example, loaded: false })
})

test("every problem is reported in file order at its line, in words; an unknown field, at any depth, gets the closest known one", () => {
  const text = `paralelism: 2
verify: { command: "npm test", timeout: forever }
agents:
  - name: a
    cli: claude
    modle: x
pull_request: { bsae: main }
`
  expect(load(text)).toEqual({
    error: `flow.yaml is invalid:
ERROR: unknown field 'paralelism'
  at <dir>/flow.yaml:1:1
  1 | paralelism: 2
    | ^
  hint: did you mean 'parallelism'?
ERROR: verify.timeout must be a duration such as 90s, 20m, 1h or 1h30m (was "forever")
  at <dir>/flow.yaml:2:41
  2 | verify: { command: "npm test", timeout: forever }
    |                                         ^
ERROR: unknown field 'agents[0].modle'
  at <dir>/flow.yaml:6:5
  6 |     modle: x
    |     ^
  hint: did you mean 'model'?
ERROR: unknown field 'pull_request.bsae'
  at <dir>/flow.yaml:7:17
  7 | pull_request: { bsae: main }
    |                 ^
  hint: did you mean 'base'?`,
    hint: "'flow help config' prints every field of flow.yaml with its default",
    exit: 3,
  })
})

test("a list of verify entries has each entry checked; a field of two shapes says what it takes; a list is no flow.yaml", () => {
  const list = load("verify:\n  - { command: make, timeout: 0m }\n  - { repo: x, comand: y }\nremote: -x\n") as { error: string }
  expect(list.error.split("\n").filter((l) => l.startsWith("ERROR"))).toEqual([
    `ERROR: verify[0].timeout must be a duration such as 90s, 20m, 1h or 1h30m (was "0m")`,
    "ERROR: verify[1].command must be a string or an array (was missing)",
    "ERROR: unknown field 'verify[1].comand'",
    `ERROR: remote must be a git remote's name (letters, digits, '.', '_', '-') (was "-x")`,
  ])
  expect((load("verify: 3\n") as { error: string }).error).toContain("ERROR: verify must be an object or an array (was 3)\n")
  expect((load("zzz: 1\n") as { error: string }).error).toContain(
    "  hint: the fields here: agents, budget, copy, empty_done, fix_attempts, lease, limit_backoff, merge_target, notify, parallelism, ports, prices, project, pull_request, push, queue, queue_depth, remote, repo, retries, review, sandbox, setup, state, task_timeout, teardown, verify",
  )
  expect(load("- a\n")).toEqual({
    error: "flow.yaml must be a mapping of settings (field: value), not a list",
    hint: "'flow help config' prints every field of flow.yaml with its default",
    exit: 3,
  })
})

test.concurrent("flow run stops at a bad flow.yaml with exit 3 and the reference's command as the hint", async () => {
  await using dir = await tempRepo({ "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: "x" }]), "flow.yaml": "paralelism: 2\n" })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect(r.code).toBe(3)
  expect(r.stderr).toEndWith("  hint: did you mean 'parallelism'?\nhint: 'flow help config' prints every field of flow.yaml with its default\n")
})

test("a fallback names another agent of flow.yaml, on another CLI", () => {
  const agents = "agents:\n  - { name: claude-1, cli: claude, fallback: [codex-1] }\n  - { name: claude-2, cli: claude }\n  - { name: codex-1, cli: codex }\n"
  expect(load(agents)).toMatchObject({ agents: [{ name: "claude-1", fallback: ["codex-1"] }, { name: "claude-2" }, { name: "codex-1" }] })
  expect(load(agents.replace("[codex-1]", "codex-2"))).toEqual({
    error: "flow.yaml: agent 'claude-1' falls back to 'codex-2', which is not an agent of flow.yaml",
    hint: "did you mean 'codex-1'?",
    exit: 3,
  })
  expect(load(agents.replace("[codex-1]", "claude-2"))).toEqual({
    error: "flow.yaml: agent 'claude-1' falls back to 'claude-2', which uses the same cli (claude): its usage limit is likely the same",
    hint: "fallback: names other agents of flow.yaml, each on a different cli (docs/BUDGETS.md)",
    exit: 3,
  })
  expect(
    (load("budget:\n  task: { usd: 0, dollars: 5 }\n  ceiling: 0.5\n") as { error: string }).error.split("\n").filter((l) => l.startsWith("ERROR")),
  ).toEqual([
    "ERROR: budget.task.usd must be positive (was 0)",
    "ERROR: unknown field 'budget.task.dollars'",
    "ERROR: budget.ceiling must be at least 1 (was 0.5)",
  ])
})

test("setup, teardown, copy and ports take one entry for every repository or a list with repo; a path out of the repository is refused at its line", () => {
  const one = load(
    `setup: { command: "npm ci --prefer-offline", timeout: 10m }\nteardown: { command: [make, clean] }\ncopy: [".env", "config/*.local.json"]\nports: 2\n`,
  )
  expect(one).toEqual({
    setup: { command: "npm ci --prefer-offline", timeout: "10m" },
    teardown: { command: ["make", "clean"] },
    copy: [".env", "config/*.local.json"],
    ports: 2,
  })
  const config = one as Parameters<typeof repoEntries>[0]
  expect([repoEntries(config, "setup"), repoEntries(config, "copy"), repoEntries(config, "ports"), repoEntries(config, "verify")]).toEqual([
    [{ command: "npm ci --prefer-offline", timeout: "10m" }],
    [{ files: [".env", "config/*.local.json"] }],
    [{ count: 2 }],
    [],
  ])
  const lists = load("copy:\n  - { repo: api, files: [.env] }\nports:\n  - { repo: web, count: 3 }\n  - { count: 1 }\n") as Parameters<typeof repoEntries>[0]
  expect([repoEntries(lists, "copy"), repoEntries(lists, "ports")]).toEqual([[{ repo: "api", files: [".env"] }], [{ repo: "web", count: 3 }, { count: 1 }]])

  const bad = load(`copy: ["../secrets", /etc/passwd, .git/config, a/../../b, ok/*.json]\nports: 65\nsetup: { comand: x }\n`) as { error: string }
  expect(bad.error.split("\n").filter((l) => l.startsWith("ERROR") || l.startsWith("  at "))).toEqual([
    `ERROR: copy[0] must be a path or glob inside the repository (relative, without '..' or '.git') (was "../secrets")`,
    "  at <dir>/flow.yaml:1:8",
    `ERROR: copy[1] must be a path or glob inside the repository (relative, without '..' or '.git') (was "/etc/passwd")`,
    "  at <dir>/flow.yaml:1:22",
    `ERROR: copy[2] must be a path or glob inside the repository (relative, without '..' or '.git') (was ".git/config")`,
    "  at <dir>/flow.yaml:1:35",
    `ERROR: copy[3] must be a path or glob inside the repository (relative, without '..' or '.git') (was "a/../../b")`,
    "  at <dir>/flow.yaml:1:48",
    "ERROR: ports must be at most 64 (was 65)",
    "  at <dir>/flow.yaml:2:8",
    "ERROR: setup.command must be a string or an array (was missing)",
    "  at <dir>/flow.yaml:3:8",
    "ERROR: unknown field 'setup.comand'",
    "  at <dir>/flow.yaml:3:10",
  ])
  const words = (text: string) => (load(text) as { error: string }).error.split("\n").filter((l) => l.startsWith("ERROR"))
  expect(words(`ports: "2"\n`)).toEqual([`ERROR: ports must be a number of ports from 1 to 64, or a list of { repo, count } entries (was a string)`])
  expect(words("copy: .env\n")).toEqual([`ERROR: copy must be a list of paths or globs, or of { repo, files } entries (was string)`])
  expect(words("ports:\n  - { repo: web, cont: 2 }\n")).toEqual([
    "ERROR: ports[0].count must be a number (was missing)",
    "ERROR: unknown field 'ports[0].cont'",
  ])
  expect(load("teardown:\n  - { command: a }\n  - { command: b }\n")).toEqual({
    error: "flow.yaml has two 'teardown' entries for the default repository (no 'repo')",
    hint: "keep one 'teardown' entry per repository",
    exit: 3,
  })
})

test("queue: { batch: N } takes a whole number; batch: auto is refused until it is built, with what to write instead", () => {
  expect((load("queue: { batch: 4 }\n") as { queue?: unknown }).queue).toEqual({ batch: 4 })
  expect((load("queue: { batch: 0 }\n") as { error: string }).error).toContain("queue.batch must be")
  const auto = (load("queue: { batch: auto }\n") as { error: string }).error
  expect(auto).toContain(`ERROR: queue.batch must be a whole number >= 1 ('auto' is not supported yet: write a number, e.g. batch: 4) (was a string)`)
})
