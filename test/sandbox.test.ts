// flow.yaml `sandbox` (issue 38, docs/SANDBOX.md), run by the script agent through the real CLI (the compiled
// binary with FLOW_BIN): writes outside the task's worktree refused and nothing there changed (hashed before
// and after), another branch's ref kept, the environment cut, the network taken away with `network: none`, the
// flow command door open only for the agent's own task, a SIGKILLed run leaving no sandboxed process, and a
// machine without bubblewrap refusing the run rather than running unsandboxed.
import { expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { background, flow, git, snapshot, tasksYaml, tempRepo, until } from "./helpers"

const sh = (body: string) => `\`\`\`sh\n${body}\n\`\`\`\n`

/** A file's hash, or "absent": what "nothing changed" compares. */
function hashOf(path: string): string {
  return existsSync(path) ? createHash("sha256").update(readFileSync(path)).digest("hex") : "absent"
}

/** A hash of every path under `dir` (but .git) with its mode and bytes. */
function hashTree(dir: string): string {
  return createHash("sha256")
    .update(JSON.stringify(snapshot(dir)))
    .digest("hex")
}

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

test.concurrent("a sandboxed agent's writes outside its worktree are refused, nothing outside changes, its own work lands", async () => {
  await using dir = await tempRepo({ "PRD.md": "# the person's PRD\n" })
  const root = dir.path
  const home = join(root, ".test-home") // untracked, as a person's home is
  mkdirSync(join(home, ".ssh"), { recursive: true })
  writeFileSync(join(home, ".ssh", "authorized_keys"), "ssh-ed25519 AAAA the-person\n")
  writeFileSync(join(home, ".bashrc"), "# the person's bashrc\n")
  const other = mkdtempSync(join(tmpdir(), "flow-test-other-"))
  writeFileSync(join(other, "tasks.yaml"), "tasks: []\n")
  const sibling = join(root, ".test-sibling")
  await git(root, ["worktree", "add", "-q", "-b", "sibling", sibling])
  const targets = {
    checkout: `${root}/PRD.md`,
    newInCheckout: `${root}/intruder.txt`,
    hook: `${root}/.git/hooks/post-merge`,
    gitConfig: `${root}/.git/config`,
    sibling: `${sibling}/PRD.md`,
    keys: `${home}/.ssh/authorized_keys`,
    bashrc: `${home}/.bashrc`,
    hosts: "/etc/hosts",
    otherProject: `${other}/tasks.yaml`,
  }
  // Each write is tried on its own; the task then commits its own file (its git writes must pass).
  // Where git finds the repository from the worktree (made by the run): rewritten, flow's own git there would obey the agent.
  // And the entry's own config, which git reads with extensions.worktreeConfig on (hooks, fsmonitor).
  const gitLinks = {
    gitLink: `${root}/.flow/worktrees/work/.git`,
    commondir: `${root}/.git/worktrees/work/commondir`,
    worktreeConfig: `${root}/.git/worktrees/work/config.worktree`,
  }
  const attempts = Object.entries({ ...targets, ...gitLinks })
    // The machine's own files are only opened for appending, never written: a broken sandbox must not damage them.
    .map(
      ([name, file]) =>
        `if printf '' >> '${file}' 2>/dev/null ${file.startsWith("/etc/") ? "" : `&& echo pwned >> '${file}'`}; then echo "WROTE ${name}"; else echo "refused ${name}"; fi`,
    )
    .join("\n")
  dir.write("flow.yaml", "agents:\n  - name: box\n    cli: script\nsandbox: true\n")
  dir.write(
    "tasks.yaml",
    tasksYaml([
      {
        id: "work",
        title: "Work",
        status: "todo",
        instructions: sh(`${attempts}
if git update-ref refs/heads/main HEAD 2>/dev/null; then echo "WROTE main"; else echo "refused main"; fi
if git update-ref refs/heads/sibling HEAD 2>/dev/null; then echo "WROTE sibling ref"; else echo "refused sibling ref"; fi
echo "secret=[\${SANDBOX_TEST_SECRET:-}] kept=[\${SANDBOX_TEST_KEPT:-}] task=[$FLOW_TASK_ID] home=[$HOME]"
echo mine > mine.txt && git add mine.txt && git -c user.name=box -c user.email=box@flow.invalid commit -qm "work: mine" && echo committed`),
      },
    ]),
  )
  await git(root, ["add", "-A"])
  await git(root, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qm", "tasks"])
  const before = {
    ...Object.fromEntries(Object.entries(targets).map(([k, f]) => [k, hashOf(f)])),
    siblingTree: hashTree(sibling),
    ssh: hashTree(join(home, ".ssh")),
    main: (await git(root, ["rev-parse", "main"])).trim(),
    siblingRef: (await git(root, ["rev-parse", "sibling"])).trim(),
  }
  const r = await flow(root, ["run", "--headless"], { env: { HOME: home, SANDBOX_TEST_SECRET: "s3cret", SANDBOX_TEST_KEPT: "k" } })
  const after = {
    ...Object.fromEntries(Object.entries(targets).map(([k, f]) => [k, hashOf(f)])),
    siblingTree: hashTree(sibling),
    ssh: hashTree(join(home, ".ssh")),
    main: before.main, // moved by the merge of the task's work: checked below
    siblingRef: (await git(root, ["rev-parse", "sibling"])).trim(),
  }
  rmSync(other, { recursive: true, force: true })
  expect({ code: r.code, out: r.code === 0 ? "" : r.stdout + r.stderr }).toEqual({ code: 0, out: "" })
  for (const name of Object.keys({ ...targets, ...gitLinks })) expect(r.stdout).toContain(`refused ${name}`)
  expect(r.stdout).not.toContain("WROTE")
  expect(r.stdout).toContain("refused main")
  expect(r.stdout).toContain("refused sibling ref")
  expect(after).toEqual(before)
  // The environment: the secret is gone, FLOW_* and HOME are there.
  expect(r.stdout).toContain(`secret=[] kept=[] task=[work] home=[${home}]`)
  // The task's own commit landed: main is the merge of it, and the run said nothing unsandboxed.
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ work: "done" })
  expect((await git(root, ["log", "--format=%s", "main"])).split("\n")).toContain("work: mine")
  expect(readFileSync(join(root, "mine.txt"), "utf8")).toBe("mine\n")
})

