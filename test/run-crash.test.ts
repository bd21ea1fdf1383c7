// `flow run` under crashes (issue 11): random SIGKILLs, a kill placed between a merge and the status write
// (the FLOW_TEST_KILL_AT hook of lib/run/landing.ts), stdout closed by `| head -1`, a conflict resolved by a
// person, and a tasks.yaml that is invalid for a moment. After each, a rerun to the end must leave every
// task done, its work run exactly once (a log outside the repository), merged exactly once, and nothing of
// the killed runs alive or left on disk.
import { expect, test } from "bun:test"
import { chmodSync, existsSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { background, flow, flowArgv, git, tasksYaml, tempRepo, type TempDir } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

const statuses = (yaml: string): Record<string, string> =>
  Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

/**
 * A project of `n` tasks (chains of dependents, so dependents wait for merges), each appending its id to a
 * log outside the repository once its work is done. `sleep` is how long each one works.
 */
async function project(n: number, sleep = "0.2"): Promise<{ dir: TempDir; log: string }> {
  const dir = await tempRepo({ ".gitignore": ".flow/\n" })
  const log = `${dir.path}.log`
  dir.write(
    "tasks.yaml",
    tasksYaml(
      Array.from({ length: n }, (_, i) => ({
        id: `t${i}`,
        title: `Task ${i}`,
        status: "todo",
        ...(i >= 3 ? { depends_on: [`t${i - 3}`] } : {}),
        instructions: sh(`sleep ${sleep}\necho t${i} > t${i}.txt\necho t${i} >> '${log}'`),
      })),
    ),
  )
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tasks"])
  return { dir, log }
}

/** `fn` on a fresh project of `n` tasks (project above); the run log outside the repository goes afterwards. */
async function inProject(n: number, fn: (dir: TempDir, log: string) => Promise<void>): Promise<void> {
  const { dir, log } = await project(n)
  await using _ = dir
  try {
    await fn(dir, log)
  } finally {
    rmSync(log, { force: true })
  }
}

/** Live processes working inside `dir` (their cwd is there): what a killed run could have left. */
function processesIn(dir: string): string[] {
  const found: string[] = []
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue
      if (readlinkSync(`/proc/${pid}/cwd`).startsWith(dir)) found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")}`)
    } catch {}
  }
  return found
}

/** The run to the end, then every promise of "done means merged, exactly once". */
async function finishAndCheck(dir: TempDir, log: string, n: number) {
  const final = background(dir.path, ["run", "--agents", "3", "--cli", "script", "--headless"])
  // A final run that never ends says where it stands before the test's timeout ends it without a word.
  const hung = setTimeout(() => console.error(`the final run still runs after 120 s:\n${final.output()}\n${dir.read("tasks.yaml")}`), 120_000)
  const last = await final.done()
  clearTimeout(hung)
  // On a failure, the run's own account and the tasks' notes say which kill point recovery missed.
  const account = async () => `${last.stderr}\n${last.stdout}\n${dir.read("tasks.yaml")}\n${await git(dir.path, ["worktree", "list", "--porcelain"])}`
  if (last.code !== 0 || last.stderr !== "") throw new Error(`the final run exited ${last.code}\n${await account()}`)
  try {
    await checkFinished(dir, log, n)
  } catch (e) {
    throw new Error(`${(e as Error).message}\nThe final run:\n${await account()}`)
  }
  return last
}

async function checkFinished(dir: TempDir, log: string, n: number) {
  const ids = Array.from({ length: n }, (_, i) => `t${i}`)
  expect(statuses(dir.read("tasks.yaml"))).toEqual(Object.fromEntries(ids.map((id) => [id, "done"])))
  const ran = readFileSync(log, "utf8").trim().split("\n").sort()
  expect(ran).toEqual([...ids].sort())
  const merges = (await git(dir.path, ["log", "--merges", "--format=%s"])).trim().split("\n").sort()
  expect(merges).toEqual(ids.map((id) => `Merge flow/${id}: ${id}`).sort())
  for (const id of ids) expect(dir.read(`${id}.txt`)).toBe(`${id}\n`)
  expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
  expect(existsSync(dir.file(".flow/worktrees")) ? readdirSync(dir.file(".flow/worktrees")) : []).toEqual([])
  expect(existsSync(dir.file(".flow/finished")) ? readdirSync(dir.file(".flow/finished")) : []).toEqual([])
  expect(processesIn(dir.path)).toEqual([])
}

