// Codex, Gemini CLI and OpenCode (the real CLIs) under `flow run` with `mcp: true`, against the scripted model
// server: each finishes its task by calling flow's done tool, under the name that CLI gives it. Claude Code's
// run, with more checks, is test/mcp-agent-claude.test.ts.
import { expect, test } from "bun:test"
import { e2eProject } from "./agent-e2e"
import { gemini } from "./agent-e2e-gemini-setup"
import { project, statuses, userHome } from "./agent-e2e-openai-home"
import { startModelServer } from "./fixtures/model-server/server"
import { flow, tasksYaml, type TempDir } from "./helpers"

const TASK = { id: "ship", title: "Ship", status: "todo", instructions: "Nothing to write: tell flow it is done." }

/** The run's outcome: the task done, and what the done tool returned, as the model read it. */
async function finishes(dir: TempDir, env: Record<string, string>, server: ReturnType<typeof startModelServer>) {
  const r = await flow(dir.path, ["run", "--headless"], { env })
  expect({ code: r.code, stderr: r.stderr, statuses: statuses(dir) }).toEqual({ code: 0, stderr: "", statuses: { ship: "done" } })
  // Each CLI wraps the result its own way (Gemini in a JSON string): the WriteReport's change is in it.
  const results = server.model
    .requests("ship")
    .flatMap((q) => q.toolResults ?? [])
    .map((t) => t.replace(/\\n/g, "").replace(/\\/g, ""))
  expect(results.filter((t) => /"id":\s*"ship",\s*"from":\s*"in_progress",\s*"to":\s*"done"/.test(t))).toHaveLength(1)
  return r.stdout
}

// Codex lists a server's tools in a namespace tool `mcp__flow`; the scripted model calls `mcp__flow__flow_done`
// and the protocol file turns it into the namespaced call Codex expects.
for (const [cli, name] of [
  ["codex", "mcp__flow__flow_done"],
  ["opencode", "flow_flow_done"],
] as const) {
  test.concurrent(`${cli} with mcp: true finishes a task through flow's done tool (${name})`, async () => {
    await using server = startModelServer({ ship: [{ commands: [{ tool: name, input: { task_id: "ship" } }], text: "Done." }] })
    await using home = await userHome(cli, server.url)
    await using dir = await project(cli, tasksYaml([TASK]))
    dir.write("flow.yaml", `agents:\n  - name: ${cli}-1\n    cli: ${cli}\n    mcp: true\n`)
    await finishes(dir, home.env, server)
  }, 600_000)
}

test.concurrent("gemini with mcp: true finishes a task through flow's done tool (mcp_flow_flow_done)", async () => {
  await using server = startModelServer({ ship: [{ commands: [{ tool: "mcp_flow_flow_done", input: { task_id: "ship" } }], text: "Done." }] })
  await using p = await e2eProject(gemini, server, [TASK], { mcp: true })
  expect(await finishes(p.dir, p.env, server)).toContain("ship | tool mcp_flow_flow_done\n")
}, 600_000)
