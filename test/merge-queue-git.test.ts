// The merge queue's git plumbing (lib/git/git.ts) on real repositories, the trimming of a check's output
// (lib/worktree/command.ts), flow.yaml's `verify` refused when it is ambiguous, and the queue on the run screen.
import { expect, test } from "bun:test"
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { projectAt } from "../lib/cli/project"
import { moveTarget } from "../lib/landing/checkout-move"
import { recoverMoves } from "../lib/landing/move-recovery"
import { makeMergeCommit, revParse as revParseAll } from "../lib/git/git"
import { MoveJournal } from "../lib/landing/merge-journal"
import { openState } from "../lib/state/state"
import { RunView } from "../lib/tui/tui-state"
import { checkResolver } from "../lib/landing/verify"
import { trimOutput } from "../lib/worktree/command"
import { flow, git, tasksYaml, tempRepo } from "./helpers"

const ID = { name: "flow", email: "flow@localhost" }
const revParse = async (dir: string, ref: string) => (await revParseAll(dir, ref))[0]
const commitOn = async (dir: string, branch: string, file: string, text: string) => {
  await git(dir, ["checkout", "-q", "-B", branch])
  await Bun.write(`${dir}/${file}`, text)
  await git(dir, ["add", "-A"])
  await git(dir, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", `${branch}: ${file}`])
}

test.concurrent("a merge commit is made without a checkout; a conflict names its files and writes nothing", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n" })
  await commitOn(dir.path, "x", "a.txt", "x\n")
  await git(dir.path, ["checkout", "-q", "main"])
  await commitOn(dir.path, "y", "b.txt", "y\n")
  await git(dir.path, ["checkout", "-q", "main"])
  await commitOn(dir.path, "main", "a.txt", "main\n")
  const main = (await revParse(dir.path, "main"))!
  expect(await makeMergeCommit(dir.path, main, "x", "m", ID)).toEqual({ ok: false, conflicts: ["a.txt"], reason: "merge conflict in a.txt" })
  const m = await makeMergeCommit(dir.path, main, "y", "Merge y", ID)
  if (!m.ok) throw new Error(m.reason)
  expect((await git(dir.path, ["log", "-1", "--format=%P %s", m.commit])).trim()).toBe(`${main} ${await revParse(dir.path, "y")} Merge y`)
  expect(await revParse(dir.path, "main")).toBe(main) // nothing moved
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("")
})

/** A state db of its own for a test's move journal (outside the repository: nothing of it shows in git status). */
async function moveJournal() {
  const dir = mkdtempSync(join(tmpdir(), "flow-moves-"))
  const db = await openState(projectAt(dir))
  return { journal: new MoveJournal(db), [Symbol.asyncDispose]: async () => (db.close(), rmSync(dir, { recursive: true, force: true })) }
}

/** Branch y adding b.txt off main, back on main, and the merge of y made off-tree: main's commit and the merge. */
async function mergeOfY(dir: string) {
  const old = (await revParse(dir, "main"))!
  await commitOn(dir, "y", "b.txt", "y\n")
  await git(dir, ["checkout", "-q", "main"])
  const m = await makeMergeCommit(dir, old, "y", "Merge y", ID)
  if (!m.ok) throw new Error(m.reason)
  return { old, m }
}

test.concurrent("the target moves only from the expected commit, and its checkout follows only when git finds nothing in the way", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n", "keep.txt": "k\n" })
  await using j = await moveJournal()
  const { old, m } = await mergeOfY(dir.path)
  const move = () => moveTarget(dir.path, "main", old, m.commit, "x", j.journal)
  // A stale expectation is refused (compare-and-swap).
  expect(await moveTarget(dir.path, "main", m.commit, m.commit, "x", j.journal)).toMatchObject({ ok: false, why: "moved" })
  // An untracked file, a change, or a staged change where the merge brings a file: nothing moves, the file is kept.
  dir.write("b.txt", "mine\n")
  expect(await move()).toMatchObject({ ok: false, why: "wait", detail: expect.stringContaining("your uncommitted change to b.txt") })
  expect(await revParse(dir.path, "main")).toBe(old)
  expect(dir.read("b.txt")).toBe("mine\n")
  await git(dir.path, ["add", "b.txt"])
  expect(await move()).toMatchObject({ ok: false, why: "wait", detail: expect.stringContaining("b.txt") })
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("A  b.txt")
  await git(dir.path, ["rm", "-q", "--cached", "b.txt"])
  await Bun.file(dir.file("b.txt")).delete()
  // A git lock in the way is named, and nothing moves; the same for a merge of the person's in progress.
  for (const lock of [".git/index.lock", ".git/HEAD.lock", ".git/refs/heads/main.lock"]) {
    dir.write(lock, "")
    expect(await move()).toEqual({
      ok: false,
      why: "wait",
      lock: true,
      detail: `\`${lock}\` exists: another git may be running in ${dir.path}; if none is, delete it`,
    })
    await Bun.file(dir.file(lock)).delete()
  }
  dir.write(".git/MERGE_HEAD", `${old}\n`)
  expect(await move()).toMatchObject({ ok: false, why: "wait", detail: `${dir.path} is in the middle of a merge; flow lands when it is concluded or aborted` })
  await Bun.file(dir.file(".git/MERGE_HEAD")).delete()
  expect(await revParse(dir.path, "main")).toBe(old)
  // A change elsewhere stays as it is while the checkout follows.
  dir.write("keep.txt", "edited\n")
  expect(await move()).toEqual({ ok: true })
  expect(await revParse(dir.path, "main")).toBe(m.commit)
  expect(dir.read("b.txt")).toBe("y\n")
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("M keep.txt")
  expect(await j.journal.open()).toEqual([])
})

