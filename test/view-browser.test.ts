// `flow view` end to end in real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core):
// the page served by the real CLI (dist/flow when FLOW_BIN is set), a task's instructions and prompt, a
// `flow done` from the shell reaching the page without a reload, usage in the header and panel, a question
// answered from the page, a checkpoint accepted from the page, escaped texts, the token (opened as flow view
// opens it, kept in a cookie, gone from the address bar, refused without), and a foreign Host refused.
// Screenshots go to test-artifacts/. Chromium missing is a failure, not a skip: CI installs it (.ci/run).
import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { hostname } from "node:os"
import { join } from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import { projectAt, runLockTarget } from "../lib/cli/project"
import { LandingWaits } from "../lib/landing/landing-waits"
import { openState } from "../lib/state/state"
import { flow, flowArgv, ROOT, tasksYaml, tempRepo, type TempDir } from "./helpers"
import { launchChromium } from "./fixtures/chromium"

const ARTIFACTS = join(ROOT, "test-artifacts")

const TASKS = tasksYaml([
  { id: "setup", title: "Set up the repo", status: "done", phase: 1, instructions: "Create the repo." },
  {
    id: "api",
    title: "API layer",
    status: "in_progress",
    phase: 1,
    depends_on: ["setup"],
    instructions: "## Routes\n\nServe `GET /links` and **POST** /links.\n\n- validate input\n- return 201\n",
    acceptance_criteria: ["tests pass"],
  },
  {
    id: "ui",
    title: "<img src=x onerror=alert(1)> UI",
    status: "todo",
    phase: 2,
    depends_on: ["api"],
    instructions: "<script>window.pwned = 1</script>\n\n[bad](javascript:alert(1)) [good](https://example.com/a?b=1&c=2)",
  },
  { id: "review", title: "Review the API", status: "todo", phase: 2, depends_on: ["setup"], checkpoint: true, instructions: "Look at it." },
  // Narrow boxes full of badges: the checkpoint flag must stay inside them (it waits on 'later', so no review yet).
  { id: "later", title: "Later", status: "todo", phase: 3, instructions: "x" },
  {
    id: "ship",
    title: "Ship the release to every store",
    status: "todo",
    phase: 3,
    checkpoint: true,
    agent_name: "release-manager-bot",
    instructions: "x",
    subtasks: [
      {
        id: "ship-notes",
        title: "Release notes",
        status: "todo",
        depends_on: ["later"],
        checkpoint: true,
        agent_name: "a-rather-long-agent-name",
        instructions: "x",
        steps: [
          { id: "ship-notes.1", instruction: "a" },
          { id: "ship-notes.2", instruction: "b" },
        ],
      },
    ],
  },
])

// The page's globals, typed just enough for the callbacks that run in the browser (this project has no DOM lib).
type El = { textContent: string | null; classList: { contains: (name: string) => boolean }; dataset: Record<string, string> }
type Win = { document: { querySelector: (s: string) => El | null; querySelectorAll: (s: string) => { length: number } }; pwned?: number; notReloaded?: boolean }

let dir: TempDir
let server: ReturnType<typeof Bun.spawn>
let url: string
let browser: Awaited<ReturnType<typeof launchChromium>>
let context: BrowserContext
let page: Page
/** Script errors and console errors of the page: the test before the last expects none. */
const errors: string[] = []

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true })
  dir = await tempRepo({ "tasks.yaml": TASKS, "plan.md": "# Implementation Plan\n\n## Phase 1: Core\n\n## Phase 2: Front\n" })
  // The page is opened as `flow view` opens it: its "browser" (xdg-open, a script here) gets a file that
  // sends Chromium on to the tokened address; the test learns the file through a pipe.
  const bin = join(dir.path, ".bin")
  mkdirSync(bin)
  expect(Bun.spawnSync(["mkfifo", join(bin, "argv")]).exitCode).toBe(0)
  writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s' "$1" > "${join(bin, "argv")}"\n`, { mode: 0o755 })
  server = Bun.spawn([...flowArgv(), "view"], {
    cwd: dir.path,
    env: { ...process.env, NO_COLOR: "1", PATH: `${bin}:${process.env.PATH}` },
    stdout: "pipe",
    stderr: "pipe",
  })
  url = await firstLine(server.stdout as ReadableStream<Uint8Array>)
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48}$/)
  const opened = readFileSync(join(bin, "argv"), "utf8") // blocks until xdg-open was called
  expect(opened).toStartWith("file://")
  browser = await launchChromium()
  ;({ context, page } = browser)
  page.on("pageerror", (e) => errors.push(e.message))
  page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())))
  // A loaded machine (the whole suite runs at once) can make the first layout slow: generous limits.
  page.setDefaultTimeout(60_000)
  await page.goto(opened)
  await page.waitForSelector('#nodes .node[data-id="api"]', { timeout: 100_000 })
  expect(errors).toEqual([])
})

