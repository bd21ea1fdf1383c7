// flow share, export, unshare and generate on a shared project, against a real PostgreSQL (test/postgres.ts):
// round trips that keep tasks.yaml's comments (byte for byte when nothing changed), the run state moving
// with the tasks, and the bad conditions: a database that cannot be reached, a schema newer than this flow,
// a project key the database does not hold, a password that must never show in any output or file.
import { describe, expect, test } from "bun:test"
import { SQL } from "bun"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { type } from "arktype"
import { ExportReport, ShareReport, UnshareReport } from "../lib/model/json-shapes"
import { PG_SCHEMA_VERSION } from "../lib/store/postgres/migrations"
import { flow, leaks, type Result, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, PASSWORD, server } from "./postgres"

const TASKS = `# Our tasks: this comment stays through a share and back
tasks:
  # first, the base
  - id: setup
    title: "Set up"      # quoted on purpose
    status: in_progress
    instructions: |
      Make the repo.

      Keep it small.
  - id: api
    title: API
    status: todo
    depends_on: [setup]   # flow style stays flow style
    instructions: Build the API.
    owner: someone        # a key flow does not know
    steps:
      - {id: api-1, instruction: Routes}
      - {id: api-2, instruction: Tests}
# the end
`

const PLAN = `# Plan

## Phase 1: Base

### 1.1 Set up
Make the repo.

### 1.2 API
Build the API.
`

