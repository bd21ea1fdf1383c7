// Budgets and usage limits as pure functions (docs/BUDGETS.md): the CLIs' words for a limit and its reset,
// budget answers, prices and billed tokens, the forecast, the parking of limited agents.
import { expect, test } from "bun:test"
import { adapterFor } from "../lib/agents"
import { Exit, type FlowError } from "../lib/cli/errors"
import { matchLimit, resetTime } from "../lib/agents/limits"
import { checkBudgetAnswer, grantsOf, parseBudgetAnswer, reached, taskLimits, withGrants } from "../lib/budget/budget"
import { budgetReport, budgetText } from "../lib/budget/budget-report"
import { forecast, forecastLines } from "../lib/budget/forecast"
import { Parking } from "../lib/budget/parking"
import { billedTokens, DEFAULT_PRICES, estimateCost, priceOf, priced, priceTable } from "../lib/budget/prices"
import { RunView } from "../lib/tui/tui-state"
import { indexTasks } from "../lib/model/task-index"
import type { Question } from "../lib/model/json-shapes"

// One moment, twice: as an instant, for the forms that carry their zone (epoch, ISO, a delay, a named zone),
// and as a local time, for the clock times a CLI prints in the person's zone; so each expectation holds in
// whatever zone the suite runs (CI runs it in UTC and at UTC+14).
const NOW = new Date("2026-11-25T11:07:30Z")
const LOCAL_NOW = new Date(2026, 10, 25, 11, 7, 30)
/** A local time on a day of November 2026, as the ISO instant it is in this zone. */
const local = (day: number, hour: number, minute: number) => new Date(2026, 10, day, hour, minute).toISOString()

test("a reset time is read from every form the CLIs print: epoch, ISO, a delay, a clock time with or without a date and zone", () => {
  const at = (text: string) => resetTime(text, NOW)?.toISOString()
  const atLocal = (text: string) => resetTime(text, LOCAL_NOW)?.toISOString()
  expect(at("Claude AI usage limit reached|1764072000")).toBe("2025-11-25T12:00:00.000Z")
  expect(at("usage limit reached · resets at 2026-11-25T11:10:05.123Z")).toBe("2026-11-25T11:10:05.123Z")
  expect(at("Last error: 429 Rate limit reached for requests. Please try again in 20s.")).toBe("2026-11-25T11:07:50.000Z")
  expect(at("Usage limit reached. It will reset in 2 hours 5 minutes.")).toBe("2026-11-25T13:12:30.000Z")
  expect(at("Please retry in 2.5s")).toBe("2026-11-25T11:07:32.500Z")
  // A minute's clock time: the end of that minute, so the wait never ends before the limit.
  expect(atLocal("You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase more credits or try again at 12:08 PM.")).toBe(
    local(25, 12, 9),
  )
  expect(atLocal("You’ve hit your usage limit. Try again at Nov 26th, 2026 3:05 PM.")).toBe(local(26, 15, 6))
  expect(at("You've hit your session limit · resets 2pm (Europe/Paris)")).toBe("2026-11-25T13:00:00.000Z")
  // A time of day already past is tomorrow's.
  expect(atLocal("resets at 09:15")).toBe(local(26, 9, 16))
  expect(at("API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit")).toBeUndefined()
  expect(at("retry 3 of 10")).toBeUndefined()
})

