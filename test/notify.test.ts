// flow.yaml `notify:` through the real CLI (docs/NOTIFY.md): a run driven by the script agent, with a real
// HTTP receiver on loopback standing in for each service, a command destination, and `flow view` for the
// inspector's link. Checked: each service's payload as it documents it, coalescing, retries, a receiver that
// never answers, secrets, and flow.yaml's errors.
import { expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { Notifier } from "../lib/notify/notifier"
import { background, flow, tasksYaml, tempRepo } from "./helpers"
import { receiver, type Received } from "./notify-receiver"

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
const RUN = ["run", "--agents", "1", "--cli", "script", "--headless"]

function notifyYaml(lines: string[]): string {
  return `notify:\n${lines.map((l) => `  ${l}`).join("\n")}\n`
}

function scratch(): { path: string; [Symbol.dispose]: () => void } {
  const path = mkdtempSync(join(tmpdir(), "flow-notify-"))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

const json = (r: Received) => JSON.parse(r.body)

test.concurrent("a blocked task reaches a webhook, Slack, ntfy and a command, each in the form it documents", async () => {
  await using hooks = receiver()
  using out = scratch()
  const stdin = join(out.path, "stdin.json")
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "```sh\nexit 3\n```" }]),
    "flow.yaml": `retries: 0\n${notifyYaml([
      `- { webhook: "${hooks.url("/hook")}", on: [blocked] }`,
      `- { slack: "${hooks.url("/slack")}", on: [blocked] }`,
      `- { ntfy: "${hooks.url("/topic")}", on: [blocked] }`,
      `- { command: [tee, ${stdin}], on: [blocked] }`,
    ])}`,
  })
  const r = await flow(dir.path, RUN)
  expect(r.code).toBe(4)
  const project = basename(dir.path)
  const text = "task api is blocked ('flow show api' says why; reset it to try again)"
  const byPath = Object.fromEntries(hooks.requests.map((q) => [q.path, q]))
  expect(hooks.requests.map((q) => q.path).sort()).toEqual(["/hook", "/slack", "/topic"])
  expect(byPath["/hook"].headers["content-type"]).toBe("application/json")
  expect(json(byPath["/hook"])).toEqual({
    source: "flow",
    project,
    title: `flow ${project}: api is blocked`,
    text: `${text}\n  → flow reset api`,
    link: null,
    events: [{ event: "blocked", task: "api", question: null, text, command: "flow reset api", at: ISO }],
  })
  // Slack's incoming webhook: `text` in mrkdwn, its own escapes (&amp; &lt; &gt;), the command as code.
  expect(byPath["/slack"].headers["content-type"]).toBe("application/json")
  expect(json(byPath["/slack"])).toEqual({ text: `*flow ${project}: api is blocked*\n• ${text}\n    \`flow reset api\`` })
  // ntfy: the message is the body; title, priority and tags are its headers (no Click: no view serves the project).
  expect(byPath["/topic"].body).toBe(`${text}\n  → flow reset api`)
  const { title, priority, tags, click } = byPath["/topic"].headers as Record<string, string | undefined>
  expect({ title, priority, tags, click }).toEqual({ title: `flow ${project}: api is blocked`, priority: "high", tags: "blocked", click: undefined })
  // The command reads the webhook's JSON on its stdin.
  expect(readFileSync(stdin, "utf8")).toBe(byPath["/hook"].body)
})

