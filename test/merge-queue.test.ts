// The verified merge queue end to end (docs/RUN.md, "Merge queue"): real repositories, the offline
// `script` agent, flow.yaml's `verify` check run on every merge before main moves, and the agent sent
// back to fix a failed check or a conflict (its ```sh fix blocks).
import { expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { background, flow, git, pidsOf, tasksYaml, tempRepo, until } from "./helpers"
import { mergesPerTask, SLOW_FAILURE_CHECK, slowFailureTasks, uncheckedCommits } from "./queue-helpers"

const sh = (lines: string, label = "") => `\`\`\`sh${label ? ` ${label}` : ""}\n${lines}\n\`\`\``
const GIT_ID = `git -c user.name=agent -c user.email=agent@flow.invalid`

// Every name a file under calls/ uses must be defined in funcs.txt: a rename and a new caller each pass
// it alone, and break it together.
const CHECK = `set -e
for f in calls/*; do grep -qx "$(cat "$f")" funcs.txt || { echo "error: $f calls $(cat "$f"), which funcs.txt does not define"; exit 1; }; done
echo "check passed"
`

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

/** Runs check.sh on every commit main ever pointed at (its first parents): each must pass. */
async function everyTargetCommitPasses(repo: string): Promise<string[]> {
  const failed: string[] = []
  for (const commit of (await git(repo, ["rev-list", "--first-parent", "main"])).trim().split("\n")) {
    const dir = mkdtempSync(join(tmpdir(), "flow-history-"))
    try {
      const archive = Bun.spawnSync(["git", "archive", commit], { cwd: repo })
      Bun.spawnSync(["tar", "-x", "-C", dir], { stdin: archive.stdout })
      if (Bun.spawnSync(["sh", "check.sh"], { cwd: dir }).exitCode !== 0) failed.push(commit)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return failed
}

const waitMerged = (id: string) => `until git -C "$FLOW_PROJECT" log main --format=%s | grep -q "^Merge flow/${id}:"; do sleep 0.05; done`

test.concurrent("two tasks that merge cleanly but break the check together: the second is sent back with the failure and fixes it", async () => {
  await using dir = await tempRepo({
    "check.sh": CHECK,
    "funcs.txt": "greet\n",
    "calls/main.txt": "greet\n",
    "flow.yaml": "verify: { command: sh check.sh, timeout: 1m }\n",
    "tasks.yaml": tasksYaml([
      { id: "rename", title: "Rename greet to welcome", status: "todo", instructions: sh("echo welcome > funcs.txt\necho welcome > calls/main.txt") },
      // It starts from main before the rename and is finished only after the rename landed.
      {
        id: "caller",
        title: "Call greet",
        status: "todo",
        instructions: `${sh(`echo greet > calls/extra.txt\n${waitMerged("rename")}`)}\n${sh(`${GIT_ID} merge -q --no-edit "$FLOW_TARGET"\nhead -1 funcs.txt > calls/extra.txt\necho "$FLOW_FIX_OUTPUT" > "$FLOW_PROJECT/.flow/fix-output"`, "fix")}`,
      },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script"])
  const out = dir.read(".flow/fix-output")
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ rename: "done", caller: "done" })
  expect(r.stdout).toContain("caller: queue main #1 failed")
  expect(r.stdout).toContain("caller: sent back to its agent (attempt 1 of 2): the check failed (exit 1)")
  expect(out).toContain("error: calls/extra.txt calls greet, which funcs.txt does not define")
  expect(r.stdout).not.toContain("rename: sent back")
  // The queue's report, once, before the run's last line: caller's first candidate failed, its second landed.
  expect(r.stdout).toMatch(
    /run: merge queue into main: 2 landed, 1 failed; done to landed p50 \d+\.\d s, p95 \d+\.\d s, longest \d+\.\d s \((rename|caller)\); 1\.00 checks per merge, 0 thrown away\n.*run: finished/,
  )
  expect(dir.read("calls/extra.txt")).toBe("welcome\n")
  expect((await git(dir.path, ["log", "--merges", "--first-parent", "--format=%s", "main"])).trim().split("\n")).toEqual([
    "Merge flow/caller: caller",
    "Merge flow/rename: rename",
  ])
  expect(await everyTargetCommitPasses(dir.path)).toEqual([])
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("M tasks.yaml")
  expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
  // Both landed, the one that failed once included: the queue the dashboard reads back is empty.
  expect(JSON.parse((await flow(dir.path, ["dashboard", "--json"])).stdout).queue).toEqual([])
})

test.concurrent("a conflict goes to the agent first: it merges main into its branch and resolves it (no check configured)", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "first", title: "First", status: "todo", instructions: sh("echo first > same.txt") },
      {
        id: "second",
        title: "Second",
        status: "todo",
        instructions: `${sh(`echo second > same.txt\n${waitMerged("first")}`)}\n${sh(`${GIT_ID} merge -q "$FLOW_TARGET" || true\nprintf 'first\\nsecond\\n' > same.txt\ngit add same.txt\n${GIT_ID} commit -q --no-edit`, "fix")}`,
      },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toContain("second: sent back to its agent (attempt 1 of 2): merge conflict in same.txt")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ first: "done", second: "done" })
  expect(dir.read("same.txt")).toBe("first\nsecond\n")
})

test.concurrent("a check that times out fails the merge: the task is blocked with the reason and main stays where it was", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "verify: { command: 'if [ -f slow.txt ]; then sleep 60; fi', timeout: 1s }\nfix_attempts: 0\n",
    "tasks.yaml": tasksYaml([{ id: "slow", title: "Slow", status: "todo", instructions: sh("touch slow.txt") }]),
  })
  const before = (await git(dir.path, ["rev-parse", "main"])).trim()
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect(r.code).toBe(4)
  expect(r.stdout).toContain("slow: queue main #1 failed")
  expect(r.stdout).toContain("(the check timed out after 1 s)")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ slow: "blocked" })
  expect(dir.read("tasks.yaml")).toContain("merge of flow/slow into main failed: the check timed out after 1 s")
  expect((await git(dir.path, ["rev-parse", "main"])).trim()).toBe(before)
  // The check's scratch worktree is gone, and so is its process group (no `sleep 60` of this check left).
  expect(
    (await git(dir.path, ["worktree", "list"]))
      .trim()
      .split("\n")
      .filter((l) => l.includes("/verify/")),
  ).toEqual([])
  // The dashboard reads the queue the run left from the state database's queue events.
  expect(JSON.parse((await flow(dir.path, ["dashboard", "--json"])).stdout).queue).toEqual([
    {
      target: "main",
      candidates: [
        {
          task: "slow",
          state: "failed",
          reason: "the check timed out after 1 s",
          on_top_of: [],
          seconds: expect.any(Number),
          machine: null,
          since: expect.any(String),
        },
      ],
    },
  ])
})

