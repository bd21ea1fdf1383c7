// One git operation on a repository at a time (lib/landing/repo-lanes.ts): clean-ups wait while anything else waits.
import { expect, test } from "bun:test"
import { RepoLanes } from "../lib/landing/repo-lanes"

test("operations on a repository run one at a time, in order; a clean-up runs after what was queued before it ran", async () => {
  const lanes = new RepoLanes()
  const ran: string[] = []
  let running = 0
  const op = (name: string) => async () => {
    expect(++running).toBe(1)
    await Bun.sleep(1)
    ran.push(name)
    running--
    return name
  }
  const done = [
    lanes.run("r", op("add a")),
    lanes.run("r", op("remove x"), true),
    lanes.run("r", op("add b")),
    lanes.run("r", op("remove y"), true),
    lanes.run("r", op("add c")),
  ]
  expect(await Promise.all(done)).toEqual(["add a", "remove x", "add b", "remove y", "add c"])
  expect(ran).toEqual(["add a", "add b", "add c", "remove x", "remove y"])
  await lanes.idle()
})

test("a failed operation rejects its own caller only; idle waits for the last one on every repository", async () => {
  const lanes = new RepoLanes()
  const failed = lanes.run("r", () => Promise.reject(new Error("git failed")))
  let later = false
  void lanes.run(
    "s",
    async () => {
      await Bun.sleep(5)
      later = true
    },
    true,
  )
  expect(await lanes.run("r", async () => "next")).toBe("next")
  await expect(failed).rejects.toThrow("git failed")
  await lanes.idle()
  expect(later).toBe(true)
})