test("each adapter's table tells a rate limit, a used-up quota and an overloaded API from its CLI's own words; other errors are none", () => {
  const limit = (cli: string, text: string, now = NOW) => {
    const l = matchLimit(adapterFor(cli).limits ?? [], text, now)
    return l && { kind: l.kind, resetsAt: l.resetsAt?.toISOString() }
  }
  expect(limit("claude", "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit")).toEqual({
    kind: "rate",
    resetsAt: undefined,
  })
  expect(limit("claude", 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')).toEqual({
    kind: "overloaded",
    resetsAt: undefined,
  })
  expect(limit("claude", "You've hit your session limit · resets 2pm", LOCAL_NOW)).toEqual({ kind: "quota", resetsAt: local(25, 14, 0) })
  expect(limit("claude", "Claude AI usage limit reached|1764079200")).toEqual({ kind: "quota", resetsAt: "2025-11-25T14:00:00.000Z" })
  expect(limit("claude", "Invalid API key · Fix external API key")).toBeUndefined()
  expect(
    limit("codex", "You’ve hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase more credits or try again at 12:08 PM.", LOCAL_NOW),
  ).toEqual({ kind: "quota", resetsAt: local(25, 12, 9) })
  expect(limit("codex", "Quota exceeded. Check your plan and billing details.")).toEqual({ kind: "quota", resetsAt: undefined })
  expect(limit("codex", "exceeded retry limit, last status: 429 Too Many Requests")).toEqual({ kind: "rate", resetsAt: undefined })
  expect(limit("codex", "unexpected status 401 Unauthorized: Incorrect API key provided")).toBeUndefined()
  expect(
    limit(
      "gemini",
      "[API Error: You have exhausted your daily quota on this model.] Please wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
    ),
  ).toEqual({ kind: "quota", resetsAt: undefined })
  expect(limit("gemini", "API error 429 RESOURCE_EXHAUSTED: Resource exhausted. Please retry in 30s.")).toEqual({
    kind: "quota",
    resetsAt: "2026-11-25T11:08:00.000Z",
  })
  expect(limit("gemini", "API error 401 UNAUTHENTICATED: invalid x-api-key")).toBeUndefined()
  expect(limit("opencode", "Usage limit reached. It will reset in 2 hours 5 minutes.")).toEqual({ kind: "quota", resetsAt: "2026-11-25T13:12:30.000Z" })
  expect(
    limit(
      "copilot",
      "Failed to get response from the AI model; retried 5 times (total retry wait time: 5.53 seconds) Last error: 429 Rate limit reached for requests. Please try again in 20s.",
    ),
  ).toEqual({ kind: "rate", resetsAt: "2026-11-25T11:07:50.000Z" })
})

test("claude's rate_limit_event of a refused plan is a limit with its reset; an allowed one is nothing", () => {
  const line = (status: string) => JSON.stringify({ type: "rate_limit_event", rate_limit_info: { status, resetsAt: 1764079200, rateLimitType: "five_hour" } })
  expect(adapterFor("claude").parseLine(line("rejected"))).toEqual([
    { type: "limit", kind: "quota", message: "usage limit reached (five_hour)", resetsAt: "2025-11-25T14:00:00.000Z" },
  ])
  expect(adapterFor("claude").parseLine(line("allowed"))).toEqual([])
})

test("a budget answer is an amount of the question's unit or 'block'; anything else is refused with the forms it takes", () => {
  expect(["10", "$10", "10.50", "$ 3", "5 dollars"].map((a) => parseBudgetAnswer("usd", a))).toEqual([
    { grant: 10 },
    { grant: 10 },
    { grant: 10.5 },
    { grant: 3 },
    { grant: 5 },
  ])
  expect(["500000", "500k", "2M", "1,000,000 tokens", "1.5m tokens"].map((a) => parseBudgetAnswer("tokens", a))).toEqual([
    { grant: 500_000 },
    { grant: 500_000 },
    { grant: 2_000_000 },
    { grant: 1_000_000 },
    { grant: 1_500_000 },
  ])
  expect(["30", "30m", "1h30m", "90s", "45 minutes"].map((a) => parseBudgetAnswer("minutes", a))).toEqual([
    { grant: 30 },
    { grant: 30 },
    { grant: 90 },
    { grant: 1.5 },
    { grant: 45 },
  ])
  // An amount of another unit is no amount of this one.
  expect([parseBudgetAnswer("tokens", "$5"), parseBudgetAnswer("usd", "500k"), parseBudgetAnswer("usd", "10m"), parseBudgetAnswer("minutes", "$5")]).toEqual([
    undefined,
    undefined,
    undefined,
    undefined,
  ])
  expect([parseBudgetAnswer("usd", "block"), parseBudgetAnswer("usd", "Block: too expensive")]).toEqual([{ block: undefined }, { block: "too expensive" }])
  expect(parseBudgetAnswer("usd", "lots")).toBeUndefined()
  const q = { id: "q-7", kind: "budget:usd" }
  expect(() => checkBudgetAnswer(q, "lots")).toThrow(`q-7 asks for more budget: answer with the dollars to add (5 or $5) or 'block' (was "lots")`)
  expect(() => checkBudgetAnswer(q, "$5")).not.toThrow()
  expect(() => checkBudgetAnswer({ id: "q-1", kind: null }, "anything at all")).not.toThrow()
})