afterAll(async () => {
  await browser?.close()
  server?.kill("SIGTERM")
  await server?.exited
  await dir?.[Symbol.asyncDispose]()
})

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader()
  let text = ""
  while (!text.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`flow view ended before printing its address: ${text}`)
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return text.split("\n")[0]
}

const nodeClass = (id: string) => page.getAttribute(`#nodes .node[data-id="${id}"]`, "class")

test("a click shows the task's instructions as Markdown and the exact prompt of flow prompt", async () => {
  await page.click('#nodes .node[data-id="api"]')
  await page.waitForSelector("#prompt")
  expect(await page.textContent("#detail-title")).toBe("API layer")
  expect(await page.innerHTML("#detail-instructions")).toBe(
    "<h4>Routes</h4>\n<p>Serve <code>GET /links</code> and <strong>POST</strong> /links.</p>\n<ul><li>validate input</li><li>return 201</li></ul>",
  )
  expect(await page.textContent("#prompt")).toBe((await flow(dir.path, ["prompt", "api"])).stdout)
  // The chain of the selection is lit: its dependency and its dependent.
  expect(await page.$$eval("#nodes .node.on", (els) => els.map((e) => (e as unknown as El).dataset.id).sort())).toEqual(["api", "setup", "ui"])
  await page.screenshot({ path: join(ARTIFACTS, "view-selected.png") })
})

/** A GET from another local process: no cookie, no token. */
function plainGet(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const { port } = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: Number(port), path, headers }, (r) => {
      let body = ""
      r.on("data", (c) => (body += c))
      r.on("end", () => resolve({ status: r.statusCode ?? 0, body }))
    })
    req.on("error", reject)
    req.end()
  })
}

test("the token leaves the address bar; the page goes on working on its cookie; another process gets nothing", async () => {
  const { origin } = new URL(url)
  expect(page.url()).toBe(`${origin}/#api`)
  expect(await page.evaluate(() => (globalThis as unknown as { location: { href: string } }).location.href)).not.toContain("token")
  // The cookie: this port's, unreadable by scripts, never sent cross-site.
  const cookies = await context.cookies(origin)
  expect(cookies.map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, path: c.path }))).toEqual([
    { name: `flow-view-${new URL(url).port}`, httpOnly: true, sameSite: "Strict", path: "/" },
  ])
  expect(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie)).toBe("")
  // A reload from the bare address still loads everything (page, scripts, API, events).
  await page.reload()
  await page.waitForSelector('#nodes .node[data-id="api"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#live")?.textContent === "live")
  // Another local process, the page's address in hand but no token: 401 and not a byte of the project.
  for (const path of ["/", "/app.js", "/api/tasks", "/api/tasks/api", "/api/questions", "/api/events"]) {
    const res = await plainGet(path, { host: new URL(url).host })
    expect({ path, status: res.status, leaks: ["API layer", "Set up", "Routes", "<meta"].some((s) => res.body.includes(s)) }).toEqual({
      path,
      status: 401,
      leaks: false,
    })
  }
})

