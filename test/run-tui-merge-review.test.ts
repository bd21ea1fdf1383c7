// The run screen's keys for a merge waiting for the person's review (flow.yaml `review: person`) in a real
// terminal (tmux, 120x40): `l` approves it and it lands, `r` asks for changes with a comment typed on the
// screen, which reaches the task's agent as a fix round (docs/REVIEW.md, "The run screen").
import { expect, test } from "bun:test"
import { flow, git, tasksYaml, tempRepo } from "./helpers"
import { terminal } from "./terminal"

const sh = (lines: string, label = "") => `\`\`\`sh${label ? ` ${label}` : ""}\n${lines}\n\`\`\``
const SIZE = { columns: 120, rows: 40 }
const SCREEN_MS = 60_000
const WAITING = "merge waiting for your review: greet (l lands greet, r asks for changes with a comment)"
const TASKS = tasksYaml([
  { id: "greet", title: "Greet", status: "todo", instructions: `${sh("echo hi > hello.txt")}\n${sh('echo "$FLOW_FIX_OUTPUT" > review.txt', "fix")}` },
])
const merges = async (repo: string) => (await git(repo, ["log", "--merges", "--first-parent", "--format=%s", "main"])).trim()
const FINISHED = /run: finished after [\d.]+ s: 1 done, 0 not done$/

test.concurrent("? lists l and r; l approves the merge waiting for review: it lands and the run finishes", async () => {
  await using dir = await tempRepo({ "flow.yaml": "review: person\n", "tasks.yaml": TASKS })
  using t = await terminal(dir.path, ["run", "--agents", "1", "--cli", "script"], {}, SIZE)
  const screen = await t.waitFor(WAITING, SCREEN_MS)
  expect(screen).toContain("q stop · l land · r changes · Tab/1-9 focus · ? keys")
  expect(await merges(dir.path)).toBe("")
  t.keys("?")
  const help = await t.waitFor("this help; any key closes it", SCREEN_MS)
  expect(help).toContain("l         approve the oldest merge waiting for your review (flow.yaml review): it lands")
  expect(help).toContain("r         ask for changes to the oldest merge waiting for your review, with a comment its agent gets as a fix round")
  t.keys("Escape")
  await t.waitFor("── 1 script-1", SCREEN_MS)
  t.keys("l")
  const end = await t.waitFor("EXIT=", SCREEN_MS)
  expect(end.trim().split("\n")[0]).toMatch(FINISHED)
  expect(end).toContain("EXIT=0")
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
  expect((await flow(dir.path, ["review"])).stdout).toBe("Nothing waits for review.\n")
})

test.concurrent("r asks for changes with the comment typed on the screen: its agent gets it, then l lands the fix", async () => {
  await using dir = await tempRepo({ "flow.yaml": "review: person\n", "tasks.yaml": TASKS })
  using t = await terminal(dir.path, ["run", "--agents", "1", "--cli", "script"], {}, SIZE)
  await t.waitFor(WAITING, SCREEN_MS)
  const first = JSON.parse((await flow(dir.path, ["review", "--json"])).stdout).reviews[0].head
  t.keys("r")
  await t.waitFor("Changes to greet, the comment: ", SCREEN_MS)
  t.keys("Enter")
  await t.waitFor("the comment is empty: type it, or Esc to cancel", SCREEN_MS)
  t.type("say hello louder")
  await t.waitFor("Changes to greet, the comment: say hello louder", SCREEN_MS)
  t.keys("Enter")
  await t.waitFor("greet: sent back to its agent (attempt 1 of 2): the reviewer asked for changes: say hello louder", SCREEN_MS)
  // The fix round's new commit waits for review again.
  await t.waitFor(WAITING, SCREEN_MS)
  const second = JSON.parse((await flow(dir.path, ["review", "--json"])).stdout).reviews[0].head
  expect(second).not.toBe(first)
  t.keys("l")
  const end = await t.waitFor("EXIT=", SCREEN_MS)
  expect(end.trim().split("\n")[0]).toMatch(FINISHED)
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
  expect(dir.read("review.txt")).toBe("say hello louder\n")
})

test.concurrent("a checkpoint and a merge waiting at once: a line each; l lands the merge, c approves the checkpoint", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "review: person\n",
    "tasks.yaml": tasksYaml([
      { id: "look", title: "Look", status: "todo", checkpoint: true, instructions: "Look at the greeting." },
      { id: "greet", title: "Greet", status: "todo", instructions: sh("echo hi > hello.txt") },
    ]),
  })
  using t = await terminal(dir.path, ["run", "--agents", "1", "--cli", "script"], {}, SIZE)
  await t.waitFor(WAITING, SCREEN_MS)
  const both = await t.waitFor("checkpoint waiting for review: look (c approves look, b blocks it with a reason)", SCREEN_MS)
  expect(both).toContain("q stop · c approve · b block · l land · r changes · Tab/1-9 focus · ? keys")
  t.keys("l")
  await t.waitFor("greet: merged flow/greet into main", SCREEN_MS)
  expect(await merges(dir.path)).toBe("Merge flow/greet: greet")
  const after = await t.waitFor("q stop · c approve · b block · Tab/1-9 focus · ? keys", SCREEN_MS)
  expect(after).not.toContain("merge waiting for your review")
  t.keys("c")
  const end = await t.waitFor("EXIT=", SCREEN_MS)
  expect(end.trim().split("\n")[0]).toMatch(/run: finished after [\d.]+ s: 2 done, 0 not done$/)
})
