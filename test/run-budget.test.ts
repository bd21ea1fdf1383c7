// Budgets under `flow run` with the offline script agent (docs/BUDGETS.md): minutes of agent time are
// counted for every agent, so a script that runs too long is stopped, its work kept, and a person asked.
import { expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { join } from "node:path"
import type { QuestionsReport } from "../lib/model/json-shapes"
import { background, flow, git, tasksYaml, tempRepo, type TempDir } from "./helpers"

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))
const notes = (yaml: string, id: string) =>
  (Bun.YAML.parse(yaml) as { tasks: { id: string; ai_notes?: string[] }[] }).tasks.find((t) => t.id === id)?.ai_notes ?? []

/** A script that writes its file, then (the first time only) sleeps well past any cap of these tests. */
const slowOnce = (file: string) => `\`\`\`sh\nprintf 'work\\n' > ${file}\ntest -f ${file}.again || { touch ${file}.again; sleep 60; }\n\`\`\`\n`

async function question(dir: TempDir, task: string) {
  for (;;) {
    const r = await flow(dir.path, ["questions", "--json"])
    const q = (JSON.parse(r.stdout || '{"questions":[]}') as QuestionsReport).questions.find((q) => q.task_id === task)
    if (q) return q
    await Bun.sleep(100)
  }
}

test.concurrent("past the ceiling of its minutes a turn is stopped at once, its work committed on its branch, and a question asked; more minutes finish it, 'block' blocks it with the branch kept", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "more", title: "More", status: "todo", instructions: slowOnce("more.txt") },
      { id: "stop", title: "Stop", status: "todo", instructions: slowOnce("stop.txt") },
    ]),
    // 2 s a task, stopped at once past 1.5 times that.
    "flow.yaml": "agents:\n  - name: s1\n    cli: script\n  - name: s2\n    cli: script\nbudget:\n  task: { minutes: 0.0334 }\n",
  })
  const started = Date.now()
  const run = background(dir.path, ["run", "--headless"])
  const [more, stop] = await Promise.all([question(dir, "more"), question(dir, "stop")])
  expect(Date.now() - started).toBeLessThan(30_000) // far from the 60 s sleep
  expect(more.kind).toBe("budget:minutes")
  expect(more.text).toMatch(/^task 'more' ran \ds of 2s: answer with the minutes to add \(30 or 30m\) and its agent goes on in the same session, or 'block'/)
  // What the script wrote before it was stopped is on each branch, and nothing was merged.
  expect(await git(dir.path, ["show", "flow/more:more.txt"])).toBe("work\n")
  expect(await git(dir.path, ["show", "flow/stop:stop.txt"])).toBe("work\n")
  // The turn was stopped past 1.5 times its 2 s: one second more leaves it over its cap, and dollars are no minutes.
  const tooLittle = await flow(dir.path, ["answer", more.id, "1s"])
  expect({ code: tooLittle.code, stderr: tooLittle.stderr }).toEqual({
    code: 2,
    stderr: expect.stringMatching(
      new RegExp(`^error: ${more.id}: 1s more leaves task 'more' over its budget \\(it ran \\ds of 3s\\); more than \\ds clears it\n`),
    ),
  })
  expect((await flow(dir.path, ["answer", more.id, "$5"])).stderr).toStartWith(`error: ${more.id} asks for more minutes, and "$5" is dollars:`)
  expect((await flow(dir.path, ["answer", more.id, "1m"])).code).toBe(0)
  expect((await flow(dir.path, ["answer", stop.id, "block", "too slow"])).code).toBe(0)
  const end = await run.done()
  expect({ code: end.code, stderr: end.stderr }).toEqual({ code: 4, stderr: "" })
  expect(end.stdout).toMatch(/more: task 'more' ran \ds of 2s, past 1\.5 times its budget: stopping its agent now\n/)
  expect(end.stdout).toContain(`more: ${more.id} answered: 1m more; its agent goes on in the same session\n`)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ more: "done", stop: "blocked" })
  expect(dir.read("more.txt")).toBe("work\n")
  expect(notes(dir.read("tasks.yaml"), "stop").at(-1)).toMatch(
    new RegExp(`^blocked at its budget: it ran \\ds of 2s; ${stop.id} was answered 'block' by \\S+: too slow \\(its branch is kept\\)$`),
  )
  expect(await git(dir.path, ["show", "flow/stop:stop.txt"])).toBe("work\n")
  // The blocked task never reached the merge journal; the other merged once.
  using db = new Database(join(dir.path, ".flow", "state.db"), { readonly: true })
  expect(db.query("SELECT task_id, outcome FROM merges ORDER BY id").all()).toEqual([{ task_id: "more", outcome: "merged" }])
  // Spend beside the cap: the answer raised it by a minute.
  const show = (await flow(dir.path, ["show", "more"])).stdout
  expect(show).toMatch(/\nBudget: \ds of 1m 2s\n/)
}, 120_000)

