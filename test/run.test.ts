// `flow run` and `flow demo` end to end: real git repositories, real worktrees and merges, the offline
// `script` agent, checkpoints answered from another process, failures, conflicts and interrupted runs.
import { expect, test } from "bun:test"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { background, flow, git, processesIn, tasksYaml, tempRepo } from "./helpers"

const statuses = (yaml: string) => {
  const out: Record<string, string> = {}
  const walk = (tasks: { id: string; status: string; subtasks?: unknown[] }[]) => {
    for (const t of tasks) {
      out[t.id] = t.status
      if (t.subtasks) walk(t.subtasks as never)
    }
  }
  walk((Bun.YAML.parse(yaml) as { tasks: never }).tasks)
  return out
}

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

test.concurrent("flow demo builds the sample project and runs every task to done, merged into main", async () => {
  const parent = mkdtempSync(join(tmpdir(), "flow-demo-test-"))
  try {
    const dir = join(parent, "shorty")
    const r = await flow(parent, ["demo", dir, "--yes"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout).toMatch(/run: finished after [\d.]+ s: 12 done, 0 not done\n/)
    expect(Object.values(statuses(readFileSync(join(dir, "tasks.yaml"), "utf8"))).every((s) => s === "done")).toBe(true)
    // The work of every task is on main, and its tests pass there.
    for (const f of ["bin/shorten", "bin/expand", "bin/links", "lib/store.sh", "test/cli.test.sh", "docs/usage.md", "CHANGELOG.md", "VERSION"]) {
      expect({ f, exists: existsSync(join(dir, f)) }).toEqual({ f, exists: true })
    }
    const tests = Bun.spawnSync(["sh", "test/run.sh"], { cwd: dir })
    expect(tests.stdout.toString()).toContain("all tests passed")
    const merges = (await git(dir, ["log", "--merges", "--format=%s"])).trim().split("\n")
    expect(merges).toHaveLength(9) // every task that changed files; final-check only ran the tests
    expect(merges).toContain("Merge flow/cli-expand: cli-expand")
    // Worktrees are removed after their merge; only main's checkout is left, and it is clean but for tasks.yaml.
    expect((await git(dir, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
    expect((await git(dir, ["status", "--porcelain"])).trim()).toBe("M tasks.yaml")
    // The final task ran `flow note` from its worktree, through FLOW_PROJECT.
    expect(readFileSync(join(dir, "tasks.yaml"), "utf8")).toContain("All tests pass at version 0.1.0.")
    expect((await flow(dir, ["validate"])).code).toBe(0)
    expect((await flow(parent, ["demo", dir])).code).toBe(1) // not over an existing project
    // flow agents: the three agents of flow.yaml, idle now, with the ten tasks they did between them.
    const agents = await flow(dir, ["agents", "--json"])
    const list = JSON.parse(agents.stdout).agents as { name: string; cli: string; current: null; completed: number }[]
    expect(list.map((a) => [a.name, a.cli, a.current])).toEqual([
      ["script-1", "script", null],
      ["script-2", "script", null],
      ["script-3", "script", null],
    ])
    expect(list.reduce((n, a) => n + a.completed, 0)).toBe(10)
    const text = (await flow(dir, ["agents"])).stdout
    expect(text).toStartWith("Agents:\n  script-1 (script)\n    Current: none\n    Completed: ")
  } finally {
    rmSync(parent, { recursive: true, force: true })
  }
})

test.concurrent("a checkpoint waits for a person: flow done from another process lets the run finish", async () => {
  const parent = mkdtempSync(join(tmpdir(), "flow-demo-test-"))
  try {
    const dir = join(parent, "shorty")
    const run = background(parent, ["demo", dir])
    await run.waitFor("review: checkpoint waiting for review")
    await run.waitFor("run: waiting for review of review")
    const s = statuses(readFileSync(join(dir, "tasks.yaml"), "utf8"))
    expect([s.review, s.changelog, s["cli-tests"]]).toEqual(["ready_for_agent", "todo", "done"])
    expect((await flow(dir, ["done", "review"])).code).toBe(0)
    const r = await run.done()
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("12 done, 0 not done")
  } finally {
    rmSync(parent, { recursive: true, force: true })
  }
})

test.concurrent("a failing script blocks its task with the output's tail; dependents wait; exit 4", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "ok", title: "Fine", status: "todo", instructions: sh("echo fine > ok.txt") },
      { id: "bad", title: "Fails", status: "todo", instructions: sh("echo 'something broke'\nexit 3") },
      { id: "after", title: "After", status: "todo", depends_on: ["bad"], instructions: sh("true") },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script"])
  expect(r.code).toBe(4)
  expect(r.stdout).toContain("blocked: bad")
  const yaml = dir.read("tasks.yaml")
  expect(statuses(yaml)).toEqual({ ok: "done", bad: "blocked", after: "todo" })
  expect(yaml).toContain("script failed (exit 3):\\nsomething broke")
  expect(dir.read("ok.txt")).toBe("fine\n")
})

test.concurrent("a merge conflict blocks the task merged second, names the file, and leaves main as it was", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "first", title: "First", status: "todo", instructions: sh("echo first > same.txt") },
      { id: "second", title: "Second", status: "todo", instructions: sh("echo second > same.txt") },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script"])
  expect(r.code).toBe(4)
  // Both change the same file at once; whichever is merged first wins, the other is blocked.
  const s = statuses(dir.read("tasks.yaml"))
  const winner = s.first === "done" ? "first" : "second"
  const loser = winner === "first" ? "second" : "first"
  expect([s[winner], s[loser]]).toEqual(["done", "blocked"])
  expect(r.stdout).toContain(`${loser}: merge of flow/${loser} into main failed: merge conflict in same.txt`)
  expect(dir.read("same.txt")).toBe(`${winner}\n`)
  expect(dir.read("tasks.yaml")).toContain(`merge of flow/${loser} into main failed: merge conflict in same.txt`)
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("M tasks.yaml")
})