test.concurrent("a question carries the command that answers it and the inspector's link, and no secret reaches any message", async () => {
  await using hooks = receiver()
  using out = scratch()
  const stdin = join(out.path, "stdin.json")
  const password = "hunter2-Pw-7731"
  const key = "sk-ant-api03-Zq8vN2kLmP4xR7tY1wE5uI9oA3sD6fG0hJ"
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      {
        id: "ask",
        title: "Ask",
        status: "todo",
        instructions: `\`\`\`sh\nflow ask --wait "$FLOW_TASK_ID" "Which database? The old one is postgres://app:${password}@db.example/app, the page $SEEDED_VIEW, the key $ANTHROPIC_API_KEY"\n\`\`\``,
      },
    ]),
    "flow.yaml": notifyYaml([
      `- webhook: "${hooks.url("/hook")}"`,
      `- slack: "${hooks.url("/slack")}"`,
      `- ntfy: "${hooks.url("/topic")}"`,
      `- command: [tee, -a, ${stdin}]`,
    ]),
  })
  const view = background(dir.path, ["view", "--no-open"])
  try {
    await view.waitFor("\n")
    const url = view.output().split("\n")[0]
    const token = new URL(url).searchParams.get("token") as string
    const address = url.replace(/\?token=.*$/, "")
    expect(token.length).toBeGreaterThan(20)
    const run = background(dir.path, RUN, { SEEDED_VIEW: url, ANTHROPIC_API_KEY: key })
    await hooks.until((rs) => rs.some((q) => q.path === "/hook" && json(q).events.some((e: { event: string }) => e.event === "question")))
    expect((await flow(dir.path, ["answer", "q-1", "the", "new", "one"])).code).toBe(0)
    const done = await run.done()
    expect(done.code).toBe(0)
    const asked = hooks.requests
      .filter((q) => q.path === "/hook")
      .flatMap((q) => json(q).events)
      .find((e: { event: string }) => e.event === "question")
    expect(asked).toEqual({
      event: "question",
      task: "ask",
      question: "q-1",
      text: `task ask asks: Which database? The old one is postgres://***@db.example/app, the page ${address}?token=***, the key ***`,
      command: 'flow answer q-1 "<answer>"',
      at: ISO,
    })
    const first = hooks.requests.find((q) => q.path === "/topic") as Received
    expect(first.headers.click).toBe(`${address}#ask`)
    expect(json(hooks.requests.find((q) => q.path === "/hook") as Received).link).toBe(`${address}#ask`)
    // Every message, headers and bodies, and what the command read: none holds the token, the password or the key.
    const everything = [...hooks.requests.map((q) => JSON.stringify(q.headers) + q.body), readFileSync(stdin, "utf8")].join("\n")
    expect(hooks.requests.length).toBeGreaterThanOrEqual(3)
    for (const secret of [token, password, key]) expect(everything.includes(secret)).toBe(false)
    // The view's record of its address goes with it: a later run's messages carry no link.
    expect(JSON.parse(dir.read(".flow/view.json"))).toMatchObject({ address, pid: view.proc.pid })
    view.proc.kill("SIGINT")
    await view.proc.exited
    expect(existsSync(dir.file(".flow/view.json"))).toBe(false)
  } finally {
    view.proc.kill("SIGINT")
    await view.proc.exited
  }
})