test.concurrent("kill -9 during a check, then a rerun: main moves once, to a merge whose check ran", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "verify: { command: sh gate.sh, timeout: 1m }\n",
    // The check reports the commit it checks, then waits for the test's go (a file outside the repo).
    "gate.sh": `git rev-parse HEAD >> "$GATE/checked"\nwhile [ ! -f "$GATE/go" ]; do sleep 0.05; done\n`,
    "tasks.yaml": tasksYaml([{ id: "work", title: "Work", status: "todo", instructions: sh('echo ran >> "$GATE/ran"\necho done > work.txt') }]),
  })
  const gate = mkdtempSync(join(tmpdir(), "flow-gate-"))
  try {
    const before = (await git(dir.path, ["rev-parse", "main"])).trim()
    const first = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { GATE: gate })
    await first.waitFor("work: queue main #1 checking")
    first.proc.kill(9)
    await first.done()
    expect((await git(dir.path, ["rev-parse", "main"])).trim()).toBe(before)
    Bun.write(join(gate, "go"), "")
    const again = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { env: { GATE: gate } })
    expect({ code: again.code, stderr: again.stderr, out: again.code ? again.stdout : "" }).toEqual({ code: 0, stderr: "", out: "" })
    expect(again.stdout).toContain("work: queue main #1 passed")
    expect((await git(dir.path, ["log", "--merges", "--format=%s", "main"])).trim()).toBe("Merge flow/work: work")
    const main = (await git(dir.path, ["rev-parse", "main"])).trim()
    const checked = readFileSync(join(gate, "checked"), "utf8").trim().split("\n")
    expect(checked.at(-1)).toBe(main) // the rerun checked exactly what main now holds
    expect(dir.read("work.txt")).toBe("done\n")
    expect(readFileSync(join(gate, "ran"), "utf8")).toBe("ran\n") // the finished work was landed, not done again
    expect(existsSync(join(dir.path, ".flow", "verify")) ? (await git(dir.path, ["worktree", "list"])).trim().split("\n") : [""]).toHaveLength(1)
  } finally {
    Bun.write(join(gate, "go"), "")
    rmSync(gate, { recursive: true, force: true })
  }
})

