// What each of the run's events tells the person (lib/notify/notices.ts) and the message a batch makes
// (lib/notify/messages.ts), as pure functions: the events the CLI tests do not drive (a budget, a usage
// limit, a landing in the person's way, a stopped run) have their texts and commands checked here.
import { expect, test } from "bun:test"
import { compose, desktopArgv, ntfyHeaders } from "../lib/notify/messages"
import { mask, secretValues } from "../lib/notify/mask"
import { noticesOf } from "../lib/notify/notices"
import type { RunEvent } from "../lib/run/events"

const AT = new Date("2026-11-28T10:00:00.400Z")

test("each event that needs the person says what is needed and the command that answers it; others say nothing", () => {
  const events: RunEvent[] = [
    { type: "checkpoint", taskId: "review" },
    { type: "status", taskId: "api", from: "in_progress", to: "blocked", reason: "its check failed twice" },
    { type: "status", taskId: "api", from: "todo", to: "assigned" },
    { type: "budget", taskId: "api", agent: "claude-1", question: "q-7", unit: "usd", text: "$2.10 of $2" },
    { type: "waiting", taskId: "api", reason: "landing api: your checkout has local changes to app.ts" },
    { type: "waiting", reason: "the disk is full" },
    { type: "parked", taskId: "api", agent: "claude-1", until: "2026-11-28T11:00:00.000Z", reason: "5-hour limit reached" },
    { type: "parked", taskId: "ui", agent: "claude-1", until: "2026-11-28T11:00:00.000Z", reason: "limit", to: "codex-1" },
    { type: "run-end", done: 3, blocked: ["api"], remaining: 2, seconds: 9, interrupted: true, unassignable: [] },
    { type: "run-end", done: 5, blocked: [], remaining: 0, seconds: 9, interrupted: false, unassignable: [] },
    { type: "notice", text: "anything" },
  ]
  const at = "2026-11-28T10:00:00Z"
  expect(events.flatMap((e) => noticesOf(e, AT))).toEqual([
    {
      event: "checkpoint",
      taskId: "review",
      text: `checkpoint review waits for your review (approve it, or block it with 'flow block review "<reason>"')`,
      command: "flow done review",
      at,
    },
    {
      event: "blocked",
      taskId: "api",
      text: "task api is blocked: its check failed twice ('flow show api' says why; reset it to try again)",
      command: "flow reset api",
      at,
    },
    {
      event: "budget",
      taskId: "api",
      question: "q-7",
      text: "task api reached its budget ($2.10 of $2): raise it by an amount, or answer 'block'",
      command: "flow answer q-7 <amount>",
      at,
    },
    {
      event: "landing",
      taskId: "api",
      text: "landing api: your checkout has local changes to app.ts (it lands by itself once that is out of the way)",
      at,
    },
    {
      event: "parked",
      taskId: "api",
      text: "agent claude-1 is parked by its usage limit (5-hour limit reached): task api goes on by itself at 2026-11-28T11:00:00Z",
      at,
    },
    { event: "parked", taskId: "ui", text: "agent claude-1 is parked by its usage limit (limit): task ui moves to codex-1", at },
    { event: "finished", text: "the run stopped: 3 done, 2 not done, blocked: api", command: "flow list", at },
    { event: "finished", text: "the run finished: 5 done, 0 not done", command: undefined, at },
  ])
})

test("a message of several notices counts those that need the person, links the inspector, and says how urgent it is", () => {
  const notices = [
    ...noticesOf({ type: "checkpoint", taskId: "review" }, AT),
    ...noticesOf({ type: "run-end", done: 1, blocked: [], remaining: 1, seconds: 1, interrupted: false, unassignable: [] }, AT),
  ]
  const m = compose("shop", notices, "http://127.0.0.1:4000/")
  expect({ title: m.title, link: m.link }).toEqual({ title: "flow shop: 1 thing needs you", link: "http://127.0.0.1:4000/#review" })
  expect(ntfyHeaders(m)).toEqual({
    Title: "flow shop: 1 thing needs you",
    Priority: "high",
    Tags: "checkpoint,finished",
    Click: "http://127.0.0.1:4000/#review",
  })
  expect(desktopArgv(m, "linux")).toEqual(["notify-send", "--app-name=flow", "--urgency=critical", "--", m.title, m.text])
  const end = compose("shop", notices.slice(1), undefined)
  expect({ title: end.title, link: end.link, priority: ntfyHeaders(end).Priority }).toEqual({
    title: "flow shop: the run finished",
    link: undefined,
    priority: "default",
  })
})

test("masking takes URL credentials, tokens in addresses, keys of known shapes and the environment's secret values", () => {
  const env = { MY_SERVICE_TOKEN: "tok-123456789", HOME: "/root", PGPASSWORD: "s3cret-pw", SHORT_KEY: "abc" }
  expect(secretValues(env)).toEqual(["tok-123456789", "s3cret-pw"])
  const text =
    "db postgres://app:pw@db/x, page http://127.0.0.1:1/?token=abcdef0123&x=1, key sk-proj-AAAAAAAAAAAAAAAAAAAA, gh ghp_BBBBBBBBBBBBBBBBBBBBBB, header Bearer eyJhbGciOi.x, env tok-123456789 and s3cret-pw"
  expect(mask(text, secretValues(env))).toBe(
    "db postgres://***@db/x, page http://127.0.0.1:1/?token=***&x=1, key ***, gh ***, header Bearer ***, env *** and ***",
  )
})
