// Claude Code (the real CLI) end to end under `flow run`, against the scripted model server.
import { expect, test } from "bun:test"
import { startModelServer } from "./fixtures/model-server/server"
import { agentE2E, e2eProject } from "./agent-e2e"
import { claude } from "./agent-e2e-claude-setup"
import { flow, git } from "./helpers"

agentE2E(claude)

test.skipIf(process.getuid?.() !== 0)(
  "claude as root: a refused --permission-mode bypassPermissions is the one-line reason in the log and the block note",
  async () => {
    await using server = startModelServer({ refuse: [{ commands: ["flow done refuse"] }] })
    await using p = await e2eProject(claude, server, [{ id: "refuse", title: "Refuse", status: "todo", instructions: "Anything." }], {
      args: ["--permission-mode", "bypassPermissions"],
    })
    const r = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
    const reason = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
    expect(r.code).toBe(4)
    expect(r.stdout).toContain(`refuse | error: ${reason}\n`)
    expect(p.dir.read("tasks.yaml")).toContain(`the agent exited (code 1: ${reason}) without 'flow done' or 'flow block'`)
    expect(server.model.log).toEqual([]) // refused before any request
  },
  60_000,
)

test("claude: an overloaded API it retries is said in the log (not a silent stall), and the task goes on to done", async () => {
  await using server = startModelServer({ flaky: [{ fail: { status: 529, message: "Overloaded", times: 1 }, commands: ["flow done flaky"] }] })
  await using p = await e2eProject(claude, server, [{ id: "flaky", title: "Flaky", status: "todo", instructions: "Anything." }])
  const r = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toMatch(/ flaky \| API request failed \(529[^)]*\): retry 1 of 1 in \d+\.\d s\n/)
  expect(r.stdout).not.toContain("flaky | error:")
  expect(server.model.requests("flaky").map((q) => q.action?.kind)).toEqual(["fail", "command", "text"])
}, 120_000)

test("claude: a prepared worktree: the agent reads the copied .env and its port from the prompt, and its 'git add -A' leaves .env out", async () => {
  await using server = startModelServer({
    envy: [
      {
        commands: ["cat .env", 'echo "port=$FLOW_PORT"', "echo work > work.txt && git add -A && git commit -qm work", "flow done envy"],
        text: "Done.",
      },
    ],
  })
  await using p = await e2eProject(claude, server, [{ id: "envy", title: "Envy", status: "todo", instructions: "Read .env, then commit your work." }])
  p.dir.write("flow.yaml", `${p.dir.read("flow.yaml")}copy: [.env]\nports: 1\n`)
  await git(p.dir.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qam", "prepare worktrees"])
  p.dir.write(".env", "SECRET=from-checkout\n")
  const r = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const [first] = server.model.requests("envy")
  const port = /FLOW_PORT=(\d+) \(in your environment too\)/.exec(first.prompt ?? "")?.[1]
  expect(port).toMatch(/^\d+$/)
  expect(first.prompt).toContain("- Copied from the main checkout, and kept out of every commit (do not add them): `.env`.")
  const results = server.model
    .requests("envy")
    .flatMap((q) => q.toolResults ?? [])
    .join("\n")
  expect(results).toContain("SECRET=from-checkout")
  expect(results).toContain(`port=${port}`)
  expect(r.stdout).toContain(`envy: copied .env; ports FLOW_PORT=${port}\n`)
  const committed = (await git(p.dir.path, ["log", "--format=", "--name-only", "main"])).split("\n")
  expect([committed.includes("work.txt"), committed.includes(".env")]).toEqual([true, false])
}, 120_000)