test.concurrent("the target checked out in a linked worktree is found there (read from git's files) and moved only as it is there", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n" })
  await using j = await moveJournal()
  const old = (await revParse(dir.path, "main"))!
  await commitOn(dir.path, "y", "b.txt", "y\n")
  // The repository's own folder is on another branch; main is checked out in a worktree of its own.
  await git(dir.path, ["checkout", "-q", "-b", "elsewhere", old])
  const linked = `${dir.path}-main`
  await git(dir.path, ["worktree", "add", "-q", linked, "main"])
  try {
    const m = await makeMergeCommit(dir.path, old, "y", "Merge y", ID)
    if (!m.ok) throw new Error(m.reason)
    await Bun.write(`${linked}/b.txt`, "mine\n")
    expect(await moveTarget(dir.path, "main", old, m.commit, "x", j.journal)).toMatchObject({
      ok: false,
      why: "wait",
      detail: `your uncommitted change to b.txt in ${linked} is in the way; commit it, or stash just it with \`git -C ${linked} stash push -- b.txt\` (not a bare \`git stash\`, which takes flow's own uncommitted writes too), and flow lands by itself`,
    })
    rmSync(`${linked}/b.txt`)
    expect(await moveTarget(dir.path, "main", old, m.commit, "x", j.journal)).toEqual({ ok: true })
    expect(await Bun.file(`${linked}/b.txt`).text()).toBe("y\n")
    expect((await git(linked, ["status", "--porcelain"])).trim()).toBe("")
    expect(await Bun.file(dir.file("b.txt")).exists()).toBe(false) // the repository's own folder, on elsewhere, untouched
  } finally {
    rmSync(linked, { recursive: true, force: true })
  }
})

test.concurrent("a worktree another git is making at that instant (its registration half written) does not hold the move up", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n" })
  await using j = await moveJournal()
  const { old, m } = await mergeOfY(dir.path)
  // What `git worktree add` has written a moment in: its lock and gitdir, an empty commondir. git refuses to
  // list any worktree meanwhile ("failed to read .../commondir"); a move that asked it blocked the task.
  dir.write(".git/worktrees/other/locked", "initializing")
  dir.write(".git/worktrees/other/gitdir", `${dir.path}-other/.git\n`)
  dir.write(".git/worktrees/other/commondir", "")
  expect(await moveTarget(dir.path, "main", old, m.commit, "x", j.journal)).toEqual({ ok: true })
  expect(dir.read("b.txt")).toBe("y\n")
})

test.concurrent("a move cut off between the checkout's update and the ref's is finished by recovery, never left reversed", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n" })
  await using j = await moveJournal()
  const { old, m } = await mergeOfY(dir.path)
  // The checkout was updated, the ref not yet moved (a kill at that instruction).
  await j.journal.begin({ repo: dir.path, checkout: dir.path, ref: "refs/heads/main", old, new: m.commit })
  await git(dir.path, ["read-tree", "-m", "-u", old, m.commit])
  expect(await recoverMoves(j.journal)).toEqual([`a move of main was cut off after ${dir.path} was updated: the branch moved to match`])
  expect(await revParse(dir.path, "main")).toBe(m.commit)
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("")
  // The ref moved, the index still at old (the order of an older flow): the checkout is made to follow.
  const old2 = m.commit
  await commitOn(dir.path, "z", "c.txt", "z\n")
  await git(dir.path, ["checkout", "-q", "main"])
  const m2 = await makeMergeCommit(dir.path, old2, "z", "Merge z", ID)
  if (!m2.ok) throw new Error(m2.reason)
  await j.journal.begin({ repo: dir.path, checkout: dir.path, ref: "refs/heads/main", old: old2, new: m2.commit })
  await git(dir.path, ["update-ref", "refs/heads/main", m2.commit, old2])
  expect(await recoverMoves(j.journal)).toEqual([`a move of main was cut off after the branch moved: ${dir.path} made to follow`])
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("")
  expect(dir.read("c.txt")).toBe("z\n")
  expect(await j.journal.open()).toEqual([])
})

