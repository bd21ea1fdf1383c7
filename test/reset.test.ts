// `flow reset <task_id>` and `flow reset --stuck`: back to todo, timestamps removed, in-progress steps pending.
import { expect, test } from "bun:test"
import { existsSync, rmSync } from "node:fs"
import { isoSeconds } from "../lib/cli/clock"
import { flow, git, tasksYaml, tempRepo } from "./helpers"
import { refused, run, unchanged } from "./change-helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
// The clock of `reset --stuck` is fixed (FLOW_NOW) at the moment the file's times are written from: under load
// the command may start a minute later, and "in progress for 5h" must not become "5h 1m".
const NOW = Date.now()
const AT_NOW = { FLOW_NOW: isoSeconds(new Date(NOW)) }
const ago = (ms: number) => isoSeconds(new Date(NOW - ms))
const HOUR = 3_600_000

const STEPPED = `# comments stay
tasks:
  - id: api
    title: API
    status: in_progress
    agent_name: claude   # the user's constraint
    instructions: build
    started_at: 2026-01-01T10:00:00Z
    steps:
      - id: api.1
        instruction: models
        status: done
        started_at: 2026-01-01T10:00:00Z
        completed_at: 2026-01-01T10:30:00Z
      - id: api.2
        instruction: routes
        status: in_progress
        started_at: 2026-01-01T10:30:00Z
      - id: api.3
        instruction: tests
  - {id: api-sub, title: Sub, status: in_progress, instructions: s, started_at: "2026-01-01T10:00:00Z"}
`