test("a budget answer of another unit is refused naming both; one that leaves the task over its cap is refused saying what clears it", () => {
  const refusal = (kind: string, text: string, line?: { taskId: string; spent: number; cap: number }) => {
    try {
      checkBudgetAnswer({ id: "q-1", kind }, text, line)
      return undefined
    } catch (e) {
      const err = e as FlowError
      return { message: err.message, hint: err.hint, exit: err.exit }
    }
  }
  expect(refusal("budget:tokens", "$5")).toEqual({
    message: `q-1 asks for more tokens, and "$5" is dollars: answer with the tokens to add (500000, 500k or 2M) or 'block'`,
    hint: "for example: flow answer q-1 500000",
    exit: Exit.usage,
  })
  expect(refusal("budget:tokens", "10m")).toEqual({
    message: `q-1 asks for more tokens, and "10m" is minutes: answer with the tokens to add (500000, 500k or 2M) or 'block'`,
    hint: "an 'm' is minutes; millions of tokens are written 2M (or 2m tokens)",
    exit: Exit.usage,
  })
  expect(refusal("budget:usd", "10m")?.message).toBe(`q-1 asks for more dollars, and "10m" is minutes: answer with the dollars to add (5 or $5) or 'block'`)
  // 2,100,000 tokens used of a 2,000,000 cap: 5 more leaves it over; more than 100,000 clears it.
  const tokens = { taskId: "api", spent: 2_100_000, cap: 2_000_000 }
  expect(refusal("budget:tokens", "5", tokens)).toEqual({
    message: "q-1: 5 tokens more leaves task 'api' over its budget (it used 2,100,000 of 2,000,005 tokens); more than 100,000 tokens clears it",
    hint: "for example: flow answer q-1 200k, or flow answer q-1 block to block the task",
    exit: Exit.usage,
  })
  expect(refusal("budget:tokens", "100k", tokens)?.message).toContain("more than 100,000 tokens clears it")
  expect([refusal("budget:tokens", "100001", tokens), refusal("budget:tokens", "2M", tokens), refusal("budget:tokens", "block", tokens)]).toEqual([
    undefined,
    undefined,
    undefined,
  ])
  expect(refusal("budget:usd", "$0.10", { taskId: "api", spent: 5.2041, cap: 5 })).toEqual({
    message: "q-1: $0.10 more leaves task 'api' over its budget (it spent $5.20 of $5.10); more than $0.21 clears it",
    hint: "for example: flow answer q-1 $1, or flow answer q-1 block to block the task",
    exit: Exit.usage,
  })
  expect(refusal("budget:minutes", "1", { taskId: "api", spent: 47.5, cap: 45 })).toEqual({
    message: "q-1: 1m more leaves task 'api' over its budget (it ran 47m 30s of 46m); more than 2m 30s clears it",
    hint: "for example: flow answer q-1 3m, or flow answer q-1 block to block the task",
    exit: Exit.usage,
  })
  expect(refusal("budget:minutes", "3m", { taskId: "api", spent: 47.5, cap: 45 })).toBeUndefined()
  // An answer flow took before `m` meant minutes still grants what it granted then.
  expect(parseBudgetAnswer("tokens", "2m")).toEqual({ grant: 2_000_000 })
})

