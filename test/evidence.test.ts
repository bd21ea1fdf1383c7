// A task's evidence (docs/REVIEW.md, "Evidence"): one record per task handed to the merge queue, shown by
// `flow show` and `flow show --json`, recorded in the run state (both backends), and summed up in the merge
// commit's trailers, which `git log --format=%(trailers)` reads back and which say what the record says.
import { describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { projectAt } from "../lib/cli/project"
import { TaskEvidence } from "../lib/model/json-shapes"
import { readEvidence, recordEvidence } from "../lib/run/evidence"
import type { RunState } from "../lib/state/run-state"
import { openStateDb } from "../lib/state/sqlite/state-db"
import { PgRunState } from "../lib/state/postgres/pg-state"
import { database } from "../lib/store/postgres/connection"
import { createProject } from "../lib/store/postgres/share"
import { parseUrl } from "../lib/store/postgres/url"
import { sharedSetting } from "../lib/store/setting"
import { flow, git, tasksYaml, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"

const sh = (lines: string, label = "") => `\`\`\`sh${label ? ` ${label}` : ""}\n${lines}\n\`\`\``
const CHECK = 'if [ -f bad.txt ]; then echo "error: bad.txt must not land"; exit 1; fi\necho "all 3 checks passed"\n'

/** The trailers of main's last commit, as git parses them: key to value. */
async function trailers(repo: string): Promise<Record<string, string>> {
  const text = await git(repo, ["log", "-1", "--format=%(trailers:only,unfold)", "main"])
  return Object.fromEntries(
    text
      .trim()
      .split("\n")
      .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]),
  )
}

test.concurrent("a task whose check failed once and was fixed: its evidence in show --json and text, and the merge's trailers say the same", async () => {
  await using dir = await tempRepo({
    "check.sh": CHECK,
    "old.txt": "one\ntwo\n",
    "flow.yaml": "verify: { command: sh check.sh, timeout: 1m }\n",
    "tasks.yaml": tasksYaml([
      {
        id: "greet",
        title: "Greet",
        status: "todo",
        instructions: `${sh("printf 'hello\\nworld\\n' > hello.txt\necho one > old.txt\necho x > bad.txt")}\n${sh("rm bad.txt", "fix")}`,
      },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const shown = await flow(dir.path, ["show", "greet", "--json"])
  const e = TaskEvidence.assert(JSON.parse(shown.stdout).evidence)
  const main = (await git(dir.path, ["rev-parse", "main"])).trim()
  expect(e).toMatchObject({
    task: "greet",
    state: "landed",
    commit: main,
    branch: "flow/greet",
    target: "main",
    head: (await git(dir.path, ["rev-parse", "main^2"])).trim(),
    diff: {
      files: [
        { path: "hello.txt", insertions: 2, deletions: 0 },
        { path: "old.txt", insertions: 0, deletions: 1 },
      ],
      insertions: 2,
      deletions: 1,
    },
    check: "sh check.sh",
    agent: "script-1",
    attempts: 1,
    fix_rounds: 1,
    queue: { checks: 1, thrown: 0 },
  })
  expect(e.checks.map((c) => [c.command, c.passed, c.exit_code, c.timed_out])).toEqual([
    ["sh check.sh", false, 1, false],
    ["sh check.sh", true, 0, false],
  ])
  expect(e.checks[0].output_tail).toContain("error: bad.txt must not land")
  expect(e.checks[1].output_tail).toBe("all 3 checks passed")
  expect(e.queue!.seconds).toBeGreaterThan(0)
  const seconds = e.agent_seconds
  expect(seconds).toBeNumber()

  // The merge commit carries the record's summary, and its subject is what it always was.
  const cost = e.usage === null ? `${seconds} s of agent turns` : expect.any(String)
  expect(await trailers(dir.path)).toEqual({
    "Flow-Task": "greet",
    "Flow-Agent": `${e.agent} (attempts ${e.attempts}, fix rounds ${e.fix_rounds})`,
    "Flow-Check": e.check!,
    "Flow-Cost": cost,
  })
  expect((await git(dir.path, ["log", "-1", "--format=%s", "main"])).trim()).toBe("Merge flow/greet: greet")
  expect(await git(dir.path, ["log", "-1", "--format=%(trailers:key=Flow-Task,valueonly)", "main"])).toBe("greet\n\n")

  const text = (await flow(dir.path, ["show", "greet"])).stdout
  expect(text).toContain(`Evidence: landed into main as ${main.slice(0, 12)}, from flow/greet at ${e.head.slice(0, 12)}`)
  expect(text).toContain("  Diff: 2 files, +2 -1\n    +2 -0  hello.txt\n    +0 -1  old.txt\n")
  expect(text).toContain("  Agent: script-1 (attempts 1, fix rounds 1)\n")
  expect(text).toContain(`  Cost: ${cost}\n`)
  expect(text).toMatch(/ {2}Checks:\n {4}failed \(exit 1\) after \d+\.\d s: sh check\.sh\n(.*\n)* {6}\| error: bad\.txt must not land\n/)
  expect(text).toMatch(
    / {4}passed after \d+\.\d s: sh check\.sh\n {6}\| all 3 checks passed\n {2}Queue: \d+\.\d s from done to verdict, 1 check, 0 thrown away\n/,
  )
})

test.concurrent("a task never handed to the queue has no evidence; one without a check says none is configured", async () => {
  await using dir = await tempRepo({ "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") }]) })
  expect(JSON.parse((await flow(dir.path, ["show", "a", "--json"])).stdout).evidence).toBeNull()
  expect((await flow(dir.path, ["show", "a"])).stdout).not.toContain("Evidence")
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const e = TaskEvidence.assert(JSON.parse((await flow(dir.path, ["show", "a", "--json"])).stdout).evidence)
  expect([e.state, e.check, e.checks, e.diff.files]).toEqual(["landed", null, [], [{ path: "a.txt", insertions: 1, deletions: 0 }]])
  expect((await trailers(dir.path))["Flow-Check"]).toBe("none")
  expect((await flow(dir.path, ["show", "a"])).stdout).toContain("  Checks: none configured\n")
})