test.concurrent("what a check starts dies with its run: its group at kill -9 of flow, what it put in a session of its own at the next run's start", async () => {
  // Markers no other test uses: a sleep in the check's process group, and one that setsid takes out of it.
  const tag = (900 + Math.random() * 99).toFixed(6)
  const [inGroup, ownSession] = [`sleep ${tag}1`, `sleep ${tag}2`]
  await using dir = await tempRepo({
    "flow.yaml": "verify: { command: sh gate.sh, timeout: 1m }\n",
    "gate.sh": `[ -f "$GATE/go" ] && exit 0\n${inGroup} &\nsetsid -f ${ownSession} </dev/null >/dev/null 2>&1\nwait\n`,
    "tasks.yaml": tasksYaml([{ id: "work", title: "Work", status: "todo", instructions: sh("echo done > work.txt") }]),
  })
  const gate = mkdtempSync(join(tmpdir(), "flow-gate-"))
  const runs: ReturnType<typeof background>[] = []
  try {
    const first = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { GATE: gate })
    runs.push(first)
    await first.waitFor("work: queue main #1 checking")
    await until(() => pidsOf(inGroup).length > 0 && pidsOf(ownSession).length > 0, 60_000)
    // Recorded like an agent's group: the next run's reaper kills it even where no guard leads it.
    const [sleeper] = pidsOf(inGroup)
    const pgid = Number(readFileSync(`/proc/${sleeper}/stat`, "utf8").split(") ")[1].split(" ")[2])
    const db = new Database(join(dir.path, ".flow", "state.db"), { readonly: true })
    expect(db.query("SELECT pgid, task_id FROM agent_groups").all()).toContainEqual({ pgid, task_id: "work" })
    db.close()
    first.proc.kill("SIGKILL")
    await first.done()
    await until(() => pidsOf(inGroup).length === 0)
    expect(pidsOf(inGroup)).toEqual([]) // its group died with flow, at once
    expect(pidsOf(ownSession)).toHaveLength(1) // out of the group: the next start kills it
    Bun.write(join(gate, "go"), "")
    const again = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { GATE: gate })
    runs.push(again)
    await again.waitFor("stopped what a dead run left running for work")
    await until(() => pidsOf(ownSession).length === 0)
    expect(pidsOf(ownSession)).toEqual([])
    const r = await again.done()
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  } finally {
    for (const run of runs) run.proc.kill("SIGKILL") // a failed expectation must not leave a run behind
    for (const pid of [...pidsOf(inGroup), ...pidsOf(ownSession)]) process.kill(pid, "SIGKILL")
    rmSync(gate, { recursive: true, force: true })
  }
})

test.concurrent("a check's `git worktree add` killed with the run's whole process group: the next start unlocks and prunes its registration, and the task lands", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "verify: { command: 'true', timeout: 1m }\n",
    "tasks.yaml": tasksYaml([{ id: "work", title: "Work", status: "todo", instructions: sh("echo done > work.txt") }]),
  })
  // git runs this hook while it adds the check's worktree (its HEAD written, the registration locked
  // "initializing", no file checked out yet): it kills the run's process group, git with it, once.
  const once = `${dir.path}.killed`
  dir.write(
    ".git/hooks/reference-transaction",
    `#!/bin/sh\n[ "$1" = prepared ] || exit 0\ngrep -q /.flow/verify/ "$GIT_DIR/gitdir" 2>/dev/null || exit 0\n[ -e '${once}' ] && exit 0\ntouch '${once}'\nkill -9 -"$FLOW_GIT_OWNER"\n`,
  )
  chmodSync(dir.file(".git/hooks/reference-transaction"), 0o755)
  try {
    // setsid: flow leads a process group of its own, which the hook kills.
    const first = await background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], {}, ["setsid"]).done()
    expect(first.code).toBe(137)
    const scratch = (await git(dir.path, ["worktree", "list", "--porcelain"])).split("\n\n").filter((b) => b.includes("/.flow/verify/"))
    expect(scratch).toHaveLength(1)
    expect(scratch[0]).toContain("locked initializing")
    const again = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "" })
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ work: "done" })
    expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
    const verify = join(dir.path, ".flow", "verify")
    expect(
      readdirSync(verify)
        .flatMap((q) => readdirSync(join(verify, q)))
        .filter((n) => n !== ".repo"),
    ).toEqual([])
  } finally {
    rmSync(once, { force: true })
  }
})