// Random SIGKILLs of flow alone, and of its whole process group (its git dies mid-operation too, leaving
// its locks), with and without a check; a person's uncommitted edit is in the checkout all along.
test.concurrent.each([
  { what: "flow alone", group: false, verify: false },
  { what: "its whole process group, without verify", group: true, verify: false },
  { what: "its whole process group, with verify", group: true, verify: true },
])(
  "random SIGKILLs of $what, each followed by another run: every task done, run once, merged once, nothing left, the person's edit kept",
  async ({ what, group, verify }) => {
    const n = 9
    const { dir, log } = await project(n)
    await using _ = dir
    if (verify) dir.write("flow.yaml", "verify: { command: 'test -f t0.txt || test ! -f t3.txt' }\n")
    // A file of the person's, committed, then edited and not committed: a reset, a checkout or a stash loses it.
    dir.write("person.txt", "committed\n")
    await git(dir.path, ["add", "person.txt"])
    await git(dir.path, ["-c", "user.name=p", "-c", "user.email=p@p", "commit", "-qm", "person"])
    dir.write("person.txt", "my uncommitted edit\n")
    const seed = Number(process.env.FLOW_CRASH_SEED ?? Date.now() % 100_000)
    // Said before the kills start: a run that hangs until the test's timeout throws nothing that could carry it.
    console.error(`random SIGKILLs of ${what}: FLOW_CRASH_SEED=${seed}`)
    let state = seed
    const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    // Each killed run's output, said when the test runs long: a run that waits without a line is found there.
    const outputs: (() => string)[] = []
    const slow = setTimeout(
      () => console.error(`seed ${seed}: still running after 150 s; the killed runs said:\n${outputs.map((o) => o()).join("\n---\n")}`),
      150_000,
    )
    try {
      for (let kill = 0; kill < 10; kill++) {
        // setsid makes flow the leader of a process group of its own: the group kill reaches every git it runs.
        const run = background(dir.path, ["run", "--agents", "3", "--cli", "script", "--headless"], {}, group ? ["setsid"] : [])
        outputs.push(run.output)
        // Killed after a random number of its log lines: anywhere from start-up to a merge.
        const lines = 1 + Math.floor(random() * 14)
        // (A machine too slow to print that many lines in a minute gets its kill then: still a kill.)
        await Promise.race([run.waitFor((out) => out.split("\n").length > lines).catch(() => {}), run.proc.exited])
        if (group) {
          try {
            process.kill(-run.proc.pid, "SIGKILL")
          } catch {}
        } else run.proc.kill("SIGKILL")
        await run.done()
        expect(dir.read("person.txt")).toBe("my uncommitted edit\n")
      }
      await finishAndCheck(dir, log, n)
      expect(dir.read("person.txt")).toBe("my uncommitted edit\n")
      // Nothing staged or reversed in the person's index: only flow's status writes and the person's file.
      expect((await git(dir.path, ["status", "--porcelain"])).split("\n").filter(Boolean).sort()).toEqual(
        [" M tasks.yaml", ...(verify ? ["?? flow.yaml"] : []), " M person.txt"].sort(),
      )
    } catch (e) {
      throw new Error(`seed ${seed} (rerun with FLOW_CRASH_SEED=${seed}): ${(e as Error).message}`)
    } finally {
      clearTimeout(slow)
      rmSync(log, { force: true })
    }
  },
  240_000,
)

test.concurrent("kills placed right after the target moved, after the checkout followed, and between the journaled merge and the status write: no task runs or merges twice", async () => {
  const n = 3
  const { dir, log } = await project(n)
  await using _ = dir
  try {
    let killed = 0
    for (let i = 0; i < n + 4; i++) {
      const point = ["after-merge", "after-read-tree", "before-done"][i % 3]
      // One agent: one landing per move, so each run reaches its kill point (two agents' landings would move
      // the target together, and a run could find nothing left to kill it at).
      const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"], { env: { FLOW_TEST_KILL_AT: point } })
      if (r.code === 0) break
      expect(r.code).toBe(137) // SIGKILL, by the hook
      killed++
    }
    expect(killed).toBeGreaterThanOrEqual(3)
    await finishAndCheck(dir, log, n)
  } finally {
    rmSync(log, { force: true })
  }
}, 180_000)

