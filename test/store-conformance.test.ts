// The store seam's conformance suite (STYLE.md §10, River's riverdrivertest as the model): every task command
// run through the real CLI against each backend, tasks.yaml and a shared PostgreSQL database, with the same
// expectations: output, --json, errors and exit codes, cascades in one write, concurrent writers losing
// nothing. A backend passes this file or it is not a backend.
import { describe, expect, test } from "bun:test"
import { flow, type Result, type TempDir, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, type TestDatabase } from "./postgres"

type Backend = { name: string; enabled: boolean; attach: (dir: TempDir) => Promise<AsyncDisposable> }

const BACKENDS: Backend[] = [
  { name: "file", enabled: true, attach: async () => ({ [Symbol.asyncDispose]: async () => {} }) },
  {
    name: "postgres",
    enabled: HAVE_POSTGRES,
    attach: async (dir) => {
      const db: TestDatabase = await freshDatabase()
      const shared = await flow(dir.path, ["share", db.url])
      if (shared.code !== 0) throw new Error(`flow share failed: ${shared.stderr}`)
      return db
    },
  },
]

const GRAPH = `# a hand-written graph
tasks:
  - id: setup
    title: Set up
    status: in_progress
    instructions: Make the repo.
  - id: api
    title: API
    status: todo
    phase: 1
    depends_on: [setup]
    instructions: Build the API.
    owner: kept-unknown-key
    steps:
      - id: api-1
        instruction: Routes
      - id: api-2
        instruction: Tests
  - id: web
    title: Web
    status: todo
    depends_on: [setup, api]
    instructions: Build the web.
    subtasks:
      - id: web-a
        title: Page A
        status: todo
        instructions: A
      - id: web-b
        title: Page B
        status: todo
        instructions: B
  - id: docs
    title: Docs
    status: blocked
    instructions: Write docs.
`

/** A temp repo holding `text` as tasks.yaml, attached to the backend; disposed with its database. */
async function projectOn(backend: Backend, text = GRAPH) {
  const dir = await tempRepo({ "tasks.yaml": text })
  const attached = await backend.attach(dir)
  return {
    dir,
    run: (args: string[], env?: Record<string, string>) => flow(dir.path, args, { env }),
    /** The graph as the backend holds it now, in the file format. */
    graph: async () => Bun.YAML.parse((await flow(dir.path, ["export", "-"])).stdout) as { tasks: Record<string, unknown>[] },
    [Symbol.asyncDispose]: async () => {
      await attached[Symbol.asyncDispose]()
      await dir[Symbol.asyncDispose]()
    },
  }
}

/** A result with its times replaced, so one expectation fits every run. */
function timeless(r: Result): Result {
  const stamp = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g
  return { code: r.code, stdout: r.stdout.replace(stamp, "<now>"), stderr: r.stderr.replace(stamp, "<now>") }
}