/** Every file of the project (but .git) and every output, with `needle` looked for in each. */
describe.skipIf(!HAVE_POSTGRES)("a shared project", () => {
  test.concurrent("share, then export without a change, gives tasks.yaml back byte for byte; unshare moves everything back", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    expect(await flow(dir.path, ["ask", "api", "Which", "port?"], { env: { FLOW_AGENT: "a1" } })).toMatchObject({ code: 0, stdout: "q-1\n" })
    const shared = await flow(dir.path, ["share", db.url, "--project", "shop", "--json"])
    expect(shared.code).toBe(0)
    expect(JSON.parse(shared.stdout)).toEqual({ database: db.url, project: "shop", tasks: 2, questions: 1, events: 1 })
    expect(ShareReport.onDeepUndeclaredKey("reject")(JSON.parse(shared.stdout))).not.toBeInstanceOf(type.errors)
    const exported = JSON.parse((await flow(dir.path, ["export", "--json"])).stdout)
    expect(ExportReport.onDeepUndeclaredKey("reject")(exported)).toEqual({ file: dir.file("tasks.yaml"), tasks: 2, written: false })
    expect(dir.read("flow.yaml")).toBe(`state: ${db.url}\nproject: shop\n`)
    expect(await flow(dir.path, ["export", "copy.yaml"])).toEqual({ code: 0, stdout: `Wrote ${join(dir.path, "copy.yaml")}: 2 tasks\n`, stderr: "" })
    expect(dir.read("copy.yaml")).toBe(TASKS)

    // The question asked before the share is answered from the database; one asked after continues the ids.
    expect((await flow(dir.path, ["answer", "1", "8080"])).code).toBe(0)
    expect((await flow(dir.path, ["ask", "api", "And the host?"])).stdout).toBe("q-2\n")
    expect((await flow(dir.path, ["done", "setup"])).code).toBe(0)

    const back = await flow(dir.path, ["unshare", "--json"])
    expect(back.code).toBe(0)
    expect(UnshareReport.onDeepUndeclaredKey("reject")(JSON.parse(back.stdout))).not.toBeInstanceOf(type.errors)
    expect(JSON.parse(back.stdout)).toMatchObject({ file: dir.file("tasks.yaml"), tasks: 2, written: true, project: "shop", dropped: false, questions: 2 })
    expect(dir.read("flow.yaml")).toBe("")
    const text = dir.read("tasks.yaml")
    expect(text).toStartWith("# Our tasks: this comment stays through a share and back\ntasks:\n  # first, the base\n")
    expect(text).toContain('    title: "Set up"      # quoted on purpose\n    status: done\n')
    expect(text).toContain("    status: ready_for_agent\n    depends_on: [setup]   # flow style stays flow style\n")
    expect(text).toEndWith("# the end\n")
    const questions = JSON.parse((await flow(dir.path, ["questions", "--all", "--json"])).stdout).questions
    expect(questions.map((q: { id: string; answer: string | null }) => [q.id, q.answer])).toEqual([
      ["q-1", "8080"],
      ["q-2", null],
    ])
    // The database kept the project: sharing it again under that key is refused.
    const again = await flow(dir.path, ["share", db.url, "--project", "shop"])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(`error: the database at ${db.url} already holds a project 'shop'`)
    expect(dir.read("flow.yaml")).toBe("")
  })

  test.concurrent("progress made in the database is written onto the original text with its comments", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": TASKS, "flow.yaml": "# my settings\nparallelism: 2\n" })
    expect((await flow(dir.path, ["share", db.url])).code).toBe(0)
    expect(dir.read("flow.yaml")).toBe(`# my settings\nparallelism: 2\nstate: ${db.url}\nproject: ${dir.path.split("/").at(-1)!.toLowerCase()}\n`)
    for (const args of [
      ["done", "setup"],
      ["step", "start", "api-1"],
      ["note", "api", "a note"],
      ["assign", "api", "bob"],
    ]) {
      expect((await flow(dir.path, args)).code).toBe(0)
    }
    expect((await flow(dir.path, ["export"])).code).toBe(0)
    const text = dir.read("tasks.yaml")
    // Only values changed and lines were added: every original line is still there, in order.
    const original = TASKS.split("\n").filter((l) => !/status:|\{id: api-1/.test(l))
    const lines = text.split("\n")
    let at = 0
    for (const line of original) {
      at = lines.indexOf(line, at)
      expect({ line, found: at >= 0 }).toEqual({ line, found: true })
    }
    expect(text).toContain("      - {id: api-1, instruction: Routes, status: in_progress, started_at:")
    expect(text).toContain("    ai_notes:\n      - a note\n")
    expect(text).toContain("    agent_name: bob\n")
    expect((await flow(dir.path, ["validate"])).code).toBe(0)
  })

  test.concurrent("generate on a shared project carries the progress over and writes what it writes in files", async () => {
    await using db = await freshDatabase()
    await using shared = await tempRepo({ "plan.md": PLAN })
    await using files = await tempRepo({ "plan.md": PLAN })
    for (const dir of [shared, files]) expect((await flow(dir.path, ["generate"])).code).toBe(0)
    expect((await flow(shared.path, ["share", db.url])).code).toBe(0)
    for (const dir of [shared, files]) {
      expect((await flow(dir.path, ["done", "set-up"])).code).toBe(0)
      dir.write("plan.md", `${PLAN}\n### 1.3 Docs\nWrite them.\n`)
      const g = await flow(dir.path, ["generate", "--json"])
      expect(g.code).toBe(0)
      expect(JSON.parse(g.stdout)).toMatchObject({ written: true, added: ["docs"], kept: ["set-up", "api"], removed: [] })
      // Generating again from the same plan changes nothing.
      expect(JSON.parse((await flow(dir.path, ["generate", "--json"])).stdout)).toMatchObject({ written: false })
    }
    const stamp = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g
    const exported = (await flow(shared.path, ["export", "-"])).stdout
    expect(exported.replace(stamp, "<now>")).toBe(files.read("tasks.yaml").replace(stamp, "<now>"))
    expect(exported).toContain("  - id: set-up\n    title: Set up\n    status: done\n")
    expect((await flow(shared.path, ["validate"])).code).toBe(0)
  })

  test.concurrent("the password is never printed nor written, whether the command works or fails", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    const withPassword = db.passwordUrl.replace("flow_pw@", `flow_pw:${PASSWORD}@`)
    const outputs: Result[] = []
    const run = async (args: string[], env: Record<string, string> = {}) => {
      const r = await flow(dir.path, args, { env })
      outputs.push(r)
      return r
    }
    const wrong = await run(["share", db.passwordUrl.replace("flow_pw@", "flow_pw:not-the-password@")])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain(`error: the database at ${db.passwordUrl} refused the login`)
    const noPassword = await run(["share", db.passwordUrl])
    expect(noPassword.code).toBe(1)
    expect((await run(["share", withPassword])).code).toBe(0)
    expect(dir.read("flow.yaml")).toBe(`state: ${db.passwordUrl}\nproject: ${dir.path.split("/").at(-1)!.toLowerCase()}\n`)
    // Without a password the shared project is refused; FLOW_DATABASE_URL or PGPASSWORD give it.
    const refused = await run(["list"])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("refused the login")
    expect((await run(["list"], { FLOW_DATABASE_URL: withPassword })).code).toBe(0)
    expect((await run(["done", "setup", "--json"], { PGPASSWORD: PASSWORD })).code).toBe(0)
    expect((await run(["validate", "--json"], { PGPASSWORD: PASSWORD })).code).toBe(0)
    const other = await run(["list"], { FLOW_DATABASE_URL: withPassword.replace(db.name, "postgres") })
    expect(other.code).toBe(3)
    expect(other.stderr).toContain("FLOW_DATABASE_URL names")
    expect(leaks(dir.path, outputs, PASSWORD)).toEqual([])
    expect(outputs.length).toBe(8)
  })

  test.concurrent("a database that cannot be reached is named without its password, with exit 1", async () => {
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    const url = `postgres://someone:${PASSWORD}@127.0.0.1:1/nowhere?connect_timeout=5`
    const r = await flow(dir.path, ["share", url])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("error: cannot reach the database at postgres://someone@127.0.0.1:1/nowhere?connect_timeout=5")
    expect(leaks(dir.path, [r], PASSWORD)).toEqual([])
    dir.write("flow.yaml", "state: postgres://someone@127.0.0.1:1/nowhere?connect_timeout=5\n")
    const list = await flow(dir.path, ["list"], { env: { PGPASSWORD: PASSWORD } })
    expect(list.code).toBe(1)
    expect(list.stderr).toContain("error: cannot reach the database at postgres://someone@127.0.0.1:1/nowhere?connect_timeout=5")
    expect(leaks(dir.path, [list], PASSWORD)).toEqual([])
  })

  test.concurrent("a schema newer than this flow, and a project key the database does not hold, are refused with exit 3", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    expect((await flow(dir.path, ["share", db.url, "--project", "shop"])).code).toBe(0)
    dir.write("flow.yaml", `state: ${db.url}\nproject: other\n`)
    const missing = await flow(dir.path, ["list"])
    expect(missing).toEqual({
      code: 3,
      stdout: "",
      stderr: `error: the database at ${db.url} holds no project 'other'\nhint: its projects: shop; set project: in flow.yaml to one of them, or run 'flow share ${db.url} --project other' to share this one\n`,
    })
    expect((await flow(dir.path, ["questions"])).code).toBe(3)
    dir.write("flow.yaml", `state: ${db.url}\nproject: shop\n`)
    await db.sql`INSERT INTO flow_schema (version) VALUES (999)`
    const newer = await flow(dir.path, ["list"])
    expect(newer.code).toBe(3)
    expect(newer.stderr).toContain(`error: the database at ${db.url} has flow's schema version 999, newer than this flow knows`)
    dir.write("flow.yaml", "state: mysql://x\n")
    expect((await flow(dir.path, ["list"])).code).toBe(3)
  })

  test.concurrent("a database holding another application's projects and tasks is refused before anything is written; a schema of flow's own works", async () => {
    await using db = await freshDatabase()
    await db.sql.unsafe(`
      CREATE TABLE projects (id serial PRIMARY KEY, name text NOT NULL);
      CREATE TABLE tasks (id serial PRIMARY KEY, project integer REFERENCES projects, done boolean);
      INSERT INTO projects (name) VALUES ('website');
      INSERT INTO tasks (project, done) VALUES (1, false);`)
    const theirs = async () => ({
      relations: (
        await db.sql`SELECT n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1`
      ).map((r: { name: string }) => r.name),
      rows: await db.sql`SELECT p.name, t.done FROM public.projects p JOIN public.tasks t ON t.project = p.id`,
    })
    const before = await theirs()
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    const refused = await flow(dir.path, ["share", db.url])
    const own = `${db.url}&options=-csearch_path%3Dflow`
    expect(refused).toEqual({
      code: 3,
      stdout: "",
      stderr:
        `error: the database at ${db.url} already has tables projects, tasks in schema public that are not flow's (flow creates its own under those names): nothing was written\n` +
        `hint: give flow a schema of its own: run CREATE SCHEMA flow in that database and add options=-csearch_path%3Dflow to the URL (${own}); or use another database\n`,
    })
    expect(await theirs()).toEqual(before)
    expect(existsSync(join(dir.path, "flow.yaml"))).toBe(false)

    // The hint followed: a schema that does not exist yet is said, then flow's tables live in their own.
    const missing = await flow(dir.path, ["share", own])
    expect({ code: missing.code, stderr: missing.stderr }).toEqual({
      code: 3,
      stderr: `error: the database at ${own} has no schema to create flow's tables in: its search_path (flow) names none that exists\nhint: create it in that database (CREATE SCHEMA flow), or name one that exists in the URL's options=-csearch_path%3D<schema>\n`,
    })
    await db.sql`CREATE SCHEMA flow`
    const shared = await flow(dir.path, ["share", own])
    expect({ code: shared.code, stderr: shared.stderr }).toEqual({ code: 0, stderr: "" })
    expect((await flow(dir.path, ["done", "setup"])).code).toBe(0)
    expect((await flow(dir.path, ["list"])).stdout).toContain("[done] setup")
    expect((await theirs()).rows).toEqual(before.rows)
    expect(await db.sql`SELECT id, status FROM flow.tasks ORDER BY ord`).toEqual([
      { id: "setup", status: "done" },
      { id: "api", status: "ready_for_agent" },
    ])
  })

  test.concurrent("the URL's options (TLS settings and others) reach the client as written", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    const url = `${db.url}&sslmode=prefer&application_name=flow-test-app`
    expect((await flow(dir.path, ["share", url])).code).toBe(0)
    expect(dir.read("flow.yaml")).toStartWith(`state: ${url}\n`)
    const holder = await flow(dir.path, ["ask", "api", "x"])
    expect(holder.code).toBe(0)
    const [{ n }] = await db.sql`SELECT count(*)::int AS n FROM events WHERE kind = 'question.asked'`
    expect(n).toBe(1)
    // The server saw the name the URL gave (pg_stat_activity keeps a session's application_name while it lives).
    const probe = new SQL(url)
    const [{ app }] = await probe`SELECT current_setting('application_name') AS app`
    await probe.close()
    expect(app).toBe("flow-test-app")
  })

  test.concurrent("a value JSON cannot hold is refused at share, and nothing is written", async () => {
    await using db = await freshDatabase()
    await using dir = await tempRepo({ "tasks.yaml": `tasks:\n  - {id: a, title: A, status: todo, instructions: x, weight: .inf}\n` })
    const r = await flow(dir.path, ["share", db.url])
    expect(r.code).toBe(3)
    expect(r.stderr).toContain("at tasks[0].weight")
    expect(existsSync(dir.file("flow.yaml"))).toBe(false)
    const [{ n }] = await db.sql`SELECT count(*)::int AS n FROM projects`
    expect(n).toBe(0)
  })

  test.concurrent("many flows starting on a new database at once migrate it once", async () => {
    await using db = await freshDatabase()
    const dirs = await Promise.all(Array.from({ length: 6 }, () => tempRepo({ "tasks.yaml": TASKS })))
    try {
      const results = await Promise.all(dirs.map((d, i) => flow(d.path, ["share", db.url, "--project", `p${i}`])))
      expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0, 0, 0])
      expect(await db.sql`SELECT version FROM flow_schema ORDER BY version`).toEqual(Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })))
    } finally {
      await Promise.all(dirs.map((d) => d[Symbol.asyncDispose]()))
    }
  })
})

test.skipIf(!HAVE_POSTGRES)("the test server listens on its socket only", async () => {
  const s = await server()
  const [{ addresses }] = await s.admin`SELECT current_setting('listen_addresses') AS addresses`
  expect(addresses).toBe("")
})