test.concurrent("reset puts the task back to todo, removes its timestamps and sets its steps pending; agent and other tasks stay", async () => {
  await using dir = await tempRepo({ "tasks.yaml": STEPPED })
  // Done steps too: the retry starts from the target, where their work is not.
  const after = await run(dir, ["reset", "api"], { stdout: "api: in_progress → todo (reset)\napi.1: done → pending\napi.2: in_progress → pending\n" })
  expect(after).toBe(`# comments stay
tasks:
  - id: api
    title: API
    status: todo
    agent_name: claude   # the user's constraint
    instructions: build
    steps:
      - id: api.1
        instruction: models
        status: pending
      - id: api.2
        instruction: routes
        status: pending
      - id: api.3
        instruction: tests
  - {id: api-sub, title: Sub, status: in_progress, instructions: s, started_at: "2026-01-01T10:00:00Z"}
`)
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("reset of a done task removes completed_at; reset of a clean todo task writes nothing", async () => {
  const file = "tasks:\n  - id: a\n    title: A\n    status: done\n    instructions: x\n    completed_at: 2026-01-01T00:00:00Z\n"
  await using dir = await tempRepo({ "tasks.yaml": file })
  const after = await run(dir, ["reset", "a"], { stdout: "a: done → todo (reset)\n" })
  expect(after).toBe("tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: x\n")
  await unchanged(dir, async () =>
    expect(await flow(dir.path, ["reset", "a"])).toEqual({ code: 0, stdout: "a is already todo; nothing to reset\n", stderr: "" }),
  )
})

test.concurrent("reset --stuck resets only the in-progress tasks started longer ago than the threshold, in one write", async () => {
  const file = `tasks:
  - {id: old, title: Old, status: in_progress, instructions: x, started_at: "${ago(5 * HOUR + 30_000)}"}
  - {id: recent, title: Recent, status: in_progress, instructions: x, started_at: "${ago(HOUR)}"}
  - {id: undated, title: Undated, status: in_progress, instructions: x}
  - {id: idle, title: Idle, status: todo, instructions: x, started_at: "${ago(9 * HOUR)}"}
  - id: stepped
    title: Stepped
    status: in_progress
    instructions: x
    started_at: ${ago(26 * HOUR)}
    steps:
      - {id: stepped.1, instruction: one, status: in_progress, started_at: "${ago(26 * HOUR)}"}
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  const after = await run(
    dir,
    ["reset", "--stuck"],
    {
      stdout: "old: in_progress → todo (in progress for 5h)\nstepped: in_progress → todo (in progress for 1d 2h)\nstepped.1: in_progress → pending\n",
      stderr: "warning: undated is in_progress without a started_at, so how long it has been stuck is unknown; if it is, run 'flow reset undated'\n",
    },
    AT_NOW,
  )
  const lines = file.split("\n")
  expect(after).toBe(
    [
      lines[0],
      lines[1].replace("in_progress", "todo").replace(/, started_at: "[^"]+"/, ""),
      lines[2],
      lines[3],
      lines[4],
      "  - id: stepped",
      "    title: Stepped",
      "    status: todo",
      "    instructions: x",
      "    steps:",
      "      - {id: stepped.1, instruction: one, status: pending}",
      "",
    ].join("\n"),
  )
})

test.concurrent("reset --stuck --older-than takes a duration; with nothing stuck it says so and writes nothing", async () => {
  const file = `tasks:\n  - {id: a, title: A, status: in_progress, instructions: x, started_at: "${ago(HOUR)}"}\n`
  await using dir = await tempRepo({ "tasks.yaml": file })
  await unchanged(dir, async () => {
    expect(await flow(dir.path, ["reset", "--stuck"], { env: AT_NOW })).toEqual({
      code: 0,
      stdout: "No stuck tasks (in progress longer than 2h).\n",
      stderr: "",
    })
    expect(await flow(dir.path, ["reset", "--stuck", "--older-than", "1h30m"], { env: AT_NOW })).toEqual({
      code: 0,
      stdout: "No stuck tasks (in progress longer than 1h 30m).\n",
      stderr: "",
    })
  })
  const after = await run(dir, ["reset", "--stuck", "--older-than", "45m"], { stdout: "a: in_progress → todo (in progress for 1h)\n" }, AT_NOW)
  expect(after).toBe("tasks:\n  - {id: a, title: A, status: todo, instructions: x}\n")
})

test.concurrent("reset usage errors exit 2 and write nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": STEPPED })
  const usage = "hint: usage: flow reset <task_id> | flow reset --stuck [--older-than <duration>]\n"
  await refused(dir, ["reset"], 2, `error: missing <task_id> (or --stuck)\n${usage}`)
  await refused(dir, ["reset", "api", "--stuck"], 2, `error: reset takes a <task_id> or --stuck, not both (got 'api' and --stuck)\n${usage}`)
  await refused(dir, ["reset", "api", "--older-than", "2h"], 2, `error: --older-than works only with --stuck\n${usage}`)
  await refused(dir, ["reset", "api", "api-sub"], 2, `error: unexpected argument 'api-sub'\n${usage}`)
  for (const bad of ["2", "1.5h", "30m1h", "0m", "soon"]) {
    await refused(
      dir,
      ["reset", "--stuck", "--older-than", bad],
      2,
      `error: --older-than: '${bad}' is not a duration\nhint: write a positive whole number with a unit: 90s, 30m, 2h, 1d, or combined largest first, like 1h30m\n`,
    )
  }
})

test.concurrent("reset of an unknown id exits 1 naming the closest id", async () => {
  await using dir = await tempRepo({ "tasks.yaml": STEPPED })
  await refused(dir, ["reset", "api-su"], 1, "error: no task 'api-su' in tasks.yaml\nhint: did you mean 'api-sub'?\n")
})

test.concurrent("reset of a done task sends its ready dependents back to todo in the same write and warns about started ones", async () => {
  const file = `tasks:
  - {id: a, title: A, status: done, instructions: x, completed_at: "2026-01-01T00:00:00Z"}
  - {id: other, title: Other, status: done, instructions: x, completed_at: "2026-01-01T00:00:00Z"}
  - {id: ready, title: Ready, status: ready_for_agent, instructions: x, depends_on: [a, other]}
  - {id: busy, title: Busy, status: in_progress, instructions: x, depends_on: [a], started_at: "2026-01-01T00:00:00Z"}
  - {id: handed, title: Handed, status: assigned, instructions: x, depends_on: [a]}
  - {id: unrelated, title: Unrelated, status: ready_for_agent, instructions: x, depends_on: [other]}
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  const after = await run(dir, ["reset", "a"], {
    stdout: "a: done → todo (reset)\nready: ready_for_agent → todo (dependency a reset)\n",
    stderr:
      "warning: a is no longer done, but its dependents busy (in_progress), handed (assigned) already started; left as they are (run 'flow reset <id>' to redo them after a)\n",
  })
  expect(after).toBe(
    file
      .replace(`status: done, instructions: x, completed_at: "2026-01-01T00:00:00Z"}\n  - {id: other`, "status: todo, instructions: x}\n  - {id: other")
      .replace("id: ready, title: Ready, status: ready_for_agent", "id: ready, title: Ready, status: todo"),
  )
  expect((await flow(dir.path, ["next"])).stdout).toBe("[todo] a A\n[ready_for_agent] unrelated Unrelated (depends: other)\n")
})

test.concurrent("reset of a task that was not done leaves its dependents alone", async () => {
  const file = `tasks:
  - {id: a, title: A, status: in_progress, instructions: x, started_at: "2026-01-01T00:00:00Z"}
  - {id: b, title: B, status: ready_for_agent, instructions: x, depends_on: [a]}
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  const after = await run(dir, ["reset", "a"], { stdout: "a: in_progress → todo (reset)\n" })
  expect(after).toBe(file.replace('status: in_progress, instructions: x, started_at: "2026-01-01T00:00:00Z"', "status: todo, instructions: x"))
})

test.concurrent("a reset task's retry starts from the target as it is now; its earlier branch is kept as a ref, named", async () => {
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    // a needs what b brings; its first attempt (before b) fails on a branch made from the first commit.
    "tasks.yaml": tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: sh("echo tried > tried.txt\ncat b.txt > seen.txt") },
      { id: "b", title: "B", status: "todo", instructions: sh("echo from b > b.txt") },
    ]),
  })
  const first = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: first.code, blocked: first.stdout.includes("blocked: a") }).toEqual({ code: 4, blocked: true })
  const old = (await git(dir.path, ["rev-parse", "flow/a"])).trim()

  const reset = await flow(dir.path, ["reset", "a"])
  const ref = /kept as (refs\/flow\/reset\/flow\/a\/[0-9a-f]{12});/.exec(reset.stdout)?.[1] ?? "no ref named"
  expect(reset).toEqual({
    code: 0,
    stdout: `a: blocked → todo (reset)\na: its branch flow/a is kept as ${ref}; the retry starts from main as it is now\n`,
    stderr: "",
  })
  // The attempt's work is kept whole: its branch, and what its worktree had not committed on top.
  await git(dir.path, ["merge-base", "--is-ancestor", old, ref])
  expect(await git(dir.path, ["show", `${ref}:tried.txt`])).toBe("tried\n")
  expect((await git(dir.path, ["rev-parse", ref])).trim()).toStartWith(ref.slice(-12))
  expect((await git(dir.path, ["branch", "--list", "flow/a"])).trim()).toBe("")
  expect(existsSync(dir.file(".flow/worktrees/a"))).toBe(false)

  const retry = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: retry.code, stderr: retry.stderr }).toEqual({ code: 0, stderr: "" })
  expect(await git(dir.path, ["show", "main:seen.txt"])).toBe("from b\n")
})

test.concurrent("reset refuses to set aside a task's branch that a checkout of the person's has checked out, and changes nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "blocked", instructions: "x" }]) })
  const mine = `${dir.path}-mine`
  await git(dir.path, ["worktree", "add", "-q", "-b", "flow/a", mine])
  try {
    await refused(
      dir,
      ["reset", "a"],
      1,
      `error: flow/a, the branch of task 'a', is checked out in ${mine}: a retry from main would delete it there\nhint: switch that checkout to another branch (git -C ${mine} switch main), then 'flow reset a' again\n`,
    )
    expect((await git(dir.path, ["branch", "--list", "flow/a"])).trim()).toBe("+ flow/a")
  } finally {
    rmSync(mine, { recursive: true, force: true })
  }
})
