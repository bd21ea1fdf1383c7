// A real Claude Code under `flow run` with `mcp: true`: it gets flow's MCP server through --mcp-config and
// finishes its task by calling the flow_note and flow_done tools (mcp__flow__flow_note, mcp__flow__flow_done),
// played by the scripted model server; no shell command of the agent touches tasks.yaml. Its first turn ends
// without flow_done: the session is resumed with a prompt naming the tools too.
import { afterAll, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { TOOLS } from "../lib/mcp/tools"
import { startModelServer } from "./fixtures/model-server/server"
import { e2eProject } from "./agent-e2e"
import { claude } from "./agent-e2e-claude-setup"
import { flow } from "./helpers"

const server = startModelServer()
afterAll(() => server.stop())

test("claude with mcp: true finishes a task by calling flow's done tool, and the run merges it", async () => {
  server.model.script("ship", [
    {
      commands: [
        "printf 'shipped\\n' > ship.txt && git add ship.txt && git commit -q -m ship",
        { tool: "mcp__flow__flow_note", input: { task_id: "ship", text: "Wrote ship.txt through the shell, told flow through MCP." } },
      ],
      text: "Wrote ship.txt.",
    },
    { commands: [{ tool: "mcp__flow__flow_done", input: { task_id: "ship" } }], text: "Shipped." },
  ])
  await using p = await e2eProject(
    claude,
    server,
    [
      { id: "ship", title: "Ship", status: "todo", instructions: "Write ship.txt." },
      { id: "after", title: "After", status: "todo", depends_on: ["ship"], instructions: "Nothing.", agent_name: "nobody" },
    ],
    { mcp: true },
  )
  const r = await flow(p.dir.path, ["run", "--headless"], { env: p.env })
  // `after` is left to an agent this run does not have: the run ends with one task remaining.
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
  const tasks = (Bun.YAML.parse(p.dir.read("tasks.yaml")) as { tasks: { id: string; status: string; ai_notes?: string[] }[] }).tasks
  expect(tasks.map((t) => [t.id, t.status])).toEqual([
    ["ship", "done"],
    ["after", "ready_for_agent"],
  ])
  expect(tasks[0]!.ai_notes).toEqual(["Wrote ship.txt through the shell, told flow through MCP."])
  expect(p.dir.read("ship.txt")).toBe("shipped\n")
  expect(r.stdout).toMatch(/ship: merged \S+ into main/)

  const requests = server.model.requests("ship")
  // The prompt names the tools, not the commands. Claude Code names flow's tools mcp__flow__<tool> and lists
  // them among its deferred tools (their schemas loaded on demand through its ToolSearch tool).
  expect(requests[0]!.prompt).toContain('- `flow_done` with task_id "ship" when every acceptance criterion is met')
  expect(requests[0]!.prompt).not.toContain("`flow done ship`")
  // The retry's prompt names them as the first prompt does; the run's log, read by a person, the commands.
  expect(requests.find((q) => q.turn === 2)!.prompt).toBe(
    'the agent exited (code 0) without `flow_done` with task_id "ship" or `flow_block` with task_id "ship". Finish the task, then call `flow_done` with task_id "ship", or call `flow_block` with task_id "ship" and reason "<reason>" if you cannot.',
  )
  expect(r.stdout).toContain("ship: retry 2: the agent exited (code 0) without 'flow done ship' or 'flow block ship'")
  const named = new Set(requests.flatMap((q) => JSON.stringify(q.body).match(/mcp__flow__[a-z_]+/g) ?? []))
  expect([...named].sort()).toEqual(TOOLS.map((t) => `mcp__flow__${t.name}`).sort())
  // What the model read back: the note tool's and the done tool's WriteReport, as `flow note|done --json`
  // print it (Claude Code passes on the structured result, as compact JSON).
  const results = [requests.filter((q) => q.turn === 1).at(-1)!.toolResults![1]!, requests.at(-1)!.toolResults![0]!].map(
    (r) => JSON.parse(r) as { changes: unknown[]; tasks: { id: string; status: string }[]; notes: string[] },
  )
  expect(results.map((r) => ({ changes: r.changes, tasks: r.tasks.map((t) => [t.id, t.status]), notes: r.notes }))).toEqual([
    { changes: [], tasks: [["ship", "in_progress"]], notes: [] },
    {
      changes: [
        { id: "ship", from: "in_progress", to: "done", reason: null },
        { id: "after", from: "todo", to: "ready_for_agent", reason: "dependencies done" },
      ],
      tasks: [
        ["ship", "done"],
        ["after", "ready_for_agent"],
      ],
      notes: [],
    },
  ])
  // The server was this flow, for this task, through the launcher on the agent's PATH.
  const config = JSON.parse(readFileSync(join(p.dir.path, ".flow", "mcp", "ship", "claude-mcp.json"), "utf8"))
  expect(config.mcpServers.flow).toMatchObject({
    type: "stdio",
    command: join(p.dir.path, ".flow", "bin", "flow"),
    args: ["mcp"],
    env: { FLOW_PROJECT: p.dir.path, FLOW_TASK_ID: "ship", FLOW_AGENT: "claude-1" },
  })
}, 240_000)
