// Landing never touches the person's work (issue 20; docs/RUN.md, "Landing"): every merge is made off-tree,
// and the person's checkout moves only by a journaled two-tree read that git refuses when it would lose a
// change. Each test builds the person's state the way a person makes it (a merge in progress, an uncommitted
// edit, a stale git lock, an agent that detaches HEAD) in a real repository, runs the real CLI, and checks
// that the person's files, index and operation are as they left them and that done means merged.
import { expect, test } from "bun:test"
import { chmodSync, existsSync, readFileSync, rmSync } from "node:fs"
import { background, flow, git, tasksYaml, tempRepo, type TempDir } from "./helpers"
import { startView } from "./view-helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const RUN = ["run", "--agents", "2", "--cli", "script", "--headless"]
const ME = ["-c", "user.name=person", "-c", "user.email=p@p"]

const statuses = (yaml: string): Record<string, string> =>
  Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

/** A repository whose tasks.yaml is committed (as a team keeps it), with `tasks` and any other files. */
async function project(tasks: Record<string, unknown>[], files: Record<string, string> = {}): Promise<TempDir> {
  return tempRepo({ ".gitignore": ".flow/\n", ...files, "tasks.yaml": tasksYaml(tasks) })
}

const task = (id: string, script: string, extra: Record<string, unknown> = {}) => ({
  id,
  title: `Task ${id}`,
  status: "todo",
  instructions: sh(script),
  ...extra,
})
const onMain = async (dir: TempDir, file: string) => (await git(dir.path, ["show", `main:${file}`]).catch(() => undefined))?.trim()
const mergesOf = async (dir: TempDir, branch: string) =>
  (await git(dir.path, ["log", "--merges", "--format=%s", "main"])).split("\n").filter((s) => s.includes(`Merge ${branch}:`)).length

test.concurrent("case 1: a merge the person has in progress is never aborted; flow waits, names it, and lands once it is concluded", async () => {
  await using dir = await project([task("t1", "echo one > one.txt")], { "shared.txt": "base\n" })
  await git(dir.path, ["checkout", "-q", "-b", "person"])
  dir.write("shared.txt", "person\n")
  await git(dir.path, [...ME, "commit", "-qam", "person"])
  await git(dir.path, ["checkout", "-q", "main"])
  dir.write("shared.txt", "main\n")
  await git(dir.path, [...ME, "commit", "-qam", "main side"])
  await git(dir.path, [...ME, "merge", "person"]).catch(() => {}) // conflicts on shared.txt
  dir.write("shared.txt", "resolved by hand\n") // written, not yet added
  const run = background(dir.path, RUN)
  await run.waitFor("is in the middle of a merge")
  expect(dir.read("shared.txt")).toBe("resolved by hand\n")
  expect(existsSync(dir.file(".git/MERGE_HEAD"))).toBe(true)
  expect(run.output().match(/in the middle of a merge/g)?.length).toBe(1) // said once, not every retry
  await git(dir.path, ["add", "shared.txt"])
  await git(dir.path, [...ME, "commit", "-q", "--no-edit"])
  const r = await run.done()
  expect(r.code).toBe(0)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ t1: "done" })
  expect(await onMain(dir, "shared.txt")).toBe("resolved by hand")
  expect(await onMain(dir, "one.txt")).toBe("one")
  expect(dir.read("one.txt")).toBe("one\n") // the checkout followed
})