test.concurrent("a receiver that fails 3 times and then accepts gets the message once; the failure is said once", async () => {
  await using hooks = receiver({ fail: 3 })
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "review", title: "Review", status: "todo", checkpoint: true, instructions: "Look at it." }]),
    "flow.yaml": notifyYaml([`- { webhook: "${hooks.url("/hook")}", on: [checkpoint] }`]),
  })
  const run = background(dir.path, RUN)
  await hooks.until(() => hooks.accepted().length === 1)
  expect((await flow(dir.path, ["done", "review"])).code).toBe(0)
  const r = await run.done()
  expect(r.code).toBe(0)
  expect(hooks.requests.map((q) => q.status)).toEqual([500, 500, 500, 200])
  expect(new Set(hooks.requests.map((q) => q.body)).size).toBe(1)
  expect(json(hooks.accepted()[0]).events.map((e: { event: string; command: string }) => [e.event, e.command])).toEqual([["checkpoint", "flow done review"]])
  const port = new URL(hooks.url("/")).port
  expect(r.stdout.split("\n").filter((l) => l.includes("notify:"))).toEqual([
    expect.stringMatching(
      new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d run: notify: webhook on 127\\.0\\.0\\.1:${port} failed \\(HTTP 500\\); flow tries again with back-off and says no more of it in this run$`,
      ),
    ),
  ])
})

test.concurrent("a receiver that never answers leaves the run unaffected, and its failure is said once", async () => {
  await using hooks = receiver({ never: true })
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "review", title: "Review", status: "todo", checkpoint: true, instructions: "Look at it." },
      { id: "build", title: "Build", status: "todo", instructions: "```sh\necho built > built.txt\n```" },
    ]),
    "flow.yaml": notifyYaml([`- webhook: "${hooks.url("/hook")}"`]),
  })
  const run = background(dir.path, RUN)
  // Its first try timed out and was said; a second try went out after the back-off.
  await run.waitFor("failed (no answer within 5 s)")
  await hooks.until((rs) => rs.length >= 2)
  expect((await flow(dir.path, ["done", "review"])).code).toBe(0)
  const r = await run.done()
  expect(r.code).toBe(0)
  expect(r.stdout).toContain("build: in_progress → done")
  expect(r.stdout).toMatch(/run: finished after [\d.]+ s: 2 done/)
  expect(r.stdout.split("\n").filter((l) => l.includes("notify:"))).toHaveLength(1)
})

test.concurrent("20 events within 2 s reach a destination as at most 2 messages, every event in them once", async () => {
  await using hooks = receiver()
  const said: string[] = []
  const notifier = new Notifier({
    project: "p",
    destinations: [{ webhook: hooks.url("/hook") }],
    inspector: () => undefined,
    questions: async () => undefined,
    secrets: [],
    say: (line) => said.push(line),
    platform: "linux",
  })
  const ids = Array.from({ length: 20 }, (_, i) => `t-${i + 1}`)
  for (const id of ids) {
    notifier.hear({ type: "status", taskId: id, from: "in_progress", to: "blocked" }, new Date())
    await Bun.sleep(100) // the events' pace, not a wait for a result
  }
  const events = () => hooks.requests.flatMap((q) => json(q).events.map((e: { task: string }) => e.task))
  await hooks.until(() => events().length === 20)
  await notifier.close()
  expect(hooks.requests.length).toBeLessThanOrEqual(2)
  expect(events()).toEqual(ids)
  expect(said).toEqual([])
})

test.concurrent("a wrong notify entry is an error at its line and column, with what it takes", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "x" }]),
    "flow.yaml": notifyYaml([
      "- webhook: ftp://example.com/hook",
      "- desktop: true",
      "  onn: [question]",
      "- slack: https://hooks.slack.com/services/x",
      "  on: [questoin]",
      "- email: me@example.com",
    ]),
  })
  const r = await flow(dir.path, RUN)
  expect(r.code).toBe(3)
  expect(r.stderr.replaceAll(dir.path, "<dir>")).toBe(`error: flow.yaml is invalid:
ERROR: notify[0].webhook must be an http:// or https:// URL (was "ftp://example.com/hook")
  at <dir>/flow.yaml:2:14
  2 |   - webhook: ftp://example.com/hook
    |              ^
ERROR: unknown field 'notify[1].onn'
  at <dir>/flow.yaml:4:5
  4 |     onn: [question]
    |     ^
  hint: did you mean 'on'?
ERROR: notify[2].on[0] must be "blocked", "budget", "checkpoint", "finished", "landing", "parked" or "question" (was "questoin")
  at <dir>/flow.yaml:6:10
  6 |     on: [questoin]
    |          ^
ERROR: notify[3] must be a destination: { webhook: <url> }, { slack: <url> }, { ntfy: <topic url> }, { desktop: true } or { command: [argv] } (was {"email":"me@example.com"})
  at <dir>/flow.yaml:7:5
  7 |   - email: me@example.com
    |     ^
hint: 'flow help config' prints every field of flow.yaml with its default
`)
})
