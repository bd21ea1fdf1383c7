// The run screen's review keys in a real terminal (tmux, 120x40): `?` shows the keys, `c` approves the
// checkpoint waiting for review so the run goes on, `b` blocks it with a reason typed on the screen.
import { expect, test } from "bun:test"
import { flow, tasksYaml, tempRepo } from "./helpers"
import { terminal } from "./terminal"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const SIZE = { columns: 120, rows: 40 }
const SCREEN_MS = 60_000
const TASKS = tasksYaml([
  { id: "build", title: "Build", status: "todo", instructions: sh("echo built > build.txt") },
  { id: "review", title: "Review the build", status: "todo", checkpoint: true, depends_on: ["build"], instructions: "Look at build.txt." },
  { id: "ship", title: "Ship", status: "todo", depends_on: ["review"], instructions: sh("echo shipped > ship.txt") },
])
const WAITING = "checkpoint waiting for review: review (c approves review, b blocks it with a reason)"
/** What the normal screen says after the summary: where the run's whole log is kept. */
const LOG_LINE = expect.stringMatching(/^the run's log: 'flow log' \(\.flow\/runs\/\S+\.log\)$/)

const statusOf = async (dir: string, id: string) =>
  (JSON.parse((await flow(dir, ["show", id, "--json"])).stdout) as { task: { status: string; ai_notes?: string[] } }).task

test.concurrent("? shows the keys; c approves the waiting checkpoint and the run finishes", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  using t = await terminal(dir.path, ["run", "--agents", "1", "--cli", "script"], {}, SIZE)
  const screen = await t.waitFor(WAITING, SCREEN_MS)
  expect(screen).toContain("q stop · c approve · b block · Tab/1-9 focus · ? keys")
  t.keys("?")
  const help = await t.waitFor("this help; any key closes it", SCREEN_MS)
  expect(help).toContain("c         approve the oldest checkpoint waiting for review: it becomes done and the run goes on")
  t.keys("Escape")
  await t.waitFor("── 1 script-1", SCREEN_MS)
  t.keys("c")
  const end = await t.waitFor("EXIT=", SCREEN_MS)
  expect(end.trim().split("\n")).toEqual([expect.stringMatching(/run: finished after [\d.]+ s: 3 done, 0 not done$/), LOG_LINE, "EXIT=0"])
  expect((await statusOf(dir.path, "review")).status).toBe("done")
})

test.concurrent("b blocks the waiting checkpoint with the reason typed on the screen; the run ends with exit 4", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  using t = await terminal(dir.path, ["run", "--agents", "1", "--cli", "script"], {}, SIZE)
  await t.waitFor(WAITING, SCREEN_MS)
  t.keys("b")
  await t.waitFor("Block review, the reason: ", SCREEN_MS)
  t.keys("Enter")
  await t.waitFor("the reason is empty: type it, or Esc to cancel", SCREEN_MS)
  t.type("build.txt is empty")
  await t.waitFor("Block review, the reason: build.txt is empty", SCREEN_MS)
  t.keys("Enter")
  const end = await t.waitFor("EXIT=", SCREEN_MS)
  expect(end.trim().split("\n")).toEqual([expect.stringMatching(/run: finished after [\d.]+ s: 1 done, 2 not done, blocked: review$/), LOG_LINE, "EXIT=4"])
  const review = await statusOf(dir.path, "review")
  expect({ status: review.status, notes: review.ai_notes }).toEqual({ status: "blocked", notes: ["Blocked: build.txt is empty"] })
})