test("the checkpoint badge stays inside narrow boxes, a parent's and a leaf's", async () => {
  for (const id of ["ship", "ship-notes"]) {
    const fit = await page.$eval(`#nodes .node[data-id="${id}"]`, (g) => {
      const el = g as unknown as { querySelector: (s: string) => { textContent: string; getBoundingClientRect: () => { left: number; right: number } } }
      const box = el.querySelector(":scope > rect").getBoundingClientRect()
      const badge = el.querySelector(".badge")
      const r = badge.getBoundingClientRect()
      return { text: badge.textContent, inside: r.left >= box.left && r.right <= box.right }
    })
    expect({ id, starts: fit.text.startsWith("⚑ checkpoint"), inside: fit.inside }).toEqual({ id, starts: true, inside: true })
  }
})

test("texts from tasks.yaml are shown as text, never run as markup", async () => {
  await page.click('#nodes .node[data-id="ui"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-id")?.textContent === "ui")
  expect(await page.textContent("#detail-title")).toBe("<img src=x onerror=alert(1)> UI")
  expect(await page.innerHTML("#detail-instructions")).toBe(
    "<p>&lt;script&gt;window.pwned = 1&lt;/script&gt;</p>\n" +
      '<p>[bad](javascript:alert(1)) <a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">good</a></p>',
  )
  expect(
    await page.evaluate(() => [
      (globalThis as unknown as Win).document.querySelectorAll("#side img, #graph img, #side script").length,
      (globalThis as unknown as Win).pwned,
    ]),
  ).toEqual([0, undefined])
})

test("flow done from the shell recolours the task without a reload, keeping selection, pan and zoom", async () => {
  await page.click('#nodes .node[data-id="api"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-id")?.textContent === "api")
  await page.mouse.move(400, 400)
  await page.mouse.wheel(0, -300)
  await page.evaluate(() => ((globalThis as unknown as Win).notReloaded = true))
  const transform = await page.getAttribute("#viewport", "transform")
  expect(await nodeClass("api")).toContain("st-in_progress")
  const started = performance.now()
  expect((await flow(dir.path, ["done", "api"])).code).toBe(0)
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector('#nodes .node[data-id="api"]')?.classList.contains("st-done"))
  const lag = performance.now() - started
  expect(await page.evaluate(() => (globalThis as unknown as Win).notReloaded)).toBe(true)
  expect(await page.getAttribute("#viewport", "transform")).toBe(transform)
  expect(await nodeClass("api")).toContain("selected")
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-status")?.textContent === "done")
  expect(await nodeClass("ui")).toContain("st-ready_for_agent") // promoted by the same write
  expect(lag).toBeLessThan(5000) // the CLI's start-up included; bench/view.ts measures the page's share
  await page.screenshot({ path: join(ARTIFACTS, "view-after-done.png") })
})

test("a validator set or changed in tasks.yaml moves its dashed arrow, with no new layout", async () => {
  const arrows = () => page.$$eval("#edges .edge.validates", (els) => els.map((e) => `${(e as unknown as El).dataset.from}>${(e as unknown as El).dataset.to}`))
  expect(await arrows()).toEqual([])
  const setValidator = (id: string) =>
    dir.write(
      "tasks.yaml",
      dir.read("tasks.yaml").replace(/^(\s*)- id: api\n(?:\s*validation_task_id: \S+\n)?/m, `$1- id: api\n$1  validation_task_id: ${id}\n`),
    )
  setValidator("review")
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelectorAll("#edges .edge.validates").length === 1)
  expect(await arrows()).toEqual(["api>review"])
  setValidator("ui")
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector('#edges .edge.validates[data-to="ui"]') !== null)
  expect(await arrows()).toEqual(["api>ui"])
})