test.concurrent("a run killed after its merge was journaled, before tasks.yaml: the next run marks it done, not 'finished with no changes'", () =>
  inProject(1, async (dir, log) => {
    const first = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"], { env: { FLOW_TEST_KILL_AT: "before-done" } })
    expect(first.code).toBe(137)
    const last = await finishAndCheck(dir, log, 1)
    expect(last.stdout).not.toContain("finished with no changes")
  }))

/**
 * A reference-transaction hook (git runs it while it holds the target's ref lock, after flow's two-tree read
 * moved the person's checkout) whose first move of main runs `action` there, once: kills that stop the run,
 * and the git moving the branch, at that instant.
 */
function onFirstMove(dir: TempDir, action: string): string {
  const once = `${dir.path}.killed`
  dir.write(
    ".git/hooks/reference-transaction",
    `#!/bin/sh\n[ "$1" = prepared ] || exit 0\ngrep -q ' refs/heads/main$' || exit 0\n[ -e '${once}' ] && exit 0\ntouch '${once}'\n${action}\n`,
  )
  chmodSync(dir.file(".git/hooks/reference-transaction"), 0o755)
  return once
}

// Two ends of a run while git moves main (the checkout already follows), each made by that git's hook: the
// next run must leave every task merged exactly once, the person's checkout neither reversed nor staged.
test.concurrent.each([
  {
    what: "the run and its git killed while main moves (its lock left): the next run finishes the move, removes the lock, merges nothing twice",
    hook: 'kill -9 "$FLOW_GIT_OWNER" $PPID',
    exit: 137,
    said: /a move of main was cut off/,
  },
  {
    // A terminal's Ctrl-C goes to the whole foreground group: flow, its git, the hook.
    what: "Ctrl-C reaching git while main moves (one process group) stops the run; the task is not blocked, and the next run lands it",
    hook: 'kill -INT "$FLOW_GIT_OWNER" $PPID $$',
    exit: 130,
    said: undefined,
  },
])(
  "$what",
  async ({ hook, exit, said }) => {
    const n = 3
    const { dir, log } = await project(n)
    await using _ = dir
    dir.write("person.txt", "my uncommitted edit\n")
    const once = onFirstMove(dir, hook)
    try {
      const first = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
      expect(first.code).toBe(exit)
      expect(Object.values(statuses(dir.read("tasks.yaml")))).not.toContain("blocked")
      const last = await finishAndCheck(dir, log, n)
      if (said) expect(last.stdout).toMatch(said)
      expect(dir.read("person.txt")).toBe("my uncommitted edit\n")
      expect((await git(dir.path, ["status", "--porcelain"])).split("\n").filter(Boolean).sort()).toEqual([" M tasks.yaml", "?? person.txt"])
    } finally {
      rmSync(log, { force: true })
      rmSync(once, { force: true })
    }
  },
  180_000,
)

test.concurrent("flow run | head -1: the closed pipe stops the run like Ctrl-C (exit 130, agents stopped, tasks resumable)", async () => {
  const n = 3
  const { dir, log } = await project(n, "5")
  await using _ = dir
  try {
    const quoted = flowArgv()
      .map((a) => `'${a}'`)
      .join(" ")
    const proc = Bun.spawn(["bash", "-c", `${quoted} run --agents 3 --cli script --headless | head -1; echo "exit \${PIPESTATUS[0]}"`], {
      cwd: dir.path,
      env: { ...process.env, NO_COLOR: "1", FLOW_PROJECT: "" },
      stdout: "pipe",
      stderr: "pipe",
    })
    const out = await new Response(proc.stdout).text()
    await proc.exited
    expect(out).toMatch(/^\S+ run: 3 tasks, agents script-1, script-2, script-3, merging into main\nexit 130\n$/)
    expect(processesIn(dir.path)).toEqual([])
    expect(Object.values(statuses(dir.read("tasks.yaml"))).includes("done")).toBe(false)
    dir.write("tasks.yaml", dir.read("tasks.yaml").replaceAll("sleep 5", "sleep 0.1"))
    await finishAndCheck(dir, log, n)
  } finally {
    rmSync(log, { force: true })
  }
}, 180_000)

