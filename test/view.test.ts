// `flow view` through the real CLI: its address on the first line, the page and API served by the
// process, and the errors that stop it before it serves anything.
import { expect, test } from "bun:test"
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { flow, flowArgv, tasksYaml, tempRepo } from "./helpers"
import { startView } from "./view-helpers"

const TASKS = tasksYaml([{ id: "setup", title: "Set up", status: "todo", instructions: "x" }])

test.concurrent("view prints its loopback address with its token first, serves the page and the API, and stops on Ctrl-C with exit 0", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  const view = await startView(dir)
  expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48}$/)
  const address = view.url.slice(0, view.url.indexOf("?"))
  const page = await fetch(view.url)
  expect(page.status).toBe(200)
  expect(await page.text()).toContain('<script type="module" src="/app.js"></script>')
  expect(((await (await view.get("/api/tasks")).json()) as { phases: { tasks: { id: string }[] }[] }).phases[0].tasks.map((t) => t.id)).toEqual(["setup"])
  // Any other local process, without the token: nothing.
  for (const path of ["", "api/tasks", "api/tasks/setup", "app.js"]) {
    const res = await fetch(`${address}${path}`)
    expect({ path, status: res.status, setup: (await res.text()).includes("Set up") }).toEqual({ path, status: 401, setup: false })
  }
  // The layout it saved is the person's only, and so is .flow/, which it created (saved before it is served).
  const { layout_key } = (await (await view.get("/api/tasks")).json()) as { layout_key: string }
  expect((await view.get(`/api/layout/${layout_key}`)).status).toBe(200)
  expect([statSync(join(dir.path, ".flow")).mode & 0o777, statSync(join(dir.path, ".flow", "view-layout.json")).mode & 0o777]).toEqual([0o700, 0o600])
  view.proc.kill("SIGINT")
  expect(await view.proc.exited).toBe(0)
  // The token goes to stdout only: stderr may end up in a log.
  expect(await new Response(view.proc.stderr).text()).toBe(`flow view: serving ${dir.path} on ${address} (Ctrl-C to stop)\n`)
})

test.concurrent("the browser is started with a file only the person can read, not with the token in its argv", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  // xdg-open (on Linux) as a script that tells the test what it was given, through a pipe the test waits on.
  const bin = join(dir.path, ".bin")
  mkdirSync(bin)
  expect(Bun.spawnSync(["mkfifo", join(bin, "argv")]).exitCode).toBe(0)
  writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s\\n' "$@" > "${join(bin, "argv")}"\n`, { mode: 0o755 })
  const proc = Bun.spawn([...flowArgv(), "view"], {
    cwd: dir.path,
    env: { ...process.env, NO_COLOR: "1", PATH: `${bin}:${process.env.PATH}` },
    stdout: "pipe",
    stderr: "pipe",
  })
  const argv = readFileSync(join(bin, "argv"), "utf8") // blocks until the script has written
  const file = join(dir.path, ".flow", `view-open-${/view-open-(\d+)\.html/.exec(argv)?.[1]}.html`)
  expect(argv).toBe(`${pathToFileURL(file).href}\n`)
  expect(statSync(file).mode & 0o777).toBe(0o600)
  expect(readFileSync(file, "utf8")).toMatch(/<meta http-equiv="refresh" content="0;url=http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48}">/)
  proc.kill("SIGINT")
  expect(await proc.exited).toBe(0)
  expect(existsSync(file)).toBe(false) // a dead server's token is no use, but nothing is left behind
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