test("a task's caps: flow.yaml's under the task's own, raised by what was granted; reached at 1 or the ceiling's times", () => {
  const caps = taskLimits({ task: { usd: 5, minutes: 45 } }, { budget: { usd: 10 } })
  expect(caps).toEqual({ usd: 10, minutes: 45 })
  const asked = (answer: string | null, kind = "budget:usd"): Question => ({
    id: "q",
    task_id: "a",
    agent: null,
    text: "",
    kind,
    asked_at: "",
    answer,
    answered_at: null,
    answered_by: null,
  })
  const grants = grantsOf([asked("$2"), asked("3.5"), asked("block"), asked(null), asked("30m", "budget:minutes")])
  expect(grants).toEqual({ usd: 5.5, minutes: 30 })
  expect(withGrants(caps, { ...grants, tokens: 100 })).toEqual({ usd: 15.5, minutes: 75 })
  expect(reached({ usd: 15.5, tokens: 0, minutes: 0 }, { usd: 15.5 })).toEqual({ unit: "usd", spent: 15.5, cap: 15.5 })
  expect(reached({ usd: 20, tokens: 0, minutes: 0 }, { usd: 15.5 }, 1.5)).toBeUndefined()
  expect(budgetText(budgetReport({ usd: 0.4612, tokens: 2_100_000, minutes: 47.5 }, { usd: 5.01, tokens: 2_000_000, minutes: 45 }))).toBe(
    "$0.46 of $5.01, 2,100,000 of 2,000,000 tokens, 47m 30s of 45m",
  )
})

test("prices: a model's own entry, else the longest it extends; cached input billed at its price, for the cost and for a token cap", () => {
  const table = priceTable({ "my-model": { input: 1, output: 2 } })
  expect(priceOf(table, "claude-sonnet-4-5-20250929")).toEqual(DEFAULT_PRICES["claude-sonnet-4-5"])
  expect(priceOf(table, "anthropic/claude-opus-4-1")).toEqual(DEFAULT_PRICES["claude-opus-4-1"])
  expect(priceOf(table, "gemini-3.1-pro-preview")).toEqual(DEFAULT_PRICES["gemini-3.1-pro"])
  expect(priceOf(table, "gpt-5.1-codex-max")).toEqual(DEFAULT_PRICES["gpt-5.1-codex-max"])
  expect(priceOf(table, "gpt-5.9")).toBeUndefined() // not gpt-5's: a version is no suffix
  expect(priceOf(table, "my-model")).toEqual({ input: 1, output: 2 })
  const u = { type: "usage" as const, inputTokens: 100_000, cacheReadTokens: 90_000, outputTokens: 1_000 }
  const gpt = DEFAULT_PRICES["gpt-5.1-codex"]
  // 10,000 fresh at $1.25, 90,000 cached at $0.125, 1,000 out at $10 per million.
  expect(estimateCost(u, gpt)).toBe(0.03375)
  // A token cap counts the cached reads at a tenth: 10,000 + 9,000 + 1,000.
  expect(billedTokens(u, gpt)).toBe(20_000)
  expect(billedTokens(u, undefined)).toBe(20_000)
  expect(billedTokens({ type: "usage", inputTokens: 1_000, cacheWriteTokens: 1_000, outputTokens: 0 }, DEFAULT_PRICES["claude-sonnet-4-5"])).toBe(1_250)
  expect(priced(u, table, "gpt-5.1-codex")).toEqual({ ...u, billedTokens: 20_000, costUsd: 0.03375, costEstimated: true })
  // A CLI's own dollars are never replaced; a model nobody priced gets no estimate.
  expect(priced({ ...u, costUsd: 0.5 }, table, "gpt-5.1-codex")).toEqual({ ...u, costUsd: 0.5, billedTokens: 20_000 })
  expect(priced(u, table, "unknown-model")).toEqual({ ...u, billedTokens: 20_000 })
})

