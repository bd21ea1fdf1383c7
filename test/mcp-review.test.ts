// The review gate through `flow mcp` (docs/MCP.md, docs/REVIEW.md): the SDK's own client lists, shows and
// decides the review of a real run of the script agent waiting with flow.yaml `review: person`; each tool
// returns what `flow review ... --json` prints, and a decision through a tool moves the run as the command's does.
import { expect, test } from "bun:test"
import { call, callFails, connect } from "./mcp-helpers"
import { background, flow, git, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string, label = "") => `\`\`\`sh${label ? ` ${label}` : ""}\n${lines}\n\`\`\``
const WAITS = "its merge passed and waits for review"

test("an MCP client lists, shows, asks for changes and approves a waiting review; the task lands", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "review: person\n",
    "tasks.yaml": tasksYaml([
      { id: "greet", title: "Greet", status: "todo", instructions: `${sh("echo hi > hello.txt")}\n${sh('echo "$FLOW_FIX_OUTPUT" > review.txt', "fix")}` },
    ]),
  })
  await using server = await connect("stdio", dir.path, { USER: "ana" })
  const { client } = server
  expect(await call(client, "flow_review")).toEqual({ reviews: [] })
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  await run.waitFor(WAITS)

  const listed = await call(client, "flow_review")
  expect(listed).toEqual(JSON.parse((await flow(dir.path, ["review", "--json"])).stdout))
  const first = (listed.reviews as { head: string }[])[0]!.head
  const shown = await call(client, "flow_review_show", { task_id: "greet" })
  expect(shown).toEqual(JSON.parse((await flow(dir.path, ["review", "greet", "--json"])).stdout))
  expect(shown).toMatchObject({ review: { task: "greet", head: first, reviewer: "person" }, evidence: { state: "waiting", head: first } })
  expect(shown.diff).toContain("+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\n")

  // A task that does not wait: the command's message, its hint naming the tool.
  expect(await callFails(client, "flow_review_approve", { task_id: "nope" })).toBe(
    "error: task 'nope' does not wait for review\nhint: waiting: greet (`flow_review` lists them)",
  )
  expect(await callFails(client, "flow_review_changes", { task_id: "greet", comment: " " })).toContain("invalid arguments to flow_review_changes")
  // The author's own server (an agent's `flow mcp` knows its agent) cannot approve its work: a person reviews it.
  {
    await using author = await connect("stdio", dir.path, { USER: "ana", FLOW_AGENT: "script-1" })
    expect(await callFails(author.client, "flow_review_approve", { task_id: "greet" })).toStartWith(
      "error: agent script-1 cannot decide on the review of 'greet': a person reviews it",
    )
  }

  const asked = await call(client, "flow_review_changes", { task_id: "greet", comment: "write a review note" })
  expect(asked).toMatchObject({ task: "greet", head: first, decision: "changes", comment: "write a review note", by: "ana" })
  await run.waitFor((out) => out.split(WAITS).length > 2)
  expect(run.output()).toContain("greet: sent back to its agent (attempt 1 of 2): the reviewer asked for changes: write a review note")
  const second = ((await call(client, "flow_review")).reviews as { head: string }[])[0]!.head
  expect(second).not.toBe(first)
  expect(await call(client, "flow_review_approve", { task_id: "greet" })).toMatchObject({
    task: "greet",
    head: second,
    decision: "approve",
    comment: null,
    by: "ana",
  })

  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  expect((await git(dir.path, ["log", "--merges", "--first-parent", "--format=%s", "main"])).trim()).toBe("Merge flow/greet: greet")
  expect(dir.read("review.txt")).toBe("write a review note\n")
  expect(await call(client, "flow_review")).toEqual({ reviews: [] })
})
