// `flow view` through the real CLI: its address on the first line, the page and API served by the
// process, and the errors that stop it before it serves anything.
import { expect, test } from "bun:test"
import { flow, tasksYaml, tempRepo } from "./helpers"
import { startView } from "./view-helpers"

const TASKS = tasksYaml([{ id: "setup", title: "Set up", status: "todo", instructions: "x" }])

test.concurrent("view prints its loopback address first, serves the page and the API, and stops on Ctrl-C with exit 0", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  const view = await startView(dir)
  expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
  const page = await fetch(view.url)
  expect(page.status).toBe(200)
  expect(await page.text()).toContain('<script type="module" src="/app.js"></script>')
  expect(((await (await fetch(`${view.url}api/tasks`)).json()) as { phases: { tasks: { id: string }[] }[] }).phases[0].tasks.map((t) => t.id)).toEqual([
    "setup",
  ])
  view.proc.kill("SIGINT")
  expect(await view.proc.exited).toBe(0)
  expect(await new Response(view.proc.stderr).text()).toBe(`flow view: serving ${dir.path} on ${view.url} (Ctrl-C to stop)\n`)
})

test.concurrent("Ctrl-C during a cold layout exits 0 at once, without waiting for ELK", async () => {
  // 2,000 tasks in 10 phases, chained inside each: a cold layout of several seconds; Ctrl-C comes at once.
  const lines = ["tasks:"]
  for (let i = 0; i < 2000; i++) {
    lines.push(`  - id: t${i}`, `    title: Task ${i}`, "    status: todo", `    phase: ${(i % 10) + 1}`, "    instructions: x")
    if (i >= 10) lines.push(`    depends_on: [t${i - 10}]`)
  }
  await using dir = await tempRepo({ "tasks.yaml": `${lines.join("\n")}\n` })
  const view = await startView(dir)
  const start = performance.now()
  view.proc.kill("SIGINT")
  expect(await view.proc.exited).toBe(0)
  // The layout was abandoned, not finished and saved.
  expect(await Bun.file(`${dir.path}/.flow/view-layout.json`).exists()).toBe(false)
  expect(performance.now() - start).toBeLessThan(5000)
})

test.concurrent("a port in use is an error naming it, with exit 1", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  await using first = await startView(dir)
  const port = new URL(first.url).port
  expect(await flow(dir.path, ["view", "--no-open", "--port", port])).toEqual({
    code: 1,
    stdout: "",
    stderr: `error: port ${port} on 127.0.0.1 is in use\nhint: pass another --port, or leave it out to take a free one\n`,
  })
})

test.concurrent("bad arguments are usage errors; a missing or invalid tasks.yaml is exit 3, before anything is served", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  for (const port of ["http", "", "1e3", "0x50", "65536"]) {
    expect(await flow(dir.path, ["view", "--port", port])).toEqual({
      code: 2,
      stdout: "",
      stderr: `error: --port must be a port number from 0 to 65535 (was '${port}')\n`,
    })
  }
  expect(await flow(dir.path, ["view", "graph"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unexpected argument 'graph'\nhint: usage: flow view [--port <n>] [--no-open]\n",
  })
  await using empty = await tempRepo({ "PRD.md": "# x\n" })
  const missing = await flow(empty.path, ["view", "--no-open"])
  expect({ code: missing.code, stdout: missing.stdout }).toEqual({ code: 3, stdout: "" })
  expect(missing.stderr).toStartWith(`error: ${empty.path}/tasks.yaml does not exist\n`)
  await using broken = await tempRepo({ "tasks.yaml": TASKS.replace("status: todo", "status: doing") })
  const invalid = await flow(broken.path, ["view", "--no-open"])
  expect({ code: invalid.code, stdout: invalid.stdout }).toEqual({ code: 3, stdout: "" })
  expect(invalid.stderr).toStartWith("error: tasks.yaml is invalid (1 error, 0 warnings)")
})