test("the forecast: the tasks to do, what the finished spent, the rest at their mean less what started ones spent; else counted at the budgets, said to be no bound", () => {
  const index = indexTasks({
    tasks: [
      { id: "a", title: "A", status: "done", instructions: "" },
      { id: "b", title: "B", status: "done", instructions: "" },
      { id: "c", title: "C", status: "in_progress", instructions: "" },
      { id: "d", title: "D", status: "todo", instructions: "" },
      { id: "e", title: "E", status: "blocked", instructions: "" },
      { id: "f", title: "F", status: "todo", checkpoint: true, instructions: "" },
    ],
  })
  const spent = new Map([
    ["a", { usd: 1, tokens: 1000, minutes: 2 }],
    ["b", { usd: 3, tokens: 3000, minutes: 4 }],
    ["c", { usd: 0.5, tokens: 0, minutes: 1 }],
  ])
  const f = forecast(index, spent, { run: { usd: 100 } })
  expect(f).toEqual({
    todo: ["c", "d"],
    finished: [
      { id: "a", spend: { usd: 1, tokens: 1000, minutes: 2 } },
      { id: "b", spend: { usd: 3, tokens: 3000, minutes: 4 } },
    ],
    started: [{ id: "c", spend: { usd: 0.5, tokens: 0, minutes: 1 } }],
    rest: { usd: 3.5, tokens: 4000, minutes: 5 },
    basis: "2 tasks at the mean of the 2 finished ($2.00, 2,000 tokens, 3m each), less what the started ones spent",
  })
  expect(forecastLines(f, { run: { usd: 100 } })).toEqual([
    "2 tasks to do (1 started)",
    "spent by the finished tasks: a $1.00, 1,000 tokens, 2m; b $3.00, 3,000 tokens, 4m (in all $4.00, 4,000 tokens, 6m)",
    "spent by the started tasks: c $0.50, 1m",
    "estimate for the rest: $3.50, 4,000 tokens, 5m (2 tasks at the mean of the 2 finished ($2.00, 2,000 tokens, 3m each), less what the started ones spent)",
    "budget: $100.00 for the run",
  ])
  const fresh = forecast(indexTasks({ tasks: [{ id: "x", title: "X", status: "todo", instructions: "", budget: { usd: 2 } }] }), new Map(), {
    task: { usd: 5 },
  })
  expect(fresh.rest).toEqual({ usd: 2 })
  // Counted at the budgets, and said not to be a bound: a last turn can overshoot a cap.
  expect(fresh.basis).toBe(
    "no task has finished yet, so each task to do is counted at its budget; not a bound: a task's last turn can go past its budget (minutes up to about 1.5 times it, where the agent is stopped; dollars and tokens by what that turn spends before its CLI reports it), and answers to budget questions add more",
  )
  expect(
    forecast(indexTasks({ tasks: [{ id: "x", title: "X", status: "todo", instructions: "", budget: { minutes: 10 } }] }), new Map(), { ceiling: 2 }).basis,
  ).toContain("minutes up to about 2 times it")
})