type Backend = { name: string; enabled: boolean; open: () => Promise<{ state: RunState } & AsyncDisposable> }

const BACKENDS: Backend[] = [
  {
    name: "SQLite",
    enabled: true,
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), "flow-evidence-"))
      const state = await openStateDb(projectAt(dir))
      return { state, [Symbol.asyncDispose]: async () => (state.close(), rmSync(dir, { recursive: true, force: true })) }
    },
  },
  {
    name: "PostgreSQL",
    enabled: HAVE_POSTGRES,
    open: async () => {
      const db = await freshDatabase()
      const setting = sharedSetting(projectAt("/tmp"), parseUrl(db.url, "test"), "p", undefined)
      const text = "tasks:\n  - {id: t, title: T, status: todo, instructions: x}\n"
      await database(setting).run((sql) => sql.begin((tx) => createProject(tx, setting, Bun.YAML.parse(text) as never, text)))
      const state = await PgRunState.open(database({ ...setting, machine: "laptop-1" }), { ...setting, machine: "laptop-1" })
      return { state, [Symbol.asyncDispose]: async () => (state.close(), await db[Symbol.asyncDispose]()) }
    },
  },
]

describe.each(BACKENDS.filter((b) => b.enabled || process.env.CI === "1"))("the evidence in the $name run state", (backend) => {
  test.concurrent("is recorded at the hand-over and read back with the checks since the agent's start and the queue's verdict", async () => {
    await using repo = await tempRepo({ "a.txt": "a\n" })
    await git(repo.path, ["switch", "-q", "-c", "flow/t"])
    await Bun.write(join(repo.path, "b.txt"), "b\nb\n")
    await git(repo.path, ["add", "b.txt"])
    await git(repo.path, ["-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "b"])
    const head = (await git(repo.path, ["rev-parse", "HEAD"])).trim()
    const target = (await git(repo.path, ["rev-parse", "HEAD^"])).trim()
    await using open = await backend.open()
    const db = open.state
    const check = (passed: boolean) => ({
      taskId: "t",
      target: "main",
      command: "make test",
      passed,
      code: passed ? 0 : 2,
      timedOut: false,
      seconds: 1.5,
      output: passed ? "ok" : "boom",
    })
    expect(await readEvidence(db, "t")).toBeNull()
    // A check of an earlier start of the task is not this landing's.
    await db.events.append({ kind: "check.result", task_id: "t", data: check(false) })
    await db.events.append({ kind: "task.start", task_id: "t", agent: "claude-1", data: { resumed: false } })
    await db.events.append({ kind: "agent.usage", task_id: "t", agent: "claude-1", data: { inputTokens: 100, outputTokens: 20, costUsd: 0.5 } })
    await db.events.append({ kind: "check.result", task_id: "t", data: check(false) })
    await db.events.append({ kind: "fix", task_id: "t", data: { attempt: 1 } })
    const h = { taskId: "t", repo: repo.path, branch: "flow/t", head, target: "main", targetCommit: target, keepOut: [], check: "make test" }
    const landing = await recordEvidence(db, h)
    expect(landing).toEqual({
      branch: "flow/t",
      target: "main",
      head,
      diff: { files: [{ path: "b.txt", insertions: 2, deletions: 0 }], insertions: 2, deletions: 0 },
      check: "make test",
      agent: "claude-1",
      attempts: 1,
      fix_rounds: 1,
      usage: { input_tokens: 100, output_tokens: 20, cost_usd: 0.5 },
      agent_seconds: null,
    })
    const waiting = await readEvidence(db, "t")
    expect(waiting).toMatchObject({ ...landing, task: "t", state: "waiting", commit: null, queue: null })
    expect(waiting!.checks.map((c) => c.passed)).toEqual([false])
    await db.events.append({ kind: "check.result", task_id: "t", data: check(true) })
    await db.events.append({ kind: "merge", task_id: "t", data: { taskId: "t", commit: "c0ffee" } })
    await db.events.append({ kind: "queue.end", task_id: "t", data: { taskId: "t", outcome: "landed", seconds: 4.2, checks: 1, thrown: 0 } })
    const landed = TaskEvidence.assert(await readEvidence(db, "t"))
    expect(landed).toMatchObject({ state: "landed", commit: "c0ffee", queue: { seconds: 4.2, checks: 1, thrown: 0 } })
    expect(landed.checks.map(({ at: _, ...c }) => c)).toEqual([
      { command: "make test", passed: false, exit_code: 2, timed_out: false, seconds: 1.5, output_tail: "boom" },
      { command: "make test", passed: true, exit_code: 0, timed_out: false, seconds: 1.5, output_tail: "ok" },
    ])
  })
})