test.concurrent("an agent past its budget for the run takes no new task; the rest waits for the next run, and --dry-run forecasts it", async () => {
  const script = "```sh\nsleep 2\n```\n"
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: script },
      { id: "b", title: "B", status: "todo", instructions: script },
    ]),
    "flow.yaml": "agents:\n  - name: s1\n    cli: script\nbudget:\n  agent: { minutes: 0.02 }\n  ceiling: 3\n",
  })
  const r = await flow(dir.path, ["run", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
  expect(r.stdout).toContain("run: forecast: 2 tasks to do\n")
  expect(r.stdout).toContain("run: forecast: estimate for the rest: no estimate: no task has finished yet and the tasks have no budget\n")
  expect(r.stdout).toMatch(/run: agent s1's budget for this run is reached \(ran 2s of 1s\): it takes no new task\n/)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done", b: "todo" })
  const agents = (await flow(dir.path, ["agents"])).stdout
  expect(agents).toMatch(/\n {4}Budget: 2s of 1s in the latest run\n/)
  const before = dir.read("tasks.yaml")
  const dry = await flow(dir.path, ["run", "--dry-run"])
  expect({ code: dry.code, stderr: dry.stderr }).toEqual({ code: 0, stderr: "" })
  expect(dry.stdout.split("\n")).toEqual([
    "flow run --dry-run: nothing is started",
    "Agents: s1 (script); at most 1 at once",
    "Forecast: 1 task to do",
    "  spent by the finished tasks: a 2s (in all 2s)",
    "  estimate for the rest: 2s (1 task at the mean of the 1 finished (2s each), less what the started ones spent)",
    "  budget: 1s for each agent in a run",
    "",
  ])
  expect(dir.read("tasks.yaml")).toBe(before)
})

test.concurrent("past the ceiling of an agent's budget its turn is stopped at once; the task stays in progress, its work on its branch, for the next run", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "long", title: "Long", status: "todo", instructions: slowOnce("long.txt") }]),
    "flow.yaml": "agents:\n  - name: s1\n    cli: script\nbudget:\n  agent: { minutes: 0.02 }\n",
  })
  const started = Date.now()
  const r = await flow(dir.path, ["run", "--headless"])
  expect(Date.now() - started).toBeLessThan(30_000) // far from the 60 s sleep
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
  expect(r.stdout).toMatch(/long: agent s1's budget for this run is reached \(ran \ds of 1s\), past 1\.5 times: stopping its agent now\n/)
  expect(r.stdout).toMatch(
    /long: agent s1's budget for this run is reached \(ran \ds of 1s\): its agent stops here, the task stays in progress for the next 'flow run'\n/,
  )
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ long: "in_progress" })
  expect(await git(dir.path, ["show", "flow/long:long.txt"])).toBe("work\n")
  expect(r.stdout).not.toContain("long: retry")
})