test.concurrent("a conflict resolved by a person and marked done is merged by the next run", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "first", title: "First", status: "todo", instructions: sh("echo first > same.txt") },
      { id: "second", title: "Second", status: "todo", instructions: sh("echo second > same.txt") },
      { id: "after", title: "After", status: "todo", depends_on: ["first", "second"], instructions: sh("cat same.txt > seen.txt") },
    ]),
    ".gitignore": ".flow/\n",
  })
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
  expect(r.code).toBe(4)
  const s = statuses(dir.read("tasks.yaml"))
  const loser = s.first === "blocked" ? "first" : "second"
  expect(s[loser]).toBe("blocked")
  expect(dir.read("tasks.yaml")).toContain(`run 'flow done ${loser}': the next 'flow run' merges it`)
  // The person resolves the conflict on the task's branch, in its worktree, and says it is done.
  const wt = dir.file(`.flow/worktrees/${loser}`)
  await git(wt, ["merge", "main"]).catch(() => {})
  writeFileSync(join(wt, "same.txt"), "both\n")
  await git(wt, ["add", "same.txt"])
  await git(wt, ["-c", "user.name=p", "-c", "user.email=p@p", "commit", "-qm", "resolved"])
  const done = await flow(dir.path, ["done", loser])
  expect(done.code).toBe(0)
  expect(done.stderr).toContain(`note: ${loser}: flow/${loser} has commits not merged into main: the next 'flow run' merges it`)
  expect((await flow(dir.path, ["list"])).stdout).toContain(`[done, merge pending] ${loser}`)
  const next = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
  expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "" })
  expect(next.stdout).toContain(`${loser}: done, but flow/${loser} is not merged into main: merging it now`)
  expect(dir.read("same.txt")).toBe("both\n")
  expect(dir.read("seen.txt")).toBe("both\n") // the dependent started from the merged code
  const merges = (await git(dir.path, ["log", "--merges", "--format=%s"])).trim().split("\n")
  expect(merges.filter((m) => m === `Merge flow/${loser}: ${loser}`)).toHaveLength(1)
  expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
  expect((await flow(dir.path, ["list"])).stdout).not.toContain("merge pending")
}, 180_000)

test.concurrent("a tasks.yaml invalid for a moment: the run says what and where, waits with its last valid view and applies what finished meanwhile", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\n" })
  const saved = `${dir.path}.saved`
  // The first task's script breaks tasks.yaml as a half-saved edit would, keeping the good text aside.
  dir.write(
    "tasks.yaml",
    tasksYaml([
      {
        id: "breaks",
        title: "Breaks",
        status: "todo",
        // Replaced whole (a rename), so that the run reads the broken text, never an empty file on its way.
        instructions: sh(
          `cp "$FLOW_PROJECT/tasks.yaml" '${saved}'\necho 'tasks: [' > '${saved}.broken'\nmv '${saved}.broken' "$FLOW_PROJECT/tasks.yaml"\necho x > x.txt`,
        ),
      },
      { id: "next", title: "Next", status: "todo", depends_on: ["breaks"], instructions: sh("echo y > y.txt") },
    ]),
  )
  try {
    const run = background(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
    await run.waitFor("keeping the last valid view")
    writeFileSync(`${saved}.tmp`, readFileSync(saved))
    renameSync(`${saved}.tmp`, dir.file("tasks.yaml"))
    const r = await run.done()
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout.match(/keeping the last valid view/g)).toHaveLength(1)
    // What is wrong and where, not the first line of a report whose rest was cut ("the first:: keeping").
    expect(r.stdout).toContain(
      `run: tasks.yaml is invalid (1 error, 0 warnings); the first: YAML: Flow sequence in block collection must be sufficiently indented and end with a ], at ${dir.file("tasks.yaml")}:2:1: keeping the last valid view,`,
    )
    expect(r.stdout).toContain("run: tasks.yaml is valid again: going on")
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ breaks: "done", next: "done" })
    expect([dir.read("x.txt"), dir.read("y.txt")]).toEqual(["x\n", "y\n"])
  } finally {
    rmSync(saved, { force: true })
  }
}, 180_000)