test.concurrent("the flow command door: the agent's own task commands pass, another task's and other commands are refused", async () => {
  await using dir = await tempRepo()
  dir.write("flow.yaml", "agents:\n  - name: box\n    cli: script\n    sandbox: { env: [SANDBOX_TEST_KEPT] }\n")
  dir.write(
    "tasks.yaml",
    tasksYaml([
      {
        id: "own",
        title: "Own",
        status: "todo",
        instructions: sh(`flow note own "said from inside"
flow note other "should not land" || echo "refused note other"
flow done other || echo "refused done other"
flow reset other || echo "refused reset"
flow answer q1 yes || echo "refused answer"
flow show own >/dev/null && echo "show own ok"
echo "kept=[\${SANDBOX_TEST_KEPT:-}] secret=[\${SANDBOX_TEST_SECRET:-}]"`),
      },
      { id: "other", title: "Other", status: "todo", depends_on: ["own"], instructions: sh("echo other") },
    ]),
  )
  const r = await flow(dir.path, ["run", "--headless"], { env: { SANDBOX_TEST_KEPT: "k", SANDBOX_TEST_SECRET: "s" } })
  expect({ code: r.code, out: r.code === 0 ? "" : r.stdout + r.stderr }).toEqual({ code: 0, out: "" })
  for (const what of ["note other", "done other", "reset", "answer"]) expect(r.stdout).toContain(`refused ${what}`)
  expect(r.stdout).toContain("show own ok")
  expect(r.stdout).toContain("a sandboxed agent may run 'flow note' only for its own task 'own'")
  expect(r.stdout).toContain("'flow reset' is not one of the task commands a sandboxed agent may run")
  expect(r.stdout).toContain("kept=[k] secret=[]")
  const tasks = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { id: string; ai_notes?: string[] }[] }).tasks
  expect(tasks.find((t) => t.id === "own")?.ai_notes).toContain("said from inside")
  expect(JSON.stringify(tasks.find((t) => t.id === "other")?.ai_notes ?? [])).not.toContain("should not land")
})