test.concurrent("a landing held up by the person's local change waits, said once in one sentence; the log counts 1 task; agents says '1 tasks'", async () => {
  await using dir = await tempRepo({
    "a.txt": "a\n",
    "tasks.yaml": tasksYaml([{ id: "edit", title: "Edit", status: "todo", instructions: sh("echo b > a.txt\ngit add a.txt\ngit commit -qm b") }]),
  })
  dir.write("a.txt", "local\n")
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  await run.waitFor("is in the way")
  expect(run.output()).toContain(" run: 1 task, agents script-1, merging into main\n")
  expect(run.output()).toContain(
    `landing edit: your uncommitted change to a.txt in ${dir.path} is in the way; commit it, or stash just it with \`git -C ${dir.path} stash push -- a.txt\` (not a bare \`git stash\`, which takes flow's own uncommitted writes too), and flow lands by itself\n`,
  )
  expect(dir.read("a.txt")).toBe("local\n")
  await git(dir.path, ["checkout", "--", "a.txt"]) // the person discards it
  const r = await run.done()
  expect(r.code).toBe(0)
  expect(dir.read("a.txt")).toBe("b\n")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ edit: "done" })
  expect((await flow(dir.path, ["agents"])).stdout).toBe("Agents:\n  script-1 (script)\n    Current: none\n    Completed: 1 tasks\n")
})

test.concurrent("a failed validation blocks the validated task too", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "feature", title: "Feature", status: "todo", validation_task_id: "check", instructions: sh("echo 1 > f.txt") },
      { id: "check", title: "Check", status: "todo", depends_on: ["feature"], instructions: sh("flow block check 'f.txt holds 1, expected 2'; exit 0") },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect(r.code).toBe(4)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ feature: "blocked", check: "blocked" })
  expect(dir.read("tasks.yaml")).toContain("Validation by check failed: Blocked: f.txt holds 1, expected 2")
})

