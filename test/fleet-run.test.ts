// flow run on a shared project, one machine (docs/FLEET.md): the run reads and writes the graph and its run
// state in the database only. tasks.yaml is removed from the checkout after the share, so a read of it would
// fail; .flow/state.db is never made. Agents' `flow ask --wait` is answered by a person's `flow answer`, and
// what the person's commands show (list, questions, agents, dashboard) is the database's.
import { describe, expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { background, bareOrigin, flow, git, tasksYaml, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"
import { startView } from "./view-helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

const TASKS = tasksYaml([
  { id: "base", title: "Base", status: "ready_for_agent", instructions: sh("echo base > base.txt") },
  {
    id: "port",
    title: "Port",
    status: "todo",
    depends_on: ["base"],
    instructions: sh('flow ask "$FLOW_TASK_ID" "Which port?" --wait > port.txt\nflow note "$FLOW_TASK_ID" "port is $(cat port.txt)"'),
  },
  { id: "docs", title: "Docs", status: "todo", depends_on: ["base"], instructions: sh("echo docs > docs.txt") },
  { id: "end", title: "End", status: "todo", depends_on: ["port", "docs"], instructions: sh("cat base.txt port.txt docs.txt > end.txt") },
])

describe.skipIf(!HAVE_POSTGRES)("flow run on a shared project", () => {
  test("runs the graph to done from the database: a question answered, every task merged, the person's views from the database", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": TASKS, ".gitignore": "flow.yaml\n" })
    expect((await flow(dir.path, ["share", db.url])).code).toBe(0)
    await git(dir.path, ["rm", "-q", "tasks.yaml"])
    await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-q", "-m", "the graph is in the database"])
    await bareOrigin(dir.path)

    const run = background(dir.path, ["run", "--cli", "script", "--agents", "2", "--headless"])
    // The agent's question reaches the database; a person answers it from another process.
    let pending: { id: string; task_id: string; text: string }[] = []
    while (pending.length === 0) {
      const listed = await flow(dir.path, ["questions", "--json"])
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: "" })
      pending = JSON.parse(listed.stdout).questions
      if (pending.length === 0) await Bun.sleep(100)
    }
    expect(pending).toMatchObject([{ id: "q-1", task_id: "port", text: "Which port?" }])
    expect((await flow(dir.path, ["answer", "1", "8080"])).code).toBe(0)
    const result = await run.done()
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })

    const list = JSON.parse((await flow(dir.path, ["list", "--json"])).stdout)
    const statuses = list.phases.flatMap((p: { tasks: { id: string; status: string }[] }) => p.tasks.map((t) => [t.id, t.status]))
    expect(statuses).toEqual([
      ["base", "done"],
      ["port", "done"],
      ["docs", "done"],
      ["end", "done"],
    ])
    expect(JSON.parse((await flow(dir.path, ["show", "port", "--json"])).stdout).task.ai_notes).toEqual(["port is 8080"])
    // Every task's work is merged into main, each once.
    expect(await git(dir.path, ["show", "main:end.txt"])).toBe("base\n8080\ndocs\n")
    const merges = (await git(dir.path, ["log", "--merges", "--format=%s", "main"])).trim().split("\n")
    expect(merges).toHaveLength(4)
    expect(new Set(merges).size).toBe(4)

    const questions = JSON.parse((await flow(dir.path, ["questions", "--all", "--json"])).stdout).questions
    expect(questions.map((q: { id: string; answer: string }) => [q.id, q.answer])).toEqual([["q-1", "8080"]])
    const agents = JSON.parse((await flow(dir.path, ["agents", "--json"])).stdout)
    expect(JSON.stringify(agents)).toContain("script-1")
    const dashboard = await flow(dir.path, ["dashboard", "--json"])
    expect(dashboard.code).toBe(0)
    expect(JSON.parse(dashboard.stdout).counts).toMatchObject({ done: 4 })
    expect(await flow(dir.path, ["__complete", "tasks"])).toEqual({ code: 0, stdout: "base\nport\ndocs\nend\n", stderr: "" })
    // Nothing of the run went to files: no tasks.yaml came back, no state database was made.
    expect(existsSync(dir.file("tasks.yaml"))).toBe(false)
    expect(existsSync(dir.file(".flow/state.db"))).toBe(false)
  })

  test("flow view shows the database's graph and questions, and follows what other processes change there", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    expect((await flow(dir.path, ["share", db.url])).code).toBe(0)
    await git(dir.path, ["rm", "-q", "tasks.yaml"])
    await using view = await startView(dir)
    const statusOf = async (id: string) => {
      const report = (await (await view.get("/api/tasks")).json()) as { phases: { tasks: { id: string; status: string }[] }[] }
      return report.phases.flatMap((p) => p.tasks).find((t) => t.id === id)?.status
    }
    expect(await statusOf("base")).toBe("ready_for_agent")
    expect((await flow(dir.path, ["done", "base"])).code).toBe(0)
    expect((await flow(dir.path, ["ask", "port", "Which port?"])).code).toBe(0)
    // No file changed: the page's server finds the change in the database (it looks every 2 s).
    while ((await statusOf("base")) !== "done") await Bun.sleep(100)
    expect(await statusOf("port")).toBe("ready_for_agent")
    const questions = (await (await view.get("/api/questions")).json()) as { questions: { id: string }[] }
    expect(questions.questions.map((q) => q.id)).toEqual(["q-1"])
  })
})
