// A review waiting is a "needs you" item (docs/REVIEW.md, "Where a review waiting shows"): a real run of the
// script agent with flow.yaml `review: person` tells a webhook (a real HTTP receiver on loopback) with the
// command that answers, and `flow dashboard` lists it among what needs the person, with that command.
import { expect, test } from "bun:test"
import { basename } from "node:path"
import { background, flow, tasksYaml, tempRepo } from "./helpers"
import { receiver } from "./notify-receiver"

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)

test("a review waiting reaches the webhook with 'flow review <id> approve', and the dashboard lists it under Needs you", async () => {
  await using hooks = receiver()
  await using dir = await tempRepo({
    "flow.yaml": `review: person\nnotify:\n  - { webhook: "${hooks.url("/hook")}", on: [landing] }\n`,
    "tasks.yaml": tasksYaml([{ id: "greet", title: "Greet", status: "todo", instructions: "```sh\necho hi > hello.txt\n```" }]),
  })
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  await hooks.until((r) => r.length > 0)
  const text =
    "task greet waits for your review: its merge passed its check ('flow review greet' shows its evidence and diff; approve it, or ask for changes with 'flow review greet changes \"<comment>\"')"
  const project = basename(dir.path)
  expect(JSON.parse(hooks.requests[0]!.body)).toEqual({
    source: "flow",
    project,
    title: `flow ${project}: greet waits for your review`,
    text: `${text}\n  → flow review greet approve`,
    link: null,
    events: [{ event: "landing", task: "greet", question: null, text, command: "flow review greet approve", at: ISO }],
  })

  const report = JSON.parse((await flow(dir.path, ["dashboard", "--json"])).stdout)
  expect(report.reviews).toEqual(JSON.parse((await flow(dir.path, ["review", "--json"])).stdout).reviews)
  expect(report.reviews).toMatchObject([{ task: "greet", title: "Greet", reviewer: "person" }])
  const screen = (await flow(dir.path, ["dashboard"], { env: { COLUMNS: "200", NO_COLOR: "1" } })).stdout
  const needs = screen.slice(screen.indexOf("Needs you:"))
  expect(needs).toContain("flow review greet")
  expect(needs).toContain("review waits: Greet: its merge passed its check; 'flow review greet approve' lands it")
  // Told once, as the review: not a second time as a landing's wait.
  expect(needs).not.toContain("landing waits")

  expect((await flow(dir.path, ["review", "greet", "approve"])).code).toBe(0)
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  expect(hooks.requests).toHaveLength(1)
})