/** A file of main that no task touches: whatever is left of a worktree, it must stay. */
async function keepFile(dir: TempDir) {
  dir.write("keep.txt", "kept\n")
  await git(dir.path, ["add", "keep.txt"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "keep"])
}

/**
 * A done task's worktree left as an interrupted `git worktree remove` leaves it (Ctrl-C reaches git too):
 * part of its files deleted, or its `.git` file among them. The next run removes what is left and commits
 * nothing from it: neither the deletions onto the task's branch (merged, they would delete the files from
 * main) nor, through a missing `.git`, the person's own changes in the main checkout.
 */
test.concurrent.each(["files", ".git"])(
  "a done task's worktree half removed (%s gone) is cleaned up; nothing of it is committed or merged",
  async (gone) => {
    const { dir, log } = await project(1)
    await using _ = dir
    try {
      await keepFile(dir)
      const first = await flow(dir.path, ["run", "--cli", "script", "--headless"])
      expect(first.code).toBe(0)
      const head = (await git(dir.path, ["rev-parse", "HEAD"])).trim()
      // The worktree as a removal killed half way leaves it.
      const wt = dir.file(".flow/worktrees/t0")
      await git(dir.path, ["worktree", "add", wt, "flow/t0"])
      rmSync(join(wt, gone === "files" ? "keep.txt" : ".git"))
      if (gone === "files") rmSync(join(wt, "tasks.yaml"))
      dir.write("wip.txt", "a person's work in progress\n") // never flow's to commit
      const next = await flow(dir.path, ["run", "--cli", "script", "--headless"])
      expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "" })
      expect((await git(dir.path, ["rev-parse", "HEAD"])).trim()).toBe(head) // no commit, no merge
      expect(dir.read("keep.txt")).toBe("kept\n")
      expect(await git(dir.path, ["status", "--porcelain"])).toBe(" M tasks.yaml\n?? wip.txt\n") // the statuses flow wrote, and the person's file
      expect(existsSync(wt)).toBe(false)
      expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
    } finally {
      rmSync(log, { force: true })
    }
  },
  180_000,
)

// What a `git worktree add` killed half way leaves: the registration locked "initializing", and files missing
// (killed during its checkout), its `.git` file empty (killed while writing it: git refuses to remove such a
// worktree, "'.git' is not a .git file"), no folder at all (killed before it made one: git refuses to add
// it again, "a missing but locked worktree"), or a registration whose `commondir` is empty (killed while git
// wrote it: every `git worktree list` in the repository fails); the last three seen in the random-kill loop.
test.concurrent.each([
  { what: "files missing", emptyDotGit: false, folder: true, admin: ["commondir", "gitdir", "HEAD"] },
  { what: "its .git file empty", emptyDotGit: true, folder: true, admin: ["commondir", "gitdir", "HEAD"] },
  { what: "its folder missing", emptyDotGit: false, folder: false, admin: ["commondir", "gitdir", "HEAD"] },
  { what: "its registration's commondir empty", emptyDotGit: false, folder: true, admin: ["gitdir"] },
  { what: "its registration only locked", emptyDotGit: false, folder: false, admin: [] },
])(
  "a worktree that git never finished making (locked 'initializing', $what) is made again, not worked in",
  async ({ emptyDotGit, folder, admin }: { emptyDotGit: boolean; folder: boolean; admin: readonly string[] }) => {
    const { dir, log } = await project(1)
    await using _ = dir
    try {
      await keepFile(dir)
      const wt = dir.file(".flow/worktrees/t0")
      await git(dir.path, ["worktree", "add", "-b", "flow/t0", wt, "main"])
      await git(dir.path, ["worktree", "lock", "--reason", "initializing", wt])
      rmSync(join(wt, "keep.txt"))
      if (emptyDotGit) writeFileSync(join(wt, ".git"), "")
      if (!folder) rmSync(wt, { recursive: true, force: true })
      for (const file of ["commondir", "gitdir", "HEAD", "index", "logs", "refs", "ORIG_HEAD"])
        if (!admin.includes(file)) rmSync(dir.file(`.git/worktrees/t0/${file}`), { recursive: true, force: true })
      if (admin.includes("gitdir") && !admin.includes("commondir")) writeFileSync(dir.file(".git/worktrees/t0/commondir"), "")
      const r = await flow(dir.path, ["run", "--cli", "script", "--headless"])
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
      expect(dir.read("keep.txt")).toBe("kept\n")
      expect(dir.read("t0.txt")).toBe("t0\n")
      expect((await git(dir.path, ["log", "--format=%s", "-1", "--name-status", "HEAD^2"])).trim()).toBe("t0: Task 0\n\nA\tt0.txt")
    } finally {
      rmSync(log, { force: true })
    }
  },
  180_000,
)