test.concurrent("network: none leaves the agent no way out, while an agent without the setting reaches the same server", async () => {
  await using dir = await tempRepo()
  using server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("outside world\n") })
  const reach = (name: string) =>
    `if exec 3<>/dev/tcp/127.0.0.1/${server.port}; then printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; grep -q "outside world" <&3 && echo "${name} reached"; else echo "${name} refused"; fi`
  dir.write("flow.yaml", "agents:\n  - name: none\n    cli: script\n    sandbox: { network: none }\n  - name: full\n    cli: script\n    sandbox: true\n")
  dir.write(
    "tasks.yaml",
    tasksYaml([
      { id: "cut", title: "Cut", status: "todo", agent_name: "none", instructions: sh(reach("cut")) },
      { id: "open", title: "Open", status: "todo", agent_name: "full", instructions: sh(reach("open")) },
    ]),
  )
  const r = await flow(dir.path, ["run", "--headless"])
  expect({ code: r.code, out: r.code === 0 ? "" : r.stdout + r.stderr }).toEqual({ code: 0, out: "" })
  expect(r.stdout).toContain("cut refused")
  expect(r.stdout).toContain("open reached")
})

test.concurrent("a SIGKILL of the run leaves no sandboxed process alive; the next run removes its door's folder and finishes", async () => {
  await using dir = await tempRepo()
  const marker = `sandbox-sleep-${process.pid}-${Date.now()}`
  dir.write("flow.yaml", "agents:\n  - name: box\n    cli: script\nsandbox: true\n")
  // The first run sleeps; the one after it finds its file in the worktree and finishes.
  dir.write(
    "tasks.yaml",
    tasksYaml([
      { id: "long", title: "Long", status: "todo", instructions: sh(`[ -e once ] && exit 0\ntouch once\necho started\nexec -a ${marker} sleep 300`) },
    ]),
  )
  const alive = () =>
    readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith(marker)
        } catch {
          return false
        }
      })
  const run = background(dir.path, ["run", "--headless"])
  await run.waitFor("long | started")
  await until(() => alive().length > 0)
  expect(alive().length).toBe(1)
  const doors = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`flow-door-${run.proc.pid}-`))
  expect(doors().length).toBe(1)
  run.proc.kill("SIGKILL")
  await run.proc.exited
  await until(() => alive().length === 0)
  expect(alive()).toEqual([])
  expect(doors().length).toBe(1) // a SIGKILL closes nothing
  const next = await flow(dir.path, ["run", "--headless"])
  expect(next.code).toBe(0)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ long: "done" })
  expect(doors()).toEqual([])
})

