// flow.yaml `sandbox: true` with the real Claude Code and Codex (test/agent-clis) against the scripted model
// server (issue 38): the CLI works and finishes its task through the flow command door, while the commands the
// model has it run to write outside its worktree, move main or read a variable off the allow list get nothing.
import { describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { claude } from "./agent-e2e-claude-setup"
import { e2eProject } from "./agent-e2e"
import { asksScenario, project, seen, statuses, stopScenario, userHome } from "./agent-e2e-openai-home"
import { CHAIN, CHAIN_SCRIPTS } from "./agent-e2e-tasks"
import { startModelServer } from "./fixtures/model-server/server"
import { flow, git, tasksYaml, tempRepo } from "./helpers"

const hash = (file: string) => (existsSync(file) ? createHash("sha256").update(readFileSync(file)).digest("hex") : "absent")

/** What the model has the agent try, each saying whether it was refused; then the task's own work and `flow done`. */
function attempts(home: string, project: string): string[] {
  const tryWrite = (name: string, file: string) =>
    // The machine's own files are only opened for appending, never written: a broken sandbox must not damage them.
    `(printf '' >> '${file}' ${file.startsWith("/etc/") ? "" : `&& echo pwned >> '${file}'`} && echo "WROTE ${name}") 2>/dev/null || echo "refused ${name}"`
  return [
    tryWrite("bashrc", join(home, ".bashrc")),
    tryWrite("keys", join(home, ".ssh", "authorized_keys")),
    tryWrite("checkout", join(project, "PRD.md")),
    tryWrite("hosts", "/etc/hosts"),
    `(git update-ref refs/heads/main HEAD && echo "WROTE main") 2>/dev/null || echo "refused main"`,
    `echo "secret=[\${SANDBOX_TEST_SECRET:-}]"`,
    "echo boxed > boxed.txt && git add boxed.txt && git commit -qm boxed && echo committed",
    'flow note boxed "said from the sandbox"',
    "flow done boxed",
  ]
}

const TASK = [{ id: "boxed", title: "Boxed", status: "todo", instructions: "Try things, then commit and finish." }]

/** Every check after the run: refusals said to the model, nothing outside changed, the work merged, done through the door. */
async function expectBoxed(dir: string, before: Record<string, string>, after: Record<string, string>, results: (text: string) => boolean, code: number) {
  expect(code).toBe(0)
  for (const what of ["bashrc", "keys", "checkout", "hosts", "main"]) expect({ what, refused: results(`refused ${what}`) }).toEqual({ what, refused: true })
  expect(results("WROTE")).toBe(false)
  expect(results("secret=[]")).toBe(true)
  expect(results("committed")).toBe(true)
  expect(after).toEqual(before)
  const tasks = (Bun.YAML.parse(readFileSync(join(dir, "tasks.yaml"), "utf8")) as { tasks: { status: string; ai_notes?: string[] }[] }).tasks
  expect(tasks[0]?.status).toBe("done")
  expect(tasks[0]?.ai_notes).toContain("said from the sandbox")
  expect((await git(dir, ["log", "--format=%s", "main"])).split("\n")).toContain("boxed")
}

function personsFiles(home: string): void {
  writeFileSync(join(home, ".bashrc"), "# the person's bashrc\n")
  Bun.spawnSync(["mkdir", "-p", join(home, ".ssh")])
  writeFileSync(join(home, ".ssh", "authorized_keys"), "ssh-ed25519 AAAA the-person\n")
}

const watched = (home: string, project: string) => ({
  bashrc: hash(join(home, ".bashrc")),
  keys: hash(join(home, ".ssh", "authorized_keys")),
  prd: hash(join(project, "PRD.md")),
  hosts: hash("/etc/hosts"),
})

describe("real CLIs in the sandbox, against the scripted model server", () => {
  test.concurrent("claude: refused outside its worktree, its work merged and 'flow done' through the door", async () => {
    await using server = startModelServer()
    await using p = await e2eProject(claude, server, TASK)
    const home = p.env.HOME!
    personsFiles(home)
    // What a person who has used Claude Code has: its state file in HOME, which it rewrites as it works.
    writeFileSync(join(home, ".claude.json"), "{}\n")
    server.model.script("boxed", [{ commands: attempts(home, p.dir.path), text: "Done." }])
    p.dir.write("PRD.md", "# the person's PRD\n")
    p.dir.write("flow.yaml", `${p.dir.read("flow.yaml")}sandbox: true\n`)
    await git(p.dir.path, ["add", "-A"])
    await git(p.dir.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qm", "sandboxed"])
    const before = watched(home, p.dir.path)
    const r = await flow(p.dir.path, ["run", "--headless"], { env: { ...p.env, SANDBOX_TEST_SECRET: "s3cret" } })
    const results = (text: string) => server.model.requests("boxed").some((q) => q.toolResults?.some((t) => t.includes(text)))
    if (r.code !== 0) console.error(r.stdout, r.stderr)
    await expectBoxed(p.dir.path, before, watched(home, p.dir.path), results, r.code)
  }, 240_000)

  test.concurrent("codex: refused outside its worktree, its key let through by the agent's 'sandbox.env', its work merged", async () => {
    await using server = startModelServer()
    await using home = await userHome("codex", server.url)
    personsFiles(home.path)
    await using dir = await tempRepo({
      "tasks.yaml": tasksYaml(TASK),
      "PRD.md": "# the person's PRD\n",
      // Codex reads its key from the variable its config names (env_key): the agent's flow.yaml entry lets it through.
      "flow.yaml": "agents:\n  - name: codex-1\n    cli: codex\n    sandbox: { env: [SCRIPTED_API_KEY] }\n",
    })
    server.model.script("boxed", [{ commands: attempts(home.path, dir.path), text: "Done." }])
    const before = watched(home.path, dir.path)
    const r = await flow(dir.path, ["run", "--headless"], { env: { ...home.env, SANDBOX_TEST_SECRET: "s3cret" } })
    if (r.code !== 0) console.error(r.stdout, r.stderr)
    await expectBoxed(dir.path, before, watched(home.path, dir.path), (text) => seen(server, "boxed", text), r.code)
  }, 240_000)

  // Codex reads its key from the variable its config names: the sandbox lets it through by name.
  const BOXED = "sandbox: { env: [SCRIPTED_API_KEY] }\n"

  test.concurrent("codex in the sandbox: a chain with steps in one session, a forgotten 'flow done' blocked, a 401 blocked", async () => {
    await using server = startModelServer({ ...CHAIN_SCRIPTS })
    await using home = await userHome("codex", server.url)
    await using dir = await project("codex", CHAIN, BOXED)
    const r = await flow(dir.path, ["run", "--headless"], { env: home.env })
    expect({ statuses: statuses(dir), code: r.code }).toEqual({ statuses: { api: "done", web: "done", lazy: "blocked", denied: "blocked" }, code: 4 })
    expect(dir.read("api.txt")).toBe("api 1\napi 2\n")
    expect(dir.read("web.txt")).toBe("web\n")
  }, 900_000)

  test.concurrent(
    "codex in the sandbox: questions with and without --wait, answered through the door",
    () => asksScenario("codex", 900_000, undefined, BOXED),
    900_000,
  )

  test.concurrent("codex in the sandbox: a run stopped by SIGTERM mid-command resumes the same session", () => stopScenario("codex", BOXED), 900_000)
})
