// The review gate (docs/REVIEW.md, "The review gate"): with flow.yaml `review: person`, a task's merge that
// passed waits for the person's `flow review <id> approve` before it lands; `changes "<comment>"` sends the
// comment to its agent as a fix round, and the new work waits for review again. Real runs of the script agent.
import { expect, test } from "bun:test"
import { background, flow, git, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string, label = "") => `\`\`\`sh${label ? ` ${label}` : ""}\n${lines}\n\`\`\``
const WAITS = "its merge passed and waits for review"
const merges = async (repo: string) => (await git(repo, ["log", "--merges", "--first-parent", "--format=%s", "main"])).trim()

test.concurrent("approved from the CLI: the merge waits for review, then lands", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "review: person\n",
    "tasks.yaml": tasksYaml([{ id: "greet", title: "Greet", status: "todo", instructions: sh("echo hi > hello.txt") }]),
  })
  expect(await flow(dir.path, ["review"])).toEqual({ code: 0, stdout: "Nothing waits for review.\n", stderr: "" })
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  await run.waitFor(WAITS)
  const { reviews } = JSON.parse((await flow(dir.path, ["review", "--json"])).stdout)
  expect(reviews).toMatchObject([{ task: "greet", title: "Greet", branch: "flow/greet", target: "main", reviewer: "person" }])
  expect(await merges(dir.path)).toBe("")
  const shown = await flow(dir.path, ["review", "greet"])
  expect(shown.stdout).toStartWith("Review greet: Greet\nEvidence: waiting, from flow/greet")
  expect(shown.stdout).toContain("+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\n")
  expect((await flow(dir.path, ["review", "nope", "approve"])).stderr).toContain("task 'nope' does not wait for review")
  const approved = await flow(dir.path, ["review", "greet", "approve", "--json"])
  expect(JSON.parse(approved.stdout)).toMatchObject({ task: "greet", head: reviews[0].head, decision: "approve", comment: null })
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
  expect(dir.read("hello.txt")).toBe("hi\n")
  expect((await flow(dir.path, ["review"])).stdout).toBe("Nothing waits for review.\n")
})

test.concurrent("changes asked: the comment reaches the agent as a fix round, and its new work lands once approved", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "review: { tasks: { greet: person } }\n",
    "tasks.yaml": tasksYaml([
      { id: "greet", title: "Greet", status: "todo", instructions: `${sh("echo hi > hello.txt")}\n${sh('echo "$FLOW_FIX_OUTPUT" > review.txt', "fix")}` },
    ]),
  })
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  await run.waitFor(WAITS)
  const first = JSON.parse((await flow(dir.path, ["review", "--json"])).stdout).reviews[0].head
  const asked = await flow(dir.path, ["review", "greet", "changes", "write", "a", "review", "note"])
  expect(asked).toEqual({
    code: 0,
    stdout: "Asked for changes to greet: its agent gets the comment as a fix round, and its new work comes back here.\n",
    stderr: "",
  })
  // The new work waits for review again: said a second time.
  await run.waitFor((out) => out.split(WAITS).length > 2)
  expect(run.output()).toContain("greet: sent back to its agent (attempt 1 of 2): the reviewer asked for changes: write a review note")
  const second = JSON.parse((await flow(dir.path, ["review", "--json"])).stdout).reviews[0].head
  expect(second).not.toBe(first)
  expect(await merges(dir.path)).toBe("")
  expect((await flow(dir.path, ["review", "greet", "approve"])).code).toBe(0)
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
  expect(dir.read("review.txt")).toBe("write a review note\n")
  const e = JSON.parse((await flow(dir.path, ["show", "greet", "--json"])).stdout).evidence
  expect([e.state, e.head, e.fix_rounds]).toEqual(["landed", second, 1])
})

test.concurrent("the queue goes on checking the candidates behind a review that waits; they land after it", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "review: { tasks: { a: person } }\nverify: { command: 'test -f a.txt && echo checked', timeout: 1m }\n",
    "tasks.yaml": tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") },
      // b finishes only once a waits for review, so it lines up behind a.
      { id: "b", title: "B", status: "todo", instructions: sh(`until flow review --json | grep -q '"task": "a"'; do sleep 0.05; done\necho b > b.txt`) },
    ]),
  })
  const run = background(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
  await run.waitFor("b: queue main #2 passed")
  expect(await merges(dir.path)).toBe("")
  expect(JSON.parse((await flow(dir.path, ["review", "--json"])).stdout).reviews.map((r: { task: string }) => r.task)).toEqual(["a"])
  expect((await flow(dir.path, ["review", "a", "approve"])).code).toBe(0)
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  expect((await merges(dir.path)).split("\n")).toEqual(["Merge flow/b: b", "Merge flow/a: a"])
})