test.concurrent("without bubblewrap on PATH, flow doctor fails and flow run refuses to start: no agent runs unsandboxed", async () => {
  await using dir = await tempRepo()
  // A PATH of every program but bwrap.
  const bin = join(dir.path, ".test-bin")
  mkdirSync(bin)
  for (const folder of ["/usr/local/bin", "/usr/bin", "/bin"]) {
    for (const name of existsSync(folder) ? readdirSync(folder) : []) {
      if (name !== "bwrap" && !existsSync(join(bin, name))) symlinkSync(join(folder, name), join(bin, name))
    }
  }
  const env = { PATH: `${bin}:${join(import.meta.dir, "..", "node_modules", ".bin")}` }
  dir.write("flow.yaml", "agents:\n  - name: box\n    cli: script\n    sandbox: true\n")
  dir.write("tasks.yaml", tasksYaml([{ id: "t", title: "T", status: "todo", instructions: sh("echo ran > ran.txt") }]))
  const tasks = dir.read("tasks.yaml")
  const doctor = await flow(dir.path, ["doctor"], { env })
  expect(doctor.code).toBe(1)
  expect(doctor.stdout).toContain("FAIL  bwrap (bubblewrap) is not on PATH, and flow.yaml asks for a sandbox")
  expect(doctor.stdout).toContain("hint: install bubblewrap (Debian, Ubuntu: sudo apt-get install bubblewrap;")
  const r = await flow(dir.path, ["run", "--headless"], { env })
  expect(r.code).toBe(1)
  expect(r.stderr).toContain("bwrap (bubblewrap) is not on PATH")
  expect(dir.read("tasks.yaml")).toBe(tasks)
  expect(existsSync(join(dir.path, ".flow", "worktrees", "t", "ran.txt"))).toBe(false)
  // With bubblewrap there, doctor says so.
  const ok = await flow(dir.path, ["doctor"])
  expect(ok.stdout).toMatch(/ok {4}agents run sandboxed \(bubblewrap \d/)
})

test("flow.yaml's sandbox: true, false or { network: full|none, env }, the agent's own over the one for all; anything else refused at its line", async () => {
  const { sandboxOf, withSandbox } = await import("../lib/config/sandbox-config")
  const { loadConfig } = await import("../lib/config/config")
  await using dir = await tempRepo()
  const load = (text: string) => {
    writeFileSync(join(dir.path, "flow.yaml"), text)
    try {
      return loadConfig(dir.path)
    } catch (e) {
      return (e as Error).message
    }
  }
  const config = load(
    "sandbox: { network: none, env: [MY_TOKEN] }\nagents:\n  - { name: a, cli: script }\n  - { name: b, cli: script, sandbox: false }\n  - { name: c, cli: script, sandbox: true }\n",
  )
  if (typeof config === "string") throw new Error(config)
  const agents = withSandbox(config.agents ?? [], config.sandbox)
  expect(agents.map((a) => sandboxOf(a))).toEqual([{ network: "none", env: ["MY_TOKEN"] }, undefined, { network: "full", env: [] }])
  expect(sandboxOf({})).toBeUndefined()
  // An allow list of hosts is not built: flow.yaml does not take one.
  expect(load("sandbox: { network: [api.anthropic.com] }\n")).toContain("flow.yaml:1:")
  expect(load("sandbox: { network: proxy }\n")).toContain("sandbox.network must be")
  expect(load("sandbox: { env: [1BAD] }\n")).toContain("an environment variable's name")
  expect(load("agents:\n  - { name: a, cli: script, sandbox: yes }\n")).toContain("agents[0].sandbox")
})

test("the door's rule: the task commands for the agent's own task and steps, right after the command; nothing else", async () => {
  const { doorRefusal } = await import("../lib/sandbox/door")
  const { envAllowed } = await import("../lib/sandbox/sandbox")
  const ok = (args: string[]) => doorRefusal(args, "own", ["own.1"])
  for (const args of [
    ["done", "own"],
    ["block", "own", "why"],
    ["note", "own", "n"],
    ["ask", "own", "q", "--wait"],
    ["show", "own", "--json"],
    ["step", "done", "own.1"],
    ["step", "start", "own.1"],
    ["step", "list", "own"],
  ])
    expect({ args, refused: ok(args) }).toEqual({ args, refused: undefined })
  for (const args of [
    ["done", "other"],
    ["done"],
    ["done", "--json", "own"],
    ["step", "done", "other.1"],
    ["step", "show", "other"],
    ["step", "reset", "own"],
    ["reset", "own"],
    ["answer", "q-1", "x"],
    ["run"],
    ["validate"],
    [],
  ])
    expect({ args, refused: typeof ok(args) }).toEqual({ args, refused: "string" })
  expect(["ANTHROPIC_API_KEY", "FLOW_TASK_ID", "LC_ALL", "PATH"].map((n) => envAllowed(n, ["ANTHROPIC_*", "FLOW_*", "LC_*", "PATH"]))).toEqual([
    true,
    true,
    true,
    true,
  ])
  expect(["PATHX", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC"].map((n) => envAllowed(n, ["ANTHROPIC_*", "PATH"]))).toEqual([false, false, false])
})

test.concurrent("an agent with both 'mcp: true' and a sandbox is refused before the run starts: flow's MCP server has no door", async () => {
  await using dir = await tempRepo()
  dir.write("flow.yaml", "sandbox: true\nagents:\n  - name: c\n    cli: claude\n    mcp: true\n")
  dir.write("tasks.yaml", tasksYaml([{ id: "t", title: "T", status: "todo", instructions: "Anything." }]))
  const tasks = dir.read("tasks.yaml")
  const r = await flow(dir.path, ["run", "--headless"])
  expect(r.code).toBe(3)
  expect(r.stderr).toContain("agent c has both 'mcp: true' and a sandbox, and flow's MCP server cannot reach the project's state from inside one")
  expect(r.stderr).toContain("hint: remove 'mcp: true' from that agent")
  expect(dir.read("tasks.yaml")).toBe(tasks)
})

test.concurrent("with the top-level sandbox, the setup and the merge queue's check run sandboxed: their writes outside are refused, their own work passes", async () => {
  await using dir = await tempRepo({ "PRD.md": "# the person's PRD\n" })
  const root = dir.path
  const home = join(root, ".test-home")
  mkdirSync(home, { recursive: true })
  writeFileSync(join(home, ".bashrc"), "# the person's bashrc\n")
  const targets = { checkout: `${root}/PRD.md`, newInCheckout: `${root}/intruder.txt`, bashrc: `${home}/.bashrc`, gitConfig: `${root}/.git/config` }
  // Each command tries every write; one that gets through fails the command, so the task could not land.
  const tries = (who: string) =>
    Object.entries(targets)
      .map(
        ([name, file]) =>
          `if printf '' >> '${file}' 2>/dev/null && echo pwned >> '${file}'; then echo "${who} WROTE ${name}"; exit 1; else echo "${who} refused ${name}"; fi`,
      )
      .join("\n")
  dir.write("setup.sh", `${tries("setup")}\necho built > built.txt\necho "setup secret=[\${SANDBOX_TEST_SECRET:-}]"\n`)
  dir.write("check.sh", `${tries("check")}\necho checked > checked.txt\ntest -f mine.txt\n`)
  dir.write(
    "flow.yaml",
    'agents:\n  - name: box\n    cli: script\nsandbox: true\nsetup: { command: "sh setup.sh" }\nverify: { command: "sh check.sh" }\nfix_attempts: 0\n',
  )
  dir.write("tasks.yaml", tasksYaml([{ id: "work", title: "Work", status: "todo", instructions: sh("echo mine > mine.txt") }]))
  await git(root, ["add", "-A"])
  await git(root, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qm", "tasks"])
  const hashes = () => Object.fromEntries(Object.entries(targets).map(([k, f]) => [k, hashOf(f)]))
  const before = hashes()
  const r = await flow(root, ["run", "--headless"], { env: { HOME: home, SANDBOX_TEST_SECRET: "s3cret" } })
  expect({ code: r.code, out: r.code === 0 ? "" : r.stdout + r.stderr }).toEqual({ code: 0, out: "" })
  expect(hashes()).toEqual(before)
  for (const name of Object.keys(targets)) expect(r.stdout).toContain(`setup refused ${name}`)
  expect(r.stdout).not.toContain("WROTE")
  expect(r.stdout).toContain("setup secret=[]")
  // The check ran (in its scratch worktree, sandboxed too) and passed: the task landed.
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ work: "done" })
  expect(readFileSync(join(root, "mine.txt"), "utf8")).toBe("mine\n")
})