test("parking: until the reset the CLI named, else a back-off doubling per limit in a row of the task; the task goes back to its agent after, or to a fallback at once", () => {
  const agents = [
    { name: "claude-1", cli: "claude", fallback: "codex-1" },
    { name: "claude-2", cli: "claude" },
    { name: "codex-1", cli: "codex" },
  ]
  const parking = new Parking(agents, () => {})
  const now = NOW.getTime()
  const withReset = parking.park("a", agents[1], { kind: "quota", message: "usage limit reached", resetsAt: new Date(now + 90_000) }, false, now)
  expect(withReset).toEqual({ until: new Date(now + 90_000) })
  expect(parking.isParked("claude-2", now + 89_000)).toBe(true)
  expect(parking.takeFor(agents[1], now + 89_000)).toBeUndefined()
  expect(parking.holds("a")).toBe(true)
  expect(parking.takeFor(agents[1], now + 90_000)).toEqual({
    taskId: "a",
    note: expect.stringContaining("Your last turn on task 'a' was stopped by a usage limit"),
  })
  expect(parking.holds("a")).toBe(false)
  // No reset named: 1 minute, then 2 for a second limit in a row; the fallback of another CLI takes it now.
  expect(parking.park("b", agents[0], { kind: "rate", message: "429" }, false, now)).toEqual({
    until: new Date(now + 60_000),
    backoff: { ms: 60_000, streak: 1 },
    to: "codex-1",
  })
  expect(parking.park("b", agents[0], { kind: "rate", message: "429" }, false, now)).toEqual({
    until: new Date(now + 120_000),
    backoff: { ms: 120_000, streak: 2 },
    to: "codex-1",
  })
  expect(parking.takeFor(agents[1], now + 200_000)).toBeUndefined() // not its task, not its fallback
  expect(parking.takeFor(agents[2], now)).toEqual({
    taskId: "b",
    note: expect.stringContaining("## Work so far\n\nAgent claude-1 (claude) worked on this task"),
  })
  // A task restricted to its agent (agent_name) never moves. Its limits in a row are its own: another task's do not count.
  expect(parking.park("c", agents[0], { kind: "rate", message: "429" }, true, now)).toEqual({
    until: new Date(now + 60_000),
    backoff: { ms: 60_000, streak: 1 },
  })
  expect(parking.takeFor(agents[2], now)).toBeUndefined()
  expect(parking.park("b", agents[0], { kind: "rate", message: "429" }, false, now).backoff).toEqual({ ms: 240_000, streak: 3 })
  // A turn of the task that met no limit starts its back-off afresh.
  parking.ok("b")
  expect(parking.park("b", agents[0], { kind: "rate", message: "429" }, false, now).backoff).toEqual({ ms: 60_000, streak: 1 })
  parking.close()
})

test("parking: the first back-off is flow.yaml's limit_backoff, and doubling stops at 30 minutes", () => {
  const agents = [{ name: "gemini-1", cli: "gemini" }]
  const parking = new Parking(agents, () => {}, 5_000)
  const now = NOW.getTime()
  const waits = Array.from({ length: 12 }, () => parking.park("a", agents[0], { kind: "quota", message: "quota exceeded" }, true, now).backoff?.ms)
  expect(waits).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 1_800_000, 1_800_000, 1_800_000])
  // A first back-off longer than 30 minutes is kept, never doubled.
  const slow = new Parking(agents, () => {}, 3_600_000)
  expect([1, 2].map(() => slow.park("a", agents[0], { kind: "quota", message: "quota exceeded" }, true, now).backoff?.ms)).toEqual([3_600_000, 3_600_000])
  parking.close()
  slow.close()
})

test("the run screen shows a parked agent as 'parked until' its reset, and running again once it takes work", () => {
  const view = new RunView("p", ["claude-1"], 0)
  const until = new Date(LOCAL_NOW.getTime() + 3_600_000)
  view.apply({ type: "parked", taskId: "a", agent: "claude-1", until: until.toISOString(), reason: "usage limit reached" }, LOCAL_NOW)
  const pane = view.panes.get("claude-1")!
  expect(view.stateOf(pane, LOCAL_NOW.getTime())).toBe("parked until 12:07")
  expect(view.log.at(-1)).toBe("11:07:30 a: claude-1's usage limit is reached (usage limit reached): parked until 12:07, then resumed in the same session")
  view.apply({ type: "task-assigned", taskId: "a", agent: "claude-1", cli: "claude" }, LOCAL_NOW)
  expect(view.stateOf(pane, LOCAL_NOW.getTime())).toBe("running")
})
