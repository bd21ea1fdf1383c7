// The merge queue's git plumbing (lib/run/git.ts) on real repositories, the trimming of a check's output
// (lib/run/verify.ts), flow.yaml's `verify` refused when it is ambiguous, and the queue on the run screen.
import { expect, test } from "bun:test"
import { makeMergeCommit, moveBranch, revParse as revParseAll } from "../lib/run/git"
import { RunView } from "../lib/run/tui-state"
import { checkResolver, trimOutput } from "../lib/run/verify"
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

test.concurrent("the target moves only from the expected commit, and its checkout follows only when the changed files are clean", async () => {
  await using dir = await tempRepo({ "a.txt": "a\n", "keep.txt": "k\n" })
  const old = (await revParse(dir.path, "main"))!
  await commitOn(dir.path, "y", "b.txt", "y\n")
  await git(dir.path, ["checkout", "-q", "main"])
  const m = await makeMergeCommit(dir.path, old, "y", "Merge y", ID)
  if (!m.ok) throw new Error(m.reason)
  // A stale expectation is refused (compare-and-swap).
  expect(await moveBranch(dir.path, "main", m.commit, m.commit, "x")).toMatchObject({ ok: false, why: "moved" })
  // A local change to a file the merge brings blocks the move; one elsewhere does not.
  dir.write("b.txt", "mine\n")
  expect(await moveBranch(dir.path, "main", old, m.commit, "x")).toEqual({ ok: false, why: "dirty", detail: `${dir.path} has local changes to b.txt` })
  expect(await revParse(dir.path, "main")).toBe(old)
  await Bun.file(dir.file("b.txt")).delete()
  dir.write("keep.txt", "edited\n")
  expect(await moveBranch(dir.path, "main", old, m.commit, "x")).toEqual({ ok: true })
  expect(await revParse(dir.path, "main")).toBe(m.commit)
  expect(dir.read("b.txt")).toBe("y\n")
  expect((await git(dir.path, ["status", "--porcelain"])).trim()).toBe("M keep.txt")
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
  view.apply({ type: "task-start", taskId: "t", agent: "a-1", branch: "flow/t", worktree: "/w", resumed: false }, new Date(0))
  expect(view.stateOf(pane)).toBe("running")
  view.apply({ type: "queue", taskId: "t", target: "main", state: "checking", position: 2 }, new Date(0))
  expect(view.stateOf(pane)).toBe("queue main #2 checking")
  view.apply({ type: "queue", taskId: "t", target: "main", state: "failed", position: 1, reason: "the check failed (exit 1)" }, new Date(0))
  expect(view.log.at(-1)).toBe("00:00:00 t: queue main #1 failed (the check failed (exit 1))")
  view.apply({ type: "fix", taskId: "t", attempt: 1, of: 2, kind: "check", reason: "the check failed (exit 1)" }, new Date(0))
  expect(view.stateOf(pane)).toBe("running")
})

test.concurrent("verify per repository: an entry naming the repository wins, the entry without repo covers the rest", async () => {
  await using dir = await tempRepo({ "README.md": "project\n" })
  const app = dir.file("repos/app")
  dir.write("repos/app/x.txt", "x\n")
  await git(app, ["init", "-q", "-b", "main"])
  const checkOf = checkResolver(dir.path, [{ command: "make test" }, { repo: "repos/app", command: ["npm", "test"], timeout: "90s" }])
  expect(await checkOf(app)).toEqual({ argv: ["npm", "test"], timeoutMs: 90_000, label: "npm test" })
  expect(await checkOf(dir.path)).toEqual({ argv: ["sh", "-c", "make test"], timeoutMs: 20 * 60_000, label: "make test" })
  expect(await checkResolver(dir.path, [{ repo: "repos/app", command: "npm test" }])(dir.path)).toBeUndefined()
})