test("a question asked by an agent is answered from the page; flow questions is then empty", async () => {
  expect((await flow(dir.path, ["ask", "api", "Which database?"])).stdout).toBe("q-1\n")
  await page.waitForSelector('.card[data-question="q-1"]')
  expect(await page.textContent('.card[data-question="q-1"] .text')).toBe("Which database?")
  await page.fill('.card[data-question="q-1"] textarea', "SQLite")
  await page.screenshot({ path: join(ARTIFACTS, "view-question.png") })
  await page.click('.card[data-question="q-1"] button[data-answer]')
  await page.waitForSelector('.card[data-question="q-1"]', { state: "detached" })
  expect(await flow(dir.path, ["questions"])).toEqual({ code: 0, stdout: "No pending questions.\n", stderr: "" })
  const all = JSON.parse((await flow(dir.path, ["questions", "--all", "--json"])).stdout)
  expect(all.questions[0]).toMatchObject({ id: "q-1", answer: "SQLite" })
})

test("usage an agent reports shows in the header and the open task's fields without a reload", async () => {
  await page.click('#nodes .node[data-id="api"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-id")?.textContent === "api")
  expect(await page.textContent("#usage")).toBe("")
  {
    using db = await openState(projectAt(dir.path))
    await db.events.append({ kind: "run.start", data: {} })
    await db.events.append({ kind: "agent.usage", task_id: "api", agent: "claude-1", data: { inputTokens: 1200, outputTokens: 80, costUsd: 0.0123 } })
  }
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#usage")?.textContent !== "")
  expect(await page.textContent("#usage")).toBe("last run tokens 1,200 in, 80 out, $0.0123; all runs tokens 1,200 in, 80 out, $0.0123")
  await page.waitForSelector("#details table.fields th:text-is('Usage')")
  expect(
    await page.$$eval("#details table.fields tr", (rows) => rows.map((r) => (r as unknown as El).textContent).filter((t) => t?.startsWith("Usage"))),
  ).toEqual(["Usagetokens 1,200 in, 80 out, $0.0123"])
})

test("the agent a run has on the open task shows in its fields, apart from its agent_name, without a reload", async () => {
  await page.click('#nodes .node[data-id="api"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-id")?.textContent === "api")
  const rows = () =>
    page.$$eval("#details table.fields tr", (trs) =>
      trs.map((r) => (r as unknown as El).textContent).filter((t) => t?.startsWith("Agent") || t?.startsWith("Worked by")),
    )
  expect(await rows()).toEqual(["Agentnone (any agent may take it)"])
  {
    using db = await openState(projectAt(dir.path))
    await db.agents.upsert("claude-1", { cli: "claude", current_task: "api" }) // no run alive: stopped
  }
  await page.waitForSelector("#details table.fields th:text-is('Worked by')")
  expect(await rows()).toEqual(["Agentnone (any agent may take it)", "Worked byclaude-1 (stopped with its run; the next 'flow run' resumes it)"])
})

test("a run's merge queue shows in the side panel and as a badge on the task's box, without a reload", async () => {
  expect(await page.textContent("#queue")).toBe("")
  {
    using db = await openState(projectAt(dir.path))
    const q = (taskId: string, state: string, more: Record<string, unknown> = {}) =>
      db.events.append({ kind: "queue", task_id: taskId, data: { taskId, target: "main", state, position: 1, ...more } })
    await q("api", "waiting")
    await q("ui", "waiting")
    await q("ui", "checking", { onTopOf: ["api"] })
    await q("api", "failed", { reason: "merge conflict in a.txt" })
  }
  // The page may refresh between the events (the db changes four times): wait for the last one's state.
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#queue")?.textContent?.includes("merge conflict in a.txt") === true)
  expect(await page.$$eval("#queue h3, #queue .qrow", (els) => els.map((e) => (e as unknown as El).textContent))).toEqual([
    "Merge queue into main (2)",
    "ui ready_for_agent checking on top of api",
    "api done failed merge conflict in a.txt", // api was marked done by an earlier test
  ])
  expect(await nodeClass("ui")).toContain("queue-checking")
  expect(await page.textContent('#nodes .node[data-id="ui"] .badge')).toContain("⇉ queue checking")
  expect(await nodeClass("api")).toContain("queue-failed")
})

test("a landing that waits for the person shows in the open task's panel, and goes when the wait ends, without a reload", async () => {
  await page.click('#nodes .node[data-id="ui"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-id")?.textContent === "ui")
  const project = projectAt(dir.path)
  // A run holds the lock (this process stands for it) and records the wait, as a landing does.
  const lock = `${runLockTarget(project)}.lock`
  writeFileSync(lock, JSON.stringify({ pid: process.pid, host: hostname(), command: "flow run", since: new Date().toISOString(), token: "t" }))
  const reason = "your uncommitted change to a.txt in /repo is in the way; commit or stash it and flow lands by itself"
  try {
    {
      using db = await openState(project)
      await new LandingWaits(db).set("ui", "main", reason)
    }
    await page.waitForSelector("#detail-landing")
    expect(await page.textContent("#detail-landing")).toBe(`⏸ Landing waits: ${reason}`)
    {
      using db = await openState(project)
      await new LandingWaits(db).clear("ui")
    }
    await page.waitForSelector("#detail-landing", { state: "detached" })
  } finally {
    rmSync(lock, { force: true })
  }
})

test("a task's evidence shows in its panel: the diff's files, each check with its output's tail, agent, cost and the queue's wait", async () => {
  await page.click('#nodes .node[data-id="ui"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-id")?.textContent === "ui")
  {
    // As a run records them (lib/run/evidence.ts): the hand-over, then a check that failed and one that passed.
    using db = await openState(projectAt(dir.path))
    const check = (passed: boolean, output: string) =>
      db.events.append({
        kind: "check.result",
        task_id: "ui",
        data: { taskId: "ui", target: "main", command: "npm test", passed, code: passed ? 0 : 1, timedOut: false, seconds: 2.25, output },
      })
    await db.events.append({ kind: "task.start", task_id: "ui", agent: "claude-1", data: { resumed: false } })
    await check(false, "<b>1 failing</b>")
    await db.events.append({
      kind: "task.evidence",
      task_id: "ui",
      agent: "claude-1",
      data: {
        branch: "flow/ui",
        target: "main",
        head: "a".repeat(40),
        diff: {
          files: [
            { path: "src/ui.ts", insertions: 12, deletions: 3 },
            { path: "logo.png", insertions: null, deletions: null },
          ],
          insertions: 12,
          deletions: 3,
        },
        check: "npm test",
        agent: "claude-1",
        attempts: 1,
        fix_rounds: 1,
        usage: { input_tokens: 1200, output_tokens: 300, cost_usd: 0.25 },
        agent_seconds: 42,
      },
    })
    await check(true, "12 passing")
    await db.events.append({ kind: "merge", task_id: "ui", data: { taskId: "ui", commit: "b".repeat(40) } })
    await db.events.append({ kind: "queue.end", task_id: "ui", data: { taskId: "ui", outcome: "landed", seconds: 3.5, checks: 1, thrown: 0 } })
  }
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-evidence")?.textContent?.includes("Queue") === true)
  const rows = await page.$$eval("#detail-evidence tr", (els) => els.map((e) => (e as unknown as El).textContent))
  expect(rows).toEqual([
    `Statelanded into main as ${"b".repeat(12)}, from flow/ui at ${"a".repeat(12)}`,
    "Diff2 files, +12 −3",
    "Agentclaude-1 (attempts 1, fix rounds 1)",
    "Costtokens 1,200 in, 300 out, $0.2500, 42 s of agent turns",
    "Queue3.5 s from done to verdict, 1 check, 0 thrown away",
    "+12 −3src/ui.ts",
    "binarylogo.png",
  ])
  expect(await page.$$eval("#detail-evidence .check", (els) => els.map((e) => (e as unknown as El).textContent))).toEqual([
    "✗ failed (exit 1) after 2.3 s: npm test<b>1 failing</b>",
    "✓ passed after 2.3 s: npm test12 passing",
  ])
  await page.screenshot({ path: join(ARTIFACTS, "view-evidence.png") })
})

test("a checkpoint waiting for review is accepted from the page", async () => {
  expect(await nodeClass("review")).toContain("review")
  await page.click('#inbox .card[data-review="review"] button[data-decision="done"]')
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector('#nodes .node[data-id="review"]')?.classList.contains("st-done"))
  expect(JSON.parse((await flow(dir.path, ["show", "review", "--json"])).stdout).task.status).toBe("done")
  expect(await page.$$("#inbox .card")).toEqual([])
})

test("search finds ids and titles, Enter selects; a status chip fades that status; Fit frames the graph", async () => {
  await page.fill("#search", "api")
  expect(await page.textContent("#matches")).toBe("2 matches")
  expect(await page.$$eval("#nodes .node.match", (els) => els.map((e) => (e as unknown as El).dataset.id))).toEqual(["api", "review"])
  await page.press("#search", "Enter")
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#detail-id")?.textContent === "api")
  await page.fill("#search", "")
  await page.uncheck('#filters input[data-status="done"]')
  expect(await page.$$eval("#nodes .node.filtered", (els) => els.map((e) => (e as unknown as El).dataset.id).sort())).toEqual(["api", "review", "setup"])
  await page.check('#filters input[data-status="done"]')
  const zoomed = await page.getAttribute("#viewport", "transform")
  await page.click("#fit")
  expect(await page.getAttribute("#viewport", "transform")).not.toBe(zoomed)
  await page.screenshot({ path: join(ARTIFACTS, "view-fit.png") })
})

test("the page logged no script or console error through all of the above", () => {
  expect(errors).toEqual([])
})

// After the error check: while the server is down the page logs failed connections.
test("a new flow view on the same port refuses the open page until its own address is opened; then the page reloads itself", async () => {
  const { port } = new URL(url)
  await page.evaluate(() => ((globalThis as unknown as Win).notReloaded = true))
  server.kill("SIGINT")
  await server.exited
  server = Bun.spawn([...flowArgv(), "view", "--no-open", "--port", port], {
    cwd: dir.path,
    env: { ...process.env, NO_COLOR: "1" },
    stdout: "pipe",
    stderr: "pipe",
  })
  const fresh = await firstLine(server.stdout as ReadableStream<Uint8Array>)
  expect(fresh).not.toBe(url) // a new token
  // The old page's cookie holds the dead token: the new server lets nothing in, and the page says why.
  await page.waitForFunction(() => (globalThis as unknown as Win).document.querySelector("#banner")?.textContent?.includes("new token") === true)
  expect(await page.evaluate(() => (globalThis as unknown as Win).notReloaded)).toBe(true)
  // The person opens the new address (another tab): the cookie is renewed, and the old page comes back by itself.
  const tab = await context.newPage()
  await tab.goto(fresh)
  await tab.waitForSelector('#nodes .node[data-id="api"]')
  await tab.close()
  await page.waitForFunction(
    () => (globalThis as unknown as Win).notReloaded === undefined && (globalThis as unknown as Win).document.querySelector("#live")?.textContent === "live",
  )
  url = fresh
  expect((await flow(dir.path, ["ask", "ui", "Dark mode?"])).stdout).toBe("q-2\n")
  await page.waitForSelector('.card[data-question="q-2"]', { timeout: 60_000 })
  await page.fill('.card[data-question="q-2"] textarea', "yes")
  await page.click('.card[data-question="q-2"] button[data-answer]')
  await page.waitForSelector('.card[data-question="q-2"]', { state: "detached" })
  expect((await flow(dir.path, ["questions"])).stdout).toBe("No pending questions.\n")
})

// Last: the refused fetch below logs a console error in the page on purpose.
test("a request naming a foreign Host is refused", async () => {
  const { port } = new URL(url)
  const res = await plainGet(`/api/tasks?token=${new URL(url).searchParams.get("token")}`, { host: "rebind.example" })
  expect(res).toEqual({ status: 403, body: `flow view: refused a request for host 'rebind.example': only http://127.0.0.1:${port} is served\n` })
  // And from the page itself, a write without the token is refused too.
  const status = await page.evaluate(
    async () => (await fetch("/api/tasks/review/review", { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).status,
  )
  expect(status).toBe(403)
})