test.concurrent("a check's scratch worktree whose removal was cut off (its folder gone, its registration left) is pruned at the next start", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "verify: { command: 'true', timeout: 1m }\n",
    "tasks.yaml": tasksYaml([{ id: "work", title: "Work", status: "todo", instructions: sh("echo done > work.txt") }]),
  })
  const first = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
  expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" })
  // What `git worktree remove` killed between deleting the folder and its registration leaves.
  const [queue] = readdirSync(join(dir.path, ".flow", "verify"))
  const scratch = join(dir.path, ".flow", "verify", queue, "work-1-x")
  await git(dir.path, ["worktree", "add", "-q", "--detach", scratch, "main"])
  rmSync(scratch, { recursive: true, force: true })
  const again = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
  expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "" })
  expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
})

test.concurrent("killed right after the queue moved main (before anything was recorded): the rerun marks it done without a second merge or check", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "verify: { command: 'true', timeout: 1m }\n",
    "tasks.yaml": tasksYaml([{ id: "work", title: "Work", status: "todo", instructions: sh("echo done > work.txt") }]),
  })
  const first = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { env: { FLOW_TEST_KILL_AT: "after-merge" } })
  expect(first.code).not.toBe(0)
  expect(first.stdout).toContain("work: queue main #1 passed")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ work: "in_progress" })
  const again = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
  expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "" })
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ work: "done" })
  expect(again.stdout).not.toContain("checking")
  expect((await git(dir.path, ["log", "--merges", "--format=%s", "main"])).trim()).toBe("Merge flow/work: work")
})

test.concurrent("a slow failing check ahead of a fast passing one: only the failing task goes back to its agent, the one checked on top of it is rebuilt and lands (10 runs)", async () => {
  const once = async (run: number) => {
    const gate = mkdtempSync(join(tmpdir(), "flow-gate-"))
    try {
      await using dir = await tempRepo({
        "check.sh": SLOW_FAILURE_CHECK,
        "flow.yaml": "verify: { command: sh check.sh, timeout: 1m }\nfix_attempts: 0\n",
        "tasks.yaml": tasksYaml(slowFailureTasks(sh)),
      })
      const start = (await git(dir.path, ["rev-parse", "main"])).trim()
      const r = await flow(dir.path, ["run", "--headless", "--agents", "3", "--cli", "script"], { env: { GATE: gate } })
      const outcome = { run, code: r.code, stderr: r.stderr, statuses: statuses(dir.read("tasks.yaml")) }
      expect(outcome).toEqual({ run, code: 4, stderr: "", statuses: { a: "done", b: "blocked", c: "done" } })
      // c was checked on top of b; whatever that check said was never taken for c's own verdict.
      expect(r.stdout).toMatch(/c: queue main #\d checking \(on top of (a, )?b\)/)
      expect(r.stdout).toMatch(/c: queue main #\d waiting \(rebuilt on (a|main)\)/)
      expect(r.stdout).not.toContain("merge of flow/c into main failed")
      expect(dir.read("tasks.yaml")).toContain("merge of flow/b into main failed: the check failed (exit 1)")
      expect(await mergesPerTask(dir.path, "main")).toEqual({ a: 1, c: 1 })
      expect(await uncheckedCommits(dir.path, "main", start, SLOW_FAILURE_CHECK)).toEqual([])
    } finally {
      rmSync(gate, { recursive: true, force: true })
    }
  }
  // Three runs at a time: each mostly waits for its checks.
  for (let run = 1; run <= 10; run += 3) await Promise.all([run, run + 1, run + 2].filter((n) => n <= 10).map(once))
}, 300_000)
