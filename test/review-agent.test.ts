// Agent reviewers (docs/REVIEW.md, "Agent reviewers"): flow.yaml `review` names an agent of `agents`; when the
// task's merge passed, that agent gets a fresh session with the reviewer's prompt and decides with `flow review`.
// Real runs of the script agent, whose reviewer runs the task's ```sh review blocks (the real CLIs, Claude Code
// reviewed by Codex against the scripted model server: test/review-agent-e2e.test.ts).
import { expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { background, flow, git, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string, label = "") => `\`\`\`sh${label ? ` ${label}` : ""}\n${lines}\n\`\`\``
const merges = async (repo: string) => (await git(repo, ["log", "--merges", "--first-parent", "--format=%s", "main"])).trim()
const AGENTS = "agents:\n  - { name: author, cli: script }\n  - { name: rev, cli: script }\n"

test.concurrent("flow.yaml: a reviewer that is no agent of flow.yaml is an error at its position", async () => {
  await using dir = await tempRepo({
    "flow.yaml": `${AGENTS}review:\n  default: person\n  tasks: { greet: revv }\n`,
    "tasks.yaml": tasksYaml([{ id: "greet", title: "Greet", status: "todo" }]),
  })
  const r = await flow(dir.path, ["run", "--headless"])
  expect(r.code).toBe(3)
  expect(r.stderr).toContain("review.tasks.greet: 'revv' is not an agent of flow.yaml (agents: author, rev)")
  expect(r.stderr).toContain(`${dir.file("flow.yaml")}:6:19`)
  expect(r.stderr).toContain("did you mean 'rev'?")
})

test.concurrent("the reviewer is never the author: a task pinned to its reviewer, or no author left, is refused", async () => {
  await using dir = await tempRepo({
    "flow.yaml": `${AGENTS}review: rev\n`,
    "tasks.yaml": tasksYaml([{ id: "greet", title: "Greet", status: "todo", instructions: sh("echo hi > hello.txt"), agent_name: "rev" }]),
  })
  const pinned = await flow(dir.path, ["run", "--headless"])
  expect([pinned.code, pinned.stderr.split("\n")[0]]).toEqual([
    3,
    "error: task 'greet' would be reviewed by its own author: its agent_name is 'rev', and flow.yaml's review names 'rev' for it",
  ])
  dir.write("flow.yaml", "agents:\n  - { name: rev, cli: script }\nreview: rev\n")
  dir.write("tasks.yaml", tasksYaml([{ id: "greet", title: "Greet", status: "todo", instructions: sh("echo hi > hello.txt") }]))
  const none = await flow(dir.path, ["run", "--headless"])
  expect(none.code).toBe(3)
  expect(none.stderr).toContain("every agent of this run reviews (flow.yaml review: rev): none is left to work on the tasks")
  // A reviewer in a sandbox is refused, not run outside it: flow does not build one around a reviewer yet.
  dir.write("flow.yaml", `${AGENTS}sandbox: true\nreview: rev\n`)
  const boxed = await flow(dir.path, ["run", "--headless"])
  expect([boxed.code, boxed.stderr.split("\n")[0]]).toEqual([
    3,
    "error: agent rev reviews (flow.yaml review) and runs in a sandbox, which flow does not give a reviewer yet",
  ])
})

test.concurrent("the agent reviewer asks for changes once, the author's fix round follows, then it approves and the task lands", async () => {
  await using dir = await tempRepo({
    "flow.yaml": `${AGENTS}review: { tasks: { greet: rev } }\nnotify: [{ command: [tee, -a, .flow/notified], on: [landing] }]\n`,
    "tasks.yaml": tasksYaml([
      {
        id: "greet",
        title: "Greet",
        status: "todo",
        instructions: [
          sh("echo hi > hello.txt"),
          sh('echo "$FLOW_FIX_OUTPUT" > review.txt', "fix"),
          // The reviewer's first look asks for changes, its second approves.
          sh(
            `m="$FLOW_PROJECT/.flow/looked"\nflow review > "$FLOW_PROJECT/.flow/listed"\nif [ -f "$m" ]; then flow review "$FLOW_REVIEW_TASK" approve; else touch "$m"; flow review "$FLOW_REVIEW_TASK" changes "write a review note"; fi`,
            "review",
          ),
        ].join("\n"),
      },
    ]),
  })
  const run = background(dir.path, ["run", "--headless"])
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  const out = run.output()
  expect(out).toContain("started by author on flow/greet")
  expect(out).toContain("its merge passed and waits for review by agent rev")
  expect(out).toContain("greet: review by agent rev (script) of ")
  expect(out).toContain("greet: agent rev asked for changes: write a review note")
  expect(out).toContain("greet: sent back to its agent (attempt 1 of 2): the reviewer asked for changes: write a review note")
  expect(out).toContain("greet: agent rev approved it")
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
  expect(dir.read("review.txt")).toBe("write a review note\n")
  // An agent's review needs nobody: no notification told the person of it.
  expect(existsSync(dir.file(".flow/notified"))).toBe(false)
  // What waits for the agent's review is listed as its: the agent decides through that list.
  expect(dir.read(".flow/listed")).toContain("its check passed; agent rev reviews it)\n")
  const e = JSON.parse((await flow(dir.path, ["show", "greet", "--json"])).stdout).evidence
  expect([e.state, e.agent, e.fix_rounds]).toEqual(["landed", "author", 1])
})

test.concurrent("a reviewer that exits without deciding leaves the review to a person; nothing lands unreviewed", async () => {
  await using dir = await tempRepo({
    "flow.yaml": `${AGENTS}review: rev\nnotify: [{ command: [tee, -a, .flow/notified], on: [landing] }]\n`,
    "tasks.yaml": tasksYaml([{ id: "greet", title: "Greet", status: "todo", instructions: `${sh("echo hi > hello.txt")}\n${sh("echo looked", "review")}` }]),
  })
  const run = background(dir.path, ["run", "--headless"])
  await run.waitFor("without deciding on its review")
  expect(run.output()).toContain("greet: agent rev exited (code 0) without deciding on its review: it waits for a person now ('flow review greet' shows it)")
  // Said again as the person's wait: what notifications and the dashboard tell.
  await run.waitFor("landing greet: its merge passed and waits for review: 'flow review greet' shows it")
  const { reviews } = JSON.parse((await flow(dir.path, ["review", "--json"])).stdout)
  expect(reviews).toMatchObject([{ task: "greet", reviewer: "person" }])
  expect((await flow(dir.path, ["dashboard"])).stdout).toContain("review waits: Greet")
  expect(await merges(dir.path)).toBe("")
  // The agent cannot decide a review that is the person's now.
  const agent = await flow(dir.path, ["review", "greet", "approve"], { env: { FLOW_AGENT: "rev" } })
  expect([agent.code, agent.stderr.split("\n")[0]]).toEqual([3, "error: agent rev cannot decide on the review of 'greet': a person reviews it"])
  const approved = JSON.parse((await flow(dir.path, ["review", "greet", "approve", "--json"])).stdout)
  expect(approved.decision).toBe("approve")
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
  // The person was told once, when the review became theirs.
  const told = dir.read(".flow/notified").replace(/\s/g, "")
  expect([told.split('"event":"landing"').length - 1, told.includes('"command":"flowreviewgreetapprove"')]).toEqual([1, true])
})

test.concurrent("task_timeout stops a reviewer as it stops an author: the review is then the person's", async () => {
  await using dir = await tempRepo({
    "flow.yaml": `${AGENTS}review: rev\ntask_timeout: 2s\n`,
    "tasks.yaml": tasksYaml([{ id: "greet", title: "Greet", status: "todo", instructions: `${sh("echo hi > hello.txt")}\n${sh("sleep 60", "review")}` }]),
  })
  const run = background(dir.path, ["run", "--headless"])
  await run.waitFor("landing greet: its merge passed and waits for review: 'flow review greet' shows it")
  expect(run.output()).toContain("greet: task_timeout: reviewer rev ran for 2s: stopping it")
  expect(run.output()).toMatch(/greet: agent rev exited \(code \d+\) without deciding on its review: it waits for a person now/)
  expect((await flow(dir.path, ["review", "greet", "approve"])).code).toBe(0)
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 0, stderr: "" })
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
})