test.concurrent("a move whose two-tree read was killed half way (files written, index not, its lock left) is finished by recovery", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n", "d.txt": "d\n", "keep.txt": "k\n", "p.txt": "p\n", "z.txt": "z\n" })
  await using j = await moveJournal()
  const old = (await revParse(dir.path, "main"))!
  await git(dir.path, ["checkout", "-q", "-b", "y"])
  for (const [file, text] of Object.entries({ "a.txt": "a2\n", "b.txt": "b\n", "keep.txt": "k2\n", "z.txt": "z2\n" })) dir.write(file, text)
  rmSync(dir.file("d.txt"))
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "y"])
  await git(dir.path, ["checkout", "-q", "main"])
  const m = await makeMergeCommit(dir.path, old, "y", "Merge y", ID)
  if (!m.ok) throw new Error(m.reason)
  dir.write("p.txt", "the person's edit\n")
  // The read's git killed (with its run) while it wrote keep.txt, by a smudge filter: git had removed d.txt,
  // written a.txt and b.txt, unlinked keep.txt, not reached z.txt, and never turned its index.lock into the index.
  await j.journal.begin({ repo: dir.path, checkout: dir.path, ref: "refs/heads/main", old, new: m.commit })
  dir.write(".git/info/attributes", "keep.txt filter=kill\n")
  dir.write(".git/kill-smudge", "#!/bin/sh\nkill -9 $PPID\n")
  chmodSync(dir.file(".git/kill-smudge"), 0o755)
  await git(dir.path, ["config", "filter.kill.smudge", dir.file(".git/kill-smudge")])
  expect(await git(dir.path, ["read-tree", "-m", "-u", old, m.commit]).catch((e: Error) => e.message)).toContain("failed (137)")
  await git(dir.path, ["config", "--unset", "filter.kill.smudge"])
  rmSync(dir.file(".git/info/attributes"))
  expect([
    existsSync(dir.file(".git/index.lock")),
    existsSync(dir.file("d.txt")),
    existsSync(dir.file("keep.txt")),
    dir.read("a.txt"),
    dir.read("z.txt"),
  ]).toEqual([true, false, false, "a2\n", "z\n"])
  expect(await recoverMoves(j.journal)).toEqual([
    `a move of main was cut off while ${dir.path} was being updated: finished (removed .git/index.lock, left by its git, killed with it)`,
  ])
  expect(await revParse(dir.path, "main")).toBe(m.commit)
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("M p.txt")
  expect(["a.txt", "b.txt", "keep.txt", "p.txt", "z.txt"].map((f) => dir.read(f))).toEqual(["a2\n", "b\n", "k2\n", "the person's edit\n", "z2\n"])
  expect(existsSync(dir.file("d.txt"))).toBe(false)
})

test.concurrent("a move killed while git wrote a file it adds (created, its bytes cut off) is finished by recovery, not taken for the person's file", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n" })
  await using j = await moveJournal()
  const old = (await revParse(dir.path, "main"))!
  await commitOn(dir.path, "y", "b.txt", "the new file's text\n")
  await git(dir.path, ["checkout", "-q", "main"])
  const m = await makeMergeCommit(dir.path, old, "y", "Merge y", ID)
  if (!m.ok) throw new Error(m.reason)
  await j.journal.begin({ repo: dir.path, checkout: dir.path, ref: "refs/heads/main", old, new: m.commit })
  // What a SIGKILL between git's open() and the end of its write() leaves: the file there with its first
  // bytes, the index not written (its lock left), the branch not moved.
  dir.write("b.txt", "the new f")
  dir.write(".git/index.lock", "")
  expect(await recoverMoves(j.journal)).toEqual([
    `a move of main was cut off while ${dir.path} was being updated: finished (removed .git/index.lock, left by its git, killed with it)`,
  ])
  expect(await revParse(dir.path, "main")).toBe(m.commit)
  expect(dir.read("b.txt")).toBe("the new file's text\n")
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("")
})