test.concurrent("case 2: a branch that changes tasks.yaml, and the person's uncommitted edit elsewhere: nothing lost, nothing run twice (10 runs)", async () => {
  for (let i = 0; i < 10; i++) {
    await using dir = await project(
      [
        task("a", `echo "# a comment of the agent's" >> tasks.yaml\necho a > a.txt\necho a >> "$FLOW_PROJECT.runs-a"`),
        task("b", `echo b > b.txt\necho b >> "$FLOW_PROJECT.runs-b"`),
      ],
      { "person.txt": "committed\n" },
    )
    dir.write("person.txt", "my uncommitted edit\n")
    const r = await flow(dir.path, RUN)
    expect(`${r.code} ${r.stderr}`).toBe("0 ")
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done", b: "done" })
    expect(dir.read("person.txt")).toBe("my uncommitted edit\n")
    expect(readFileSync(`${dir.path}.runs-a`, "utf8")).toBe("a\n")
    expect(readFileSync(`${dir.path}.runs-b`, "utf8")).toBe("b\n")
    expect(r.stdout).toContain("left out of the merge")
    expect(await onMain(dir, "a.txt")).toBe("a")
    expect(await onMain(dir, "tasks.yaml")).not.toMatch(/^# a comment/m)
    rmSync(`${dir.path}.runs-a`, { force: true })
    rmSync(`${dir.path}.runs-b`, { force: true })
  }
})

test.concurrent("the person's uncommitted change to a file a branch brings makes the landing wait, said once in the log, show, dashboard and inspector; it lands when the person stashes just that file, as said", async () => {
  await using dir = await project([task("t1", "echo flow > shared.txt")], { "shared.txt": "base\n" })
  dir.write("shared.txt", "mine, not committed\n")
  const run = background(dir.path, RUN)
  await run.waitFor("your uncommitted change to shared.txt")
  const stash = `git -C ${dir.path} stash push -- shared.txt`
  const reason = `your uncommitted change to shared.txt in ${dir.path} is in the way; commit it, or stash just it with \`${stash}\` (not a bare \`git stash\`, which takes flow's own uncommitted writes too), and flow lands by itself`
  const wait = { task: "t1", target: "main", reason, since: expect.any(String) }
  expect((await flow(dir.path, ["show", "t1"])).stdout).toContain(`\nStatus: in_progress\nLanding: waiting — ${reason}\nPhase:`)
  expect(JSON.parse((await flow(dir.path, ["show", "t1", "--json"])).stdout).landing_wait).toEqual(wait)
  expect(JSON.parse((await flow(dir.path, ["dashboard", "--json"])).stdout).landing).toEqual([wait])
  expect((await flow(dir.path, ["dashboard"], { env: { COLUMNS: "300" } })).stdout).toContain(`Needs you:\n  flow show t1  landing waits: ${reason}\n`)
  {
    await using view = await startView(dir)
    expect(((await (await view.get("api/tasks/t1")).json()) as { landing_wait: unknown }).landing_wait).toEqual(wait)
  }
  await Bun.sleep(2500)
  expect(run.output().match(/your uncommitted change to shared.txt/g)?.length).toBe(1)
  expect(dir.read("shared.txt")).toBe("mine, not committed\n")
  // The person does what the message says: the stash holds their change, and none of flow's writes.
  await git(dir.path, stash.split(" ").slice(3))
  expect((await git(dir.path, ["stash", "show", "--name-only", "stash@{0}"])).trim()).toBe("shared.txt")
  const r = await run.done()
  expect(r.code).toBe(0)
  expect(dir.read("shared.txt")).toBe("flow\n")
  expect((await flow(dir.path, ["show", "t1"])).stdout).not.toContain("Landing:")
  expect(JSON.parse((await flow(dir.path, ["show", "t1", "--json"])).stdout).landing_wait).toBeNull()
  await git(dir.path, ["stash", "pop", "-q"]).catch(() => {}) // conflicts as git says: the person's to resolve
  expect(await git(dir.path, ["stash", "list"])).toContain("stash@{0}") // kept by git on the conflict
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ t1: "done" })
})

test.concurrent("a landing wait of a run killed meanwhile is not shown: show and the dashboard say what is true, the next run what it waits for", async () => {
  await using dir = await project([task("t1", "echo flow > shared.txt")], { "shared.txt": "base\n" })
  dir.write("shared.txt", "mine, not committed\n")
  const first = background(dir.path, RUN)
  await first.waitFor("your uncommitted change to shared.txt")
  first.proc.kill("SIGKILL")
  await first.done()
  expect((await flow(dir.path, ["show", "t1"])).stdout).not.toContain("Landing:")
  expect(JSON.parse((await flow(dir.path, ["dashboard", "--json"])).stdout).landing).toEqual([])
  const again = background(dir.path, RUN)
  await again.waitFor("your uncommitted change to shared.txt")
  expect((await flow(dir.path, ["show", "t1"])).stdout).toContain("Landing: waiting — your uncommitted change to shared.txt")
  await git(dir.path, ["stash", "-q"])
  expect((await again.done()).code).toBe(0)
})

// The two moves of a landing, the person's checkout (two-tree read) and the branch (update-ref), cut apart by
// a kill: between them (flow's kill point), or the instant git has moved the branch (a reference-transaction
// hook that kills flow: before 3d017cf the branch moved first, and the checkout never followed), with and
// without a check.
test.concurrent.each([
  { cut: "after the checkout's update, before the branch's move", verify: false },
  { cut: "the instant the branch moved", verify: false },
  { cut: "the instant the branch moved", verify: true },
])("case 3: a kill $cut (verify: $verify) is finished at the next start; the index is never reversed", async ({ cut, verify }) => {
  await using dir = await project([task("t1", "echo one > one.txt"), task("t2", "echo two > two.txt", { depends_on: ["t1"] })], { "person.txt": "p\n" })
  if (verify) await Bun.write(dir.file("flow.yaml"), "verify: { command: 'true' }\n")
  const once = `${dir.path}.killed`
  if (cut.startsWith("the instant")) {
    dir.write(
      ".git/hooks/reference-transaction",
      `#!/bin/sh\n[ "$1" = committed ] || exit 0\ngrep -q ' refs/heads/main$' || exit 0\n[ -e '${once}' ] && exit 0\ntouch '${once}'\nkill -9 "$FLOW_GIT_OWNER"\n`,
    )
    chmodSync(dir.file(".git/hooks/reference-transaction"), 0o755)
  }
  dir.write("person.txt", "my edit\n")
  try {
    const first = await flow(dir.path, RUN, { env: cut.startsWith("after") ? { FLOW_TEST_KILL_AT: "after-read-tree" } : {} })
    expect(first.code).toBe(137)
    const r = await flow(dir.path, RUN)
    expect(`${r.code} ${r.stderr}`).toBe("0 ")
    expect(statuses(dir.read("tasks.yaml"))).toEqual({ t1: "done", t2: "done" })
    expect(await mergesOf(dir, "flow/t1")).toBe(1)
    // Only the person's edit and flow's own files differ from main: nothing staged, nothing reversed.
    expect((await git(dir.path, ["status", "--porcelain"])).split("\n").filter(Boolean).sort()).toEqual(
      [" M person.txt", " M tasks.yaml", ...(verify ? ["?? flow.yaml"] : [])].sort(),
    )
    expect(dir.read("person.txt")).toBe("my edit\n")
    expect(dir.read("one.txt")).toBe("one\n")
  } finally {
    rmSync(once, { force: true })
  }
})

