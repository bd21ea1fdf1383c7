// Connections to the shared database (issue 31, case 6; docs/FLEET.md, "Connections"): every agent of every
// machine runs flow commands at once, and the server has max_connections slots in all. A command opens one
// connection; one the server refuses for want of a slot is tried again, backing off; a server that stays full
// beyond FLOW_LOCK_TIMEOUT fails the command with a message naming max_connections and what to do, never
// "check that the server runs". A server of the test's own, started with few slots.
import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { SQL } from "bun"
import { flow, tasksYaml, tempRepo } from "./helpers"
import { HAVE_POSTGRES, ownServer, type Server } from "./postgres"

const N = 50

/** A database on `srv` holding a shared project of N tasks in progress, in a repo: its folder and URL. */
async function sharedProject(srv: Server, name: string) {
  await srv.admin.unsafe(`CREATE DATABASE ${name}`)
  const url = srv.url(name)
  const tasks = Array.from({ length: N }, (_, i) => ({ id: `t${i}`, title: `T${i}`, status: "in_progress", instructions: "x" }))
  const dir = await tempRepo({ "tasks.yaml": tasksYaml([...tasks, { id: "notes", title: "Notes", status: "todo", instructions: "x" }]) })
  const shared = await flow(dir.path, ["share", url])
  expect({ code: shared.code, stderr: shared.stderr }).toEqual({ code: 0, stderr: "" })
  return { dir, url }
}

/** Connections of the test's own that take every slot the server has left: their release. */
async function fillSlots(url: string): Promise<() => Promise<void>> {
  const held: SQL[] = []
  for (;;) {
    const one = new SQL({ url, max: 1 })
    try {
      await one.connect()
      held.push(one)
    } catch (e) {
      await one.close().catch(() => {})
      if ((e as { errno?: string }).errno !== "53300") throw e
      return async () => void (await Promise.all(held.map((h) => h.close())))
    }
  }
}

/** How many times the server has refused a connection for want of a slot (its log says each). */
const refusals = (srv: Server) => readFileSync(join(srv.dir, "server.log"), "utf8").split("too many clients").length - 1

describe.skipIf(!HAVE_POSTGRES)("connections to the shared database", () => {
  test(`${2 * N} agent commands at once against a server of 20 connections: every one succeeds, nothing lost`, async () => {
    await using srv = await ownServer({ maxConnections: 20 })
    const { dir } = await sharedProject(srv, "many")
    await using _dir = dir
    // Every write of the project takes its turn on the project's row: on a busy test machine the last one waits
    // a minute or more, and meanwhile the commands queued behind it hold the slots (FLOW_LOCK_TIMEOUT bounds
    // both waits, as it does in the store's conformance test of concurrent writers).
    const env = { FLOW_LOCK_TIMEOUT: "240" }
    const results = await Promise.all([
      ...Array.from({ length: N }, (_, i) => flow(dir.path, ["done", `t${i}`], { env: { ...env, FLOW_TASK_ID: `t${i}` } })),
      ...Array.from({ length: N }, (_, i) => flow(dir.path, ["note", "notes", `note ${i}`], { env: { ...env, FLOW_TASK_ID: "notes" } })),
    ])
    expect(results.filter((r) => r.code !== 0).map((r) => r.stderr.split("\n")[0])).toEqual([])
    const graph = Bun.YAML.parse((await flow(dir.path, ["export", "-"])).stdout) as { tasks: { id: string; status: string; ai_notes?: string[] }[] }
    expect(graph.tasks.filter((t) => t.id !== "notes" && t.status !== "done").map((t) => t.id)).toEqual([])
    expect(graph.tasks.find((t) => t.id === "notes")?.ai_notes?.toSorted()).toEqual(Array.from({ length: N }, (_, i) => `note ${i}`).toSorted())
    // Each command opened one connection: the server's count of sessions in the database is one per command,
    // share's and export's (a connection refused for want of a slot is no session).
    const [{ sessions }] = await srv.admin`SELECT sessions::int FROM pg_stat_database WHERE datname = ${"many"}`
    expect(sessions).toBe(2 * N + 2)
    await srv.admin.unsafe("DROP DATABASE many WITH (FORCE)")
  }, 300_000)

  test("a command on a full server waits for a slot; one that stays full fails naming max_connections, exit 1", async () => {
    await using srv = await ownServer({ maxConnections: 8 })
    const { dir, url } = await sharedProject(srv, "fulldb")
    await using _dir = dir
    const free = await fillSlots(url)
    // Refused at first, tried again: it goes through once a slot is free.
    const before = refusals(srv)
    const waiting = flow(dir.path, ["note", "notes", "waited for a slot"])
    while (refusals(srv) === before) await Bun.sleep(20)
    await free()
    expect(await waiting).toMatchObject({ code: 0, stderr: "" })

    // Full for longer than FLOW_LOCK_TIMEOUT: a clear failure, and nothing written.
    const freeAgain = await fillSlots(url)
    const failed = await flow(dir.path, ["note", "notes", "never written"], { env: { FLOW_LOCK_TIMEOUT: "2" } })
    await freeAgain()
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain(`error: the database at ${url} has no connection free: the server's max_connections are all in use`)
    expect(failed.stderr).toContain("tried for 2 s")
    expect(failed.stderr).toContain("hint: raise max_connections on the server")
    expect(failed.stderr).not.toContain("check that the server runs")
    const notes = JSON.parse((await flow(dir.path, ["show", "notes", "--json"])).stdout).task.ai_notes
    expect(notes).toEqual(["waited for a slot"])
  }, 120_000)
})