test.concurrent("a file in a cut-off move's path that is neither git's nor the move's is left to the person and named, not called unchanged", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n" })
  await using j = await moveJournal()
  const old = (await revParse(dir.path, "main"))!
  await commitOn(dir.path, "y", "b.txt", "the new file's text\n")
  await git(dir.path, ["checkout", "-q", "main"])
  const m = await makeMergeCommit(dir.path, old, "y", "Merge y", ID)
  if (!m.ok) throw new Error(m.reason)
  await j.journal.begin({ repo: dir.path, checkout: dir.path, ref: "refs/heads/main", old, new: m.commit })
  dir.write("b.txt", "the person's own b\n")
  const said = await recoverMoves(j.journal)
  expect(said).toHaveLength(1)
  expect(said[0]).toContain("b.txt is neither as before the move nor as after it")
  expect(dir.read("b.txt")).toBe("the person's own b\n")
  expect(await revParse(dir.path, "main")).toBe(old)
})

test.concurrent("a branch's changes to flow's own files are left out of its merge", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks: []\n", "a.txt": "a\n" })
  const old = (await revParse(dir.path, "main"))!
  await git(dir.path, ["checkout", "-q", "-b", "y"])
  dir.write("tasks.yaml", "tasks: [] # the agent's\n")
  dir.write(".flow/x", "x\n")
  dir.write("b.txt", "b\n")
  await git(dir.path, ["add", "-A", "-f"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "y"])
  const m = await makeMergeCommit(dir.path, old, "y", "Merge y", ID, ["tasks.yaml", "flow.yaml", ".flow"])
  if (!m.ok) throw new Error(m.reason)
  expect(m.dropped.sort()).toEqual([".flow/x", "tasks.yaml"])
  expect((await git(dir.path, ["ls-tree", "-r", "--name-only", m.commit])).trim().split("\n")).toEqual(["a.txt", "b.txt", "tasks.yaml"])
  expect((await git(dir.path, ["show", `${m.commit}:tasks.yaml`])).trim()).toBe("tasks: []")
})

test("a check's output is trimmed to the failures with context and the end", () => {
  const noise = Array.from({ length: 200 }, (_, i) => `ok ${i}`)
  noise[50] = "FAIL src/a.test.ts > renames greet"
  const out = trimOutput(noise).split("\n")
  expect(out.slice(0, 6)).toEqual(["...", "ok 48", "ok 49", "FAIL src/a.test.ts > renames greet", "ok 51", "ok 52"])
  expect(out.at(-1)).toBe("ok 199")
  expect(out).toHaveLength(1 + 5 + 1 + 15)
})

test.concurrent("two verify entries for one repository are refused with exit 3", async () => {
  await using dir = await tempRepo({
    "flow.yaml": "verify:\n  - { command: make test }\n  - { command: npm test }\n",
    "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: "" }]),
  })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({
    code: 3,
    stderr: "error: flow.yaml has two 'verify' entries for the default repository (no 'repo')\nhint: keep one check per repository\n",
  })
})

test("the run screen shows a task's place in the merge queue as its pane's state, until it lands or goes back to its agent", () => {
  const view = new RunView("p", ["a-1"], 0)
  const pane = view.panes.get("a-1")!
  const MIDNIGHT = new Date(2026, 0, 1) // in the zone the test runs in: the log's stamps are local time
  view.apply({ type: "task-start", taskId: "t", agent: "a-1", branch: "flow/t", worktree: "/w", resumed: false }, MIDNIGHT)
  expect(view.stateOf(pane)).toBe("running")
  view.apply({ type: "queue", taskId: "t", target: "main", state: "checking", position: 2 }, MIDNIGHT)
  expect(view.stateOf(pane)).toBe("queue main #2 checking")
  view.apply({ type: "queue", taskId: "t", target: "main", state: "failed", position: 1, reason: "the check failed (exit 1)" }, MIDNIGHT)
  expect(view.log.at(-1)).toBe("00:00:00 t: queue main #1 failed (the check failed (exit 1))")
  view.apply({ type: "fix", taskId: "t", attempt: 1, of: 2, kind: "check", reason: "the check failed (exit 1)" }, MIDNIGHT)
  expect(view.stateOf(pane)).toBe("running")
})

test.concurrent("verify per repository: an entry naming the repository wins, the entry without repo covers the rest", async () => {
  await using dir = await tempRepo({ "README.md": "project\n" })
  const app = dir.file("repos/app")
  dir.write("repos/app/x.txt", "x\n")
  await git(app, ["init", "-q", "-b", "main"])
  const checkOf = checkResolver(dir.path, [{ command: "make test" }, { repo: "repos/app", command: ["npm", "test"], timeout: "90s" }])
  expect(await checkOf(app)).toEqual({ argv: ["npm", "test"], timeoutMs: 90_000, label: "npm test", name: "check" })
  expect(await checkOf(dir.path)).toEqual({ argv: ["sh", "-c", "make test"], timeoutMs: 20 * 60_000, label: "make test", name: "check" })
  expect(await checkResolver(dir.path, [{ repo: "repos/app", command: "npm test" }])(dir.path)).toBeUndefined()
})