describe.each(BACKENDS.filter((b) => b.enabled || process.env.CI === "1"))("the $name store", (backend) => {
  test.concurrent("list, show and next read the graph, in text and as JSON", async () => {
    await using p = await projectOn(backend)
    expect(await p.run(["list"])).toEqual({
      code: 0,
      stdout:
        "Phase 1\n[todo] api API (depends: setup)\n\nNo phase\n[in_progress] setup Set up\n[todo] web Web (depends: setup, api)\n  [todo] web-a Page A\n  [todo] web-b Page B\n[blocked] docs Docs\n",
      stderr: "",
    })
    const list = JSON.parse((await p.run(["list", "--json"])).stdout)
    expect(list.phases.map((ph: { tasks: { id: string }[] }) => ph.tasks.map((t) => t.id))).toEqual([["api"], ["setup", "web", "web-a", "web-b", "docs"]])
    const show = await p.run(["show", "api", "--json"])
    expect(show.code).toBe(0)
    // The text itself: the keys keep tasks.yaml's order in every backend.
    const api = {
      id: "api",
      title: "API",
      status: "todo",
      phase: 1,
      depends_on: ["setup"],
      instructions: "Build the API.",
      owner: "kept-unknown-key",
      steps: [
        { id: "api-1", instruction: "Routes" },
        { id: "api-2", instruction: "Tests" },
      ],
    }
    expect(show.stdout).toBe(
      `${JSON.stringify(
        {
          task: api,
          subtasks: [],
          dependencies: [{ id: "setup", status: "in_progress" }],
          dependents: ["web"],
          validates: [],
          parent: null,
          phase: 1,
          phase_title: null,
          usage: null,
          budget: null,
          worked_by: null,
          landing_wait: null,
          evidence: null,
        },
        null,
        2,
      )}\n`,
    )
    expect(await p.run(["next"])).toEqual({ code: 0, stdout: "No tasks are available.\n", stderr: "" })
    expect((await p.run(["ready", "docs"])).code).toBe(0)
    expect(await p.run(["next"])).toEqual({ code: 0, stdout: "[ready_for_agent] docs Docs\n", stderr: "" })
    expect(JSON.parse((await p.run(["next", "--json"])).stdout).tasks.map((t: { id: string }) => t.id)).toEqual(["docs"])
    expect(await p.run(["show", "apx"])).toEqual({ code: 1, stdout: "", stderr: "error: no task 'apx' in tasks.yaml\nhint: did you mean 'api'?\n" })
  })

  test.concurrent("done cascades in one write: dependents promoted, the parent completed with its last subtask", async () => {
    await using p = await projectOn(backend)
    expect(await p.run(["done", "setup"])).toEqual({
      code: 0,
      stdout: "setup: in_progress → done\napi: todo → ready_for_agent (dependencies done)\n",
      stderr: "",
    })
    expect(timeless(await p.run(["done", "web-a", "--json"]))).toEqual({
      code: 0,
      stdout: `${JSON.stringify(
        {
          changes: [{ id: "web-a", from: "todo", to: "done", reason: null }],
          tasks: [{ id: "web-a", title: "Page A", status: "done", instructions: "A", completed_at: "<now>" }],
          notes: [],
        },
        null,
        2,
      )}\n`,
      stderr: "",
    })
    expect((await p.run(["done", "web"])).code).toBe(1)
    expect((await p.run(["done", "web-b"])).stdout).toBe("web-b: todo → done\nweb: todo → done (all subtasks done)\n")
    const graph = await p.graph()
    expect(graph.tasks.map((t) => [t.id, t.status])).toEqual([
      ["setup", "done"],
      ["api", "ready_for_agent"],
      ["web", "done"],
      ["docs", "blocked"],
    ])
    expect(graph.tasks[1].owner).toBe("kept-unknown-key")
  })

  test.concurrent("done refuses a task with open steps and changes nothing; --force overrides", async () => {
    await using p = await projectOn(backend)
    const before = await p.graph()
    expect(await p.run(["done", "api"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "error: cannot mark 'api' done: 2 steps are not done: api-1 (pending), api-2 (pending)\nhint: finish them in order with 'flow step done <step_id>' (next: api-1), then 'flow done api'; 'flow done api --force' marks it done with them open\n",
    })
    expect(await p.graph()).toEqual(before)
    expect((await p.run(["done", "api", "--force"])).stdout).toBe("api: todo → done\n")
  })

  test.concurrent("ready, start, block with a reason, todo, reset and assign", async () => {
    await using p = await projectOn(backend)
    expect((await p.run(["ready", "docs"])).stdout).toBe("docs: blocked → ready_for_agent\n")
    const started = await p.run(["start", "web"])
    expect(started.stdout).toBe("web: todo → in_progress\n")
    expect(started.stderr).toBe("warning: web depends on setup (in_progress), api (todo), not done yet; started anyway\n")
    expect((await p.run(["block", "web", "waiting", "for", "design"])).stdout).toBe(
      "web: in_progress → blocked\nweb: added the note 'Blocked: waiting for design'\n",
    )
    expect((await p.run(["todo", "web"])).stdout).toBe("web: blocked → todo\n")
    expect((await p.run(["reset", "setup"])).stdout).toBe("setup: in_progress → todo (reset)\n")
    expect((await p.run(["assign", "api", "alice"])).stdout).toBe("api: assigned to alice\n")
    expect((await p.run(["assign", "api", "--clear"])).stdout).toBe("api: no longer assigned (was alice)\n")
    expect((await p.run(["assign", "api", "-bad"])).code).toBe(2)
    const web = (await p.graph()).tasks[2]
    expect(web).toMatchObject({ status: "todo", ai_notes: ["Blocked: waiting for design"] })
    expect(web.started_at).toEqual(expect.any(String))
  })

  test.concurrent("notes and steps: step start, done, show and list, in order only", async () => {
    await using p = await projectOn(backend)
    expect(await p.run(["note", "api", "first", "note"])).toEqual({ code: 0, stdout: "Added a note to api\n", stderr: "" })
    expect((await p.run(["step", "done", "api-2"])).code).toBe(1)
    expect((await p.run(["step", "start", "api-1"])).stdout).toContain("api-1: pending → in_progress\napi: todo → in_progress (step api-1 started)\n")
    expect((await p.run(["step", "done", "api-1"])).stdout).toContain("api-1: in_progress → done\n")
    const shown = JSON.parse((await p.run(["step", "show", "api", "--json"])).stdout)
    expect(shown).toMatchObject({ task_id: "api", done: 1, total: 2, current: { id: "api-2", status: "pending" } })
    const listed = JSON.parse((await p.run(["step", "list", "api", "--json"])).stdout)
    expect(listed.steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ["api-1", "done"],
      ["api-2", "pending"],
    ])
    expect((await p.graph()).tasks[1].ai_notes).toEqual(["first note"])
    expect((await p.run(["note", "nope", "x"])).code).toBe(1)
  })

  test.concurrent("ask, answer and questions", async () => {
    await using p = await projectOn(backend)
    expect(await p.run(["ask", "api", "Which", "port?"], { FLOW_AGENT: "a1" })).toEqual({ code: 0, stdout: "q-1\n", stderr: expect.any(String) })
    const pending = JSON.parse((await p.run(["questions", "--json"])).stdout)
    expect(pending.questions.map((q: { id: string; text: string; agent: string }) => [q.id, q.text, q.agent])).toEqual([["q-1", "Which port?", "a1"]])
    expect((await p.run(["answer", "1", "8080"], { USER: "ann" })).code).toBe(0)
    expect(JSON.parse((await p.run(["questions", "--json"])).stdout)).toEqual({ questions: [] })
    const all = JSON.parse((await p.run(["questions", "--all", "--json"])).stdout)
    expect(all.questions[0]).toMatchObject({ id: "q-1", answer: "8080", answered_by: "ann" })
    expect((await p.run(["answer", "q-1", "9090"])).code).toBe(1)
    expect((await p.run(["answer", "q-7", "x"])).code).toBe(1)
    expect((await p.run(["ask", "nope", "x"])).code).toBe(1)
  })

  test.concurrent("validate checks the graph, and its --json names where it is", async () => {
    await using p = await projectOn(backend)
    const text = await p.run(["validate"])
    expect(text.code).toBe(0)
    expect(text.stdout).toContain(": 6 tasks checked\n0 errors, 1 warning\nParallelism:\n")
    const report = JSON.parse((await p.run(["validate", "--json"])).stdout)
    expect(report).toMatchObject({ valid: true, tasks: 6, errors: 0, warnings: 1 })
    expect(report.findings[0].message).toContain("owner")
  })

  test.concurrent("20 concurrent done and 20 concurrent note lose nothing", async () => {
    const n = 20
    const tasks = Array.from(
      { length: n },
      (_, i) =>
        `  - {id: w${i}, title: W${i}, status: in_progress, instructions: x}\n  - {id: n${i}, title: N${i}, status: todo, depends_on: [w${i}], instructions: y}\n`,
    )
    await using p = await projectOn(backend, `tasks:\n${tasks.join("")}  - {id: notes, title: Notes, status: todo, instructions: z}\n`)
    const env = { FLOW_LOCK_TIMEOUT: "120" }
    const results = await Promise.all([
      ...Array.from({ length: n }, (_, i) => p.run(["done", `w${i}`], env)),
      ...Array.from({ length: n }, (_, i) => p.run(["note", "notes", `note ${i}`], env)),
    ])
    expect(results.filter((r) => r.code !== 0)).toEqual([])
    const graph = await p.graph()
    const status = new Map(graph.tasks.map((t) => [t.id, t.status]))
    for (let i = 0; i < n; i++) expect([status.get(`w${i}`), status.get(`n${i}`)]).toEqual(["done", "ready_for_agent"])
    const notes = graph.tasks.find((t) => t.id === "notes")!.ai_notes as string[]
    expect(notes.toSorted()).toEqual(Array.from({ length: n }, (_, i) => `note ${i}`).toSorted())
  })
})