test.concurrent("case 4: a task whose worktree is the merge target is refused by validate and by run; nothing lands unchecked", async () => {
  await using dir = await project([task("t1", "echo one > one.txt", { worktree: "main" })])
  await Bun.write(dir.file("flow.yaml"), "merge_target: main\nverify: { command: 'exit 1' }\n")
  await git(dir.path, ["checkout", "-q", "-b", "elsewhere"])
  const v = await flow(dir.path, ["validate"])
  expect(v.code).toBe(1)
  expect(v.stdout).toContain("worktree 'main' is the branch finished work merges into")
  const before = (await git(dir.path, ["rev-parse", "main"])).trim()
  const r = await flow(dir.path, RUN)
  expect(r.code).not.toBe(0)
  expect((await git(dir.path, ["rev-parse", "main"])).trim()).toBe(before)
  expect(statuses(dir.read("tasks.yaml"))).not.toEqual({ t1: "done" })
})

test.concurrent("case 5: a stale git lock in the person's checkout is named once; the task waits, and lands when it is gone (with and without verify)", async () => {
  for (const lock of [".git/index.lock", ".git/HEAD.lock", ".git/refs/heads/main.lock"]) {
    for (const verify of [false, true]) {
      await using dir = await project([task("t1", "echo one > one.txt")])
      const checks = `${dir.path}.checks`
      if (verify) await Bun.write(dir.file("flow.yaml"), `verify: { command: 'echo checked >> ${checks}' }\n`)
      dir.write(lock, "")
      const run = background(dir.path, RUN)
      await run.waitFor(`\`${lock}\` exists: another git may be running in ${dir.path}; if none is, delete it`)
      await Bun.sleep(2500)
      expect(run.output().match(/another git may be running/g)?.length).toBe(1)
      rmSync(dir.file(lock))
      const r = await run.done()
      expect(`${lock} ${verify} ${r.code}`).toBe(`${lock} ${verify} 0`)
      expect(statuses(dir.read("tasks.yaml"))).toEqual({ t1: "done" })
      if (verify) expect(readFileSync(checks, "utf8").trim().split("\n").length).toBe(1) // checked once, never re-checked in a loop
      rmSync(checks, { force: true })
    }
  }
})

test.concurrent("case 6: an agent that detaches HEAD or switches branch before committing: blocked with where its commits are, never done", async () => {
  const agents = {
    detached: `git checkout -q --detach\necho x > x.txt\ngit add x.txt\ngit -c user.name=a -c user.email=a@a commit -qm x`,
    switched: `git checkout -q -b other\necho x > x.txt\ngit add x.txt\ngit -c user.name=a -c user.email=a@a commit -qm x`,
  }
  for (const [how, script] of Object.entries(agents)) {
    await using dir = await project([task("t1", script)])
    const r = await flow(dir.path, RUN)
    expect(r.code).not.toBe(0)
    const tasks = dir.read("tasks.yaml")
    expect(statuses(tasks)).toEqual({ t1: "blocked" })
    expect(tasks).toContain(how === "detached" ? "has a detached HEAD at" : "is on branch 'other'")
    expect(await onMain(dir, "x.txt")).toBeUndefined()
  }
})

test.concurrent("case 6: an agent that deletes its worktree: blocked, never done", async () => {
  await using dir = await project([task("t1", `echo x > x.txt\ncd .. && git -C "$OLDPWD" worktree remove --force "$OLDPWD"`)])
  const r = await flow(dir.path, RUN)
  expect(r.code).not.toBe(0)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ t1: "blocked" })
  expect(dir.read("tasks.yaml")).toContain("was deleted before its work was merged")
})

test.concurrent("case 8: with verify, a branch that touches tasks.yaml lands (its change to flow's file left out); the run ends", async () => {
  await using dir = await project([task("t1", `echo "# mine" >> tasks.yaml\necho one > one.txt`), task("t2", "echo two > two.txt")])
  await Bun.write(dir.file("flow.yaml"), "verify: { command: 'true' }\n")
  const r = await flow(dir.path, RUN)
  expect(`${r.code} ${r.stderr}`).toBe("0 ")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ t1: "done", t2: "done" })
  expect(await onMain(dir, "one.txt")).toBe("one")
})