test.concurrent("a task in progress whose worktree lost its .git is blocked with how to clear it; nothing is committed to the person's branch", async () => {
  const { dir, log } = await project(1)
  await using _ = dir
  try {
    const wt = dir.file(".flow/worktrees/t0")
    await git(dir.path, ["worktree", "add", "-b", "flow/t0", wt, "main"])
    rmSync(join(wt, ".git"))
    dir.write("tasks.yaml", dir.read("tasks.yaml").replace("status: todo", "status: in_progress"))
    await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "in progress"])
    const head = (await git(dir.path, ["rev-parse", "HEAD"])).trim()
    dir.write("wip.txt", "a person's work in progress\n")
    const r = await flow(dir.path, ["run", "--cli", "script", "--headless"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ t0: "blocked" })
    expect(dir.read("tasks.yaml")).toContain(
      `${wt} is not a git worktree of its own any more (its .git is missing: a removal cut off half way?): move what you need out of it, delete the folder, run 'git worktree prune', and run again`,
    )
    expect((await git(dir.path, ["rev-parse", "HEAD"])).trim()).toBe(head)
    expect(existsSync(join(wt, "t0.txt"))).toBe(false) // the agent never ran there
    expect(await git(dir.path, ["status", "--porcelain"])).toBe(" M tasks.yaml\n?? wip.txt\n")
  } finally {
    rmSync(log, { force: true })
  }
}, 180_000)

test.concurrent("lock files a killed git left in a task's worktree (index, HEAD, its branch) are removed before the task goes on", async () => {
  const { dir, log } = await project(1)
  await using _ = dir
  try {
    const wt = dir.file(".flow/worktrees/t0")
    await git(dir.path, ["worktree", "add", "-b", "flow/t0", wt, "main"])
    for (const lock of [".git/worktrees/t0/index.lock", ".git/worktrees/t0/HEAD.lock", ".git/refs/heads/flow/t0.lock"]) dir.write(lock, "")
    dir.write("tasks.yaml", dir.read("tasks.yaml").replace("status: todo", "status: in_progress"))
    const last = await finishAndCheck(dir, log, 1)
    expect(last.stdout).toContain("t0: removed the lock files a killed git left in its worktree\n")
  } finally {
    rmSync(log, { force: true })
  }
}, 180_000)

test.concurrent("a landed task's worktree whose removal a kill cut off after its folder went (its registration left) is pruned at the next start", () =>
  inProject(1, async (dir, log) => {
    await finishAndCheck(dir, log, 1)
    const wt = dir.file(".flow/worktrees/t0")
    await git(dir.path, ["worktree", "add", "-q", wt, "flow/t0"])
    rmSync(wt, { recursive: true, force: true })
    await finishAndCheck(dir, log, 1)
  }))

test.concurrent("the lock a killed `git worktree add -b` left on a branch it had not made yet is removed; the task runs", () =>
  inProject(1, async (dir, log) => {
    dir.write(".git/refs/heads/flow/t0.lock", "")
    const last = await finishAndCheck(dir, log, 1)
    expect(last.stdout).toContain("t0: removed flow/t0's lock file, left by a killed git\n")
  }))
