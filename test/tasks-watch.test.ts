// A run sees what other processes write to tasks.yaml (a checkpoint approved in another terminal) within
// 2 s, whatever happened to the file before: docs/RUN.md, "Scheduling". Against the binary under FLOW_BIN.
import { expect, test } from "bun:test"
import { mkdirSync, readFileSync, symlinkSync } from "node:fs"
import { background, flow, tasksYaml, tempRepo, until } from "./helpers"
import { TASKS_STAT_MS, watchTasksFile } from "../lib/run/tasks-watch"
import { withLock } from "../lib/store/lock"
import { writeFileAtomic } from "../lib/store/atomic-write"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const STAGES = 5
const RUNS = 2

/** Stage k: six parallel tasks, the checkpoint review-k on them, after-k on it; stage k+1 starts after after-k. */
function stages(n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => {
    const k = i + 1
    const parallel = Array.from({ length: 6 }, (_, j) => ({
      id: `t${k}-${j + 1}`,
      title: `Task ${k}.${j + 1}`,
      status: "todo",
      ...(k > 1 ? { depends_on: [`after-${k - 1}`] } : {}),
      instructions: sh("true"),
    }))
    return [
      ...parallel,
      { id: `review-${k}`, title: `Review ${k}`, status: "todo", checkpoint: true, depends_on: parallel.map((t) => t.id), instructions: "Look at it." },
      { id: `after-${k}`, title: `After ${k}`, status: "todo", depends_on: [`review-${k}`], instructions: sh("true") },
    ]
  }).flat()
}

/**
 * RUNS runs at once, each through STAGES stages; at each "waiting for review", `flow done review-k` from another
 * process, and the time until the run starts after-k. `rewrites`: tasks.yaml is rewritten just before, at speed.
 */
async function approvals(rewrites: boolean): Promise<string[][]> {
  return Promise.all(
    Array.from({ length: RUNS }, async () => {
      await using dir = await tempRepo({ ".gitignore": ".flow/\n", "tasks.yaml": tasksYaml(stages(STAGES)) })
      const run = background(dir.path, ["run", "--headless", "--agents", "3", "--cli", "script"])
      const seen: string[] = []
      try {
        for (let k = 1; k <= STAGES; k++) {
          await run.waitFor(`run: waiting for review of review-${k}:`, 100_000)
          if (rewrites) {
            // Atomic rewrites 0 to 4 ms apart, under the lock, as fast as a run's own status writes come on a
            // quick machine: each renames a new file over tasks.yaml. chokidar's watch of the file itself
            // missed one within 5 ms of the last (its throttle) and stayed on the replaced file, deaf for good.
            const file = dir.file("tasks.yaml")
            await withLock(file, async () => {
              const text = readFileSync(file, "utf8")
              for (const gap of [0, 1, 2, 3, 4]) {
                writeFileAtomic(file, text, { durable: false })
                await Bun.sleep(gap)
              }
            })
          }
          const done = await flow(dir.path, ["done", `review-${k}`])
          expect(done.code).toBe(0)
          const approved = performance.now()
          const noticed = await run.waitFor(`after-${k}: ready_for_agent → assigned`, 10_000).then(
            () => performance.now() - approved,
            () => Number.POSITIVE_INFINITY,
          )
          seen.push(`review-${k}: ${noticed <= 2_000 ? "seen within 2 s" : `seen after ${noticed} ms`}`)
          if (noticed === Number.POSITIVE_INFINITY) break // this run is deaf: the rest of its stages cannot be tried
        }
      } finally {
        run.proc.kill("SIGTERM")
        await run.done()
      }
      return seen
    }),
  )
}

const allSeen = Array.from({ length: RUNS }, () => Array.from({ length: STAGES }, (_, i) => `review-${i + 1}: seen within 2 s`))

// One test after the other, not at once: each keeps two runs of 40 tasks busy, about all a small machine has.
test(`a checkpoint approved from another process is seen within 2 s, ${STAGES * RUNS} times`, async () => {
  expect(await approvals(false)).toEqual(allSeen)
})

test(`a checkpoint approved right after the fastest rewrites of tasks.yaml is seen within 2 s, ${STAGES * RUNS} times`, async () => {
  expect(await approvals(true)).toEqual(allSeen)
})

test("a change no watcher reports (tasks.yaml a link into another folder, after a burst of writes) is seen by the stat", async () => {
  await using dir = await tempRepo()
  mkdirSync(dir.file("project"))
  dir.write("elsewhere/tasks.yaml", "tasks: []\n")
  symlinkSync("../elsewhere/tasks.yaml", dir.file("project/tasks.yaml"))
  const file = dir.file("project/tasks.yaml")
  let lastCall = 0
  const stop = watchTasksFile(file, () => (lastCall = performance.now()))
  try {
    await stop.ready
    // Writes go through the link and replace the file in the other folder, which nothing watches; the watch
    // chokidar keeps on the link's target goes deaf after a burst (its throttle).
    for (const gap of [0, 1, 2, 3, 4]) {
      writeFileAtomic(file, `tasks: []\n# ${gap}\n`, { durable: false })
      await Bun.sleep(gap)
    }
    // The burst is over once nothing has been said for two looks of the stat: what is said next is news.
    await until(() => lastCall > 0 && performance.now() - lastCall > 2 * TASKS_STAT_MS)
    const written = performance.now()
    writeFileAtomic(file, "tasks: []\n# the last\n", { durable: false })
    await until(() => lastCall > written, 5_000)
    expect(lastCall - written).toBeGreaterThan(0)
    expect(lastCall - written).toBeLessThan(2_000)
  } finally {
    await stop()
  }
})