test.concurrent.each([
  { config: "", status: "done" },
  { config: "empty_done: block\n", status: "blocked" },
])(
  "an agent that says done having changed nothing is said in the log and the task's notes; empty_done: block blocks it ($status)",
  async ({ config, status }) => {
    await using dir = await tempRepo({
      "flow.yaml": config,
      "tasks.yaml": tasksYaml([
        { id: "idle", title: "Idle", status: "todo", instructions: sh("echo looked, changed nothing") },
        { id: "work", title: "Work", status: "todo", instructions: sh("echo w > w.txt") },
        // A validation task checks and changes nothing by design: not said.
        { id: "feature", title: "Feature", status: "todo", validation_task_id: "check", instructions: sh("echo f > f.txt") },
        { id: "check", title: "Check", status: "todo", depends_on: ["feature"], instructions: sh("test -f f.txt") },
      ]),
    })
    const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
    expect(r.code).toBe(status === "done" ? 0 : 4)
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ idle: status, work: "done", feature: "done", check: "done" })
    expect(r.stdout).toContain("idle: finished with no changes on flow/idle: nothing to merge into main\n")
    expect(r.stdout.match(/finished with no changes/g)).toHaveLength(1)
    const notes = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { id: string; ai_notes?: string[] }[] }).tasks.find((t) => t.id === "idle")?.ai_notes
    expect(notes?.[0]).toStartWith("finished with no changes on flow/idle: nothing to merge into main")
    if (status === "blocked") expect(notes?.[0]).toContain("(flow.yaml empty_done: block)")
  },
)

test.concurrent("a run killed midway is resumed by the next: nothing lost, no finished task run again", async () => {
  await using dir = await tempRepo()
  const log = join(dir.path, "..", `${dir.path.split("/").pop()}-runs.log`)
  const step = (id: string, extra = "") => sh(`echo ${id} >> '${log}'\n${extra}echo ${id} > ${id}.txt`)
  dir.write(
    "tasks.yaml",
    tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: step("a") },
      { id: "slow", title: "Slow", status: "todo", depends_on: ["a"], instructions: step("slow", "sleep 2\n") },
      { id: "z", title: "Z", status: "todo", depends_on: ["slow"], instructions: step("z") },
    ]),
  )
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tasks"])
  try {
    const first = background(dir.path, ["run", "--agents", "1", "--cli", "script"])
    await first.waitFor("slow: started by")
    first.proc.kill("SIGKILL")
    await first.done()
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done", slow: "in_progress", z: "todo" })
    const second = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
    expect(second.code).toBe(0)
    expect(second.stdout).toContain("slow: resumed by script-1 on flow/slow")
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done", slow: "done", z: "done" })
    const runs = readFileSync(log, "utf8").trim().split("\n")
    expect(runs.filter((x) => x === "a")).toHaveLength(1)
    expect(runs.filter((x) => x === "z")).toHaveLength(1)
    expect(dir.read("z.txt")).toBe("z\n")
  } finally {
    rmSync(log, { force: true })
  }
})

test.concurrent("SIGTERM stops the agents and leaves the task in progress; a second run at once is refused", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "long", title: "Long", status: "todo", instructions: sh("sleep 30") }]),
  })
  expect((await flow(dir.path, ["agents"])).stdout).toBe("No agents: list them in flow.yaml, or start some with 'flow run --agents N --cli <cli>'.\n")
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "script"])
  await run.waitFor("long: started by")
  expect((await flow(dir.path, ["agents"])).stdout).toBe("Agents:\n  script-1 (script)\n    Current: long (in_progress)\n    Completed: 0 tasks\n")
  const other = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect(other.code).toBe(1)
  expect(other.stderr).toContain("error: another 'flow run' is already working on this project")
  const t0 = performance.now()
  run.proc.kill("SIGTERM")
  const r = await run.done()
  expect(r.code).toBe(130)
  expect(performance.now() - t0).toBeLessThan(10_000)
  expect(r.stdout).toContain("run: stopped after")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ long: "in_progress" })
  // The dashboard tells the task was stopped with the run, and by whom.
  const running = JSON.parse((await flow(dir.path, ["dashboard", "--json"])).stdout).running
  expect(running.map((t: { id: string; agent: string; live: boolean }) => [t.id, t.agent, t.live])).toEqual([["long", "script-1", false]])
  // Nothing the run started (the agent's `sleep 30`) is left running in the project: asked of the project's
  // folder, not of the whole machine, where any other program may be sleeping too.
  expect(processesIn(dir.path)).toEqual([])
})

