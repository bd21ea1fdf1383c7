// Notifications in fleet mode (docs/NOTIFY.md, "Fleet mode"): a checkpoint belongs to no machine, every run
// shows it, and only the oldest live run tells people of it. Two machines on one real PostgreSQL and a remote
// served by git daemon, a webhook on loopback in the committed flow.yaml.
import { describe, expect, test } from "bun:test"
import { fleet } from "./fleet-helpers"
import { background, flow, tasksYaml } from "./helpers"
import { receiver } from "./notify-receiver"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"

const RUN = ["run", "--cli", "script", "--agents", "1", "--headless"]
const WAITS = "review: checkpoint waiting for review"

describe.skipIf(!HAVE_POSTGRES)("notifications of a fleet", () => {
  test("a checkpoint both machines see waiting is told once, though both runs show it", async () => {
    await using db = await freshDatabase()
    await using hooks = receiver()
    const tasks = [
      { id: "review", title: "Review", status: "todo", checkpoint: true, instructions: "Look at it." },
      { id: "after", title: "After", status: "todo", dependencies: ["review"], instructions: "```sh\necho after > after.txt\n```" },
    ]
    await using f = await fleet(db.url, () => tasksYaml(tasks), `notify:\n  - { webhook: "${hooks.url("/hook")}", on: [checkpoint] }\n`)
    const [m1, m2] = [await f.clone("m1"), await f.clone("m2")]
    const first = background(m1.path, RUN, m1.env)
    await first.waitFor(WAITS, 120_000)
    const second = background(m2.path, RUN, m2.env)
    await second.waitFor(WAITS, 120_000)
    // The second run's message, were it sent, would follow within the window (a few seconds).
    await hooks.until((r) => r.length >= 1)
    await Bun.sleep(4_000)
    const told = await flow(m2.path, ["done", "review"], { env: m2.env })
    expect(told.code).toBe(0)
    const ended = await Promise.all([first.done(), second.done()])
    expect(ended.map((e) => ({ code: e.code, stderr: e.stderr }))).toEqual([
      { code: 0, stderr: "" },
      { code: 0, stderr: "" },
    ])
    const checkpoints = hooks.requests
      .flatMap((q) => (JSON.parse(q.body) as { events: { event: string; task_id?: string }[] }).events)
      .filter((e) => e.event === "checkpoint")
    expect(checkpoints).toHaveLength(1)
    expect(hooks.requests).toHaveLength(1)
  }, 240_000)
})