test.concurrent("run without agents is a usage error; an unknown cli is named with the known ones", async () => {
  await using dir = await tempRepo({ "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: "x" }]) })
  const none = await flow(dir.path, ["run"])
  expect(none.code).toBe(2)
  expect(none.stderr).toContain("error: no agents: flow.yaml lists none and no --agents/--cli was given")
  const bad = await flow(dir.path, ["run", "--agents", "0", "--cli", "script"])
  expect(bad.code).toBe(2)
  const before = dir.read("tasks.yaml")
  const unknown = await flow(dir.path, ["run", "--cli", "scrpt"])
  expect(unknown.code).toBe(2)
  expect(unknown.stderr).toBe(
    "error: unknown agent cli 'scrpt' (known: script, claude, codex, gemini, opencode, cursor, copilot, goose, command)\nhint: did you mean 'script'?\n",
  )
  expect(dir.read("tasks.yaml")).toBe(before)
  expect(readdirSync(dir.path)).not.toContain(".flow")
})

test.concurrent("flow repo worktree list and remove: uncommitted changes refused unless --force; the branch is kept", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "wip", title: "WIP", status: "todo", instructions: sh("echo half > half.txt\nexit 1") }]),
  })
  expect((await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])).code).toBe(4)
  // The blocked task's worktree stays for a person to look at, with the script's uncommitted file.
  expect((await flow(dir.path, ["repo", "worktree", "list"])).stdout).toBe("flow/wip  .flow/worktrees/wip\n")
  const refused = await flow(dir.path, ["repo", "worktree", "remove", ".", "flow/wip"])
  expect(refused.code).toBe(1)
  expect(refused.stderr).toContain("has uncommitted changes: half.txt")
  expect(existsSync(dir.file(".flow/worktrees/wip/half.txt"))).toBe(true)
  const unknown = await flow(dir.path, ["repo", "worktree", "remove", ".", "flow/nope"])
  expect(unknown).toEqual({ code: 1, stdout: "", stderr: "error: no worktree of . has branch 'flow/nope' checked out\nhint: worktrees: flow/wip\n" })
  expect((await flow(dir.path, ["repo", "worktree", "remove", "../elsewhere", "x"])).stderr).toContain("points outside the project folder")
  expect(await flow(dir.path, ["repo", "worktree", "list", "repos/missing"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: the folder repos/missing (${dir.path}/repos/missing) does not exist\nhint: <repo> is a repository flow knows (flow.yaml's 'repo', a task's 'repo'), a folder relative to the project, or '.'\n`,
  })
  expect((await flow(dir.path, ["repo", "worktree", "remove", "repos/missing", "flow/wip"])).code).toBe(2)
  const forced = await flow(dir.path, ["repo", "worktree", "remove", ".", "flow/wip", "--force"])
  expect(forced).toEqual({ code: 0, stderr: "", stdout: "Removed the worktree of flow/wip (.flow/worktrees/wip); the branch is kept.\n" })
  expect(existsSync(dir.file(".flow/worktrees/wip"))).toBe(false)
  expect((await git(dir.path, ["branch", "--list", "flow/wip"])).trim()).toBe("flow/wip")
  expect((await flow(dir.path, ["repo", "worktree", "list"])).stdout).toBe("No worktrees.\n")
})

test.concurrent("an invalid tasks.yaml stops the run at once with exit 3 (nothing is left watching the file)", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - {id: a, title: x, status: doing, instructions: y}\n" })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 3, stdout: "" })
  expect(r.stderr).toContain("tasks.yaml is invalid")
})
