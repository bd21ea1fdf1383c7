// Git across machines (docs/FLEET.md, "Git across machines"): a bare repository is the shared remote, two
// clones of it are two machines (FLOW_MACHINE and a HOME of their own each), one project shared in a real
// PostgreSQL. What counts is the remote: every task merged into its main exactly once (counted in the bare
// repository's log), task branches pushed there, a dependent on the other machine starting from what its
// dependency merged there, a push made outside flow meanwhile built on again (or a conflict with it sent
// back), and a run killed after its push recovered as done without a second merge. Then, without a database,
// worktrees made six at a time while the remote's main moves: their fetches never fail on each other.
import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { remoteWorktree } from "../lib/git/remote-git"
import { RepoLanes } from "../lib/landing/repo-lanes"
import { bareOrigin, background, flow, git, tasksYaml, tempRepo } from "./helpers"
import { freshDatabase, HAVE_POSTGRES, type TestDatabase } from "./postgres"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@flow.invalid"]

/** One shared project 'shop' with its remote, and clones of it as machines. */
async function fleet(db: TestDatabase, tasks: Record<string, unknown>[], flowYaml = "") {
  const home = mkdtempSync(join(tmpdir(), "flow-homes-"))
  const scratch = mkdtempSync(join(tmpdir(), "flow-scratch-"))
  const first = await tempRepo({ "tasks.yaml": tasksYaml(tasks), ...(flowYaml ? { "flow.yaml": flowYaml } : {}) })
  expect((await flow(first.path, ["share", db.url, "--project", "shop"])).code).toBe(0)
  await git(first.path, ["add", "flow.yaml"])
  await git(first.path, [...IDENTITY, "commit", "-q", "-m", "share the project"])
  const bare = await bareOrigin(first.path)
  const clones: string[] = []
  const machine = (dir: string, name: string) => {
    const env = { FLOW_MACHINE: name, HOME: join(home, name) }
    mkdirSync(env.HOME, { recursive: true })
    return {
      dir,
      /** `flow run` on this machine, to its end */
      run: async (args: string[], extra: Record<string, string> = {}) =>
        background(dir, ["run", "--cli", "script", "--headless", ...args], { ...env, ...extra }).done(),
      flow: (args: string[]) => flow(dir, args, { env }),
    }
  }
  return {
    bare,
    /** a folder of the test's own (signals, the outside pusher's clones), gone with the fleet */
    scratch,
    laptop1: machine(first.path, "laptop-1"),
    /** another machine: a clone of the remote as it is now */
    clone: async (name: string) => {
      const dir = mkdtempSync(join(tmpdir(), "flow-clone-"))
      clones.push(dir)
      await git(tmpdir(), ["clone", "-q", bare, dir])
      return machine(dir, name)
    },
    /** the merge commits of the remote's main, by subject */
    merges: async () => (await git(bare, ["log", "--merges", "--format=%s", "main"])).trim().split("\n").filter(Boolean),
    status: async (id: string) => JSON.parse((await flow(first.path, ["show", id, "--json"])).stdout).task,
    [Symbol.asyncDispose]: async () => {
      await first[Symbol.asyncDispose]()
      for (const dir of clones) rmSync(dir, { recursive: true, force: true })
      rmSync(home, { recursive: true, force: true })
      rmSync(scratch, { recursive: true, force: true })
    },
  }
}

/**
 * A check that, the first time it runs, pushes a commit writing `file` to the remote's main from a clone of
 * its own: a push made outside flow between the landing's fetch and its push.
 */
function outsidePush(bare: string, scratch: string, file: string): string {
  return [
    `if [ ! -e '${scratch}/pushed' ]; then`,
    `  touch '${scratch}/pushed'`,
    `  git clone -q '${bare}' '${scratch}/outside'`,
    `  cd '${scratch}/outside' && echo outside > ${file} && git add ${file}`,
    `  git -c user.name=o -c user.email=o@flow.invalid commit -q -m 'outside: ${file}' && git push -q origin HEAD:main`,
    "fi",
  ].join("\n")
}

/** A script line that, on `machine` only, says `signal` (a file in $SIGNALS) and then never ends: its machine dies there. */
const hold = (machine: string, signal: string) => `if [ "$FLOW_MACHINE" = ${machine} ]; then touch "$SIGNALS/${signal}"; sleep 60; fi`

/** The task 'long', whose steps run these scripts, on a fleet whose leases last 2 s. */
const longTask = (db: TestDatabase, ...scripts: string[]) =>
  fleet(
    db,
    [{ id: "long", title: "Long", status: "ready_for_agent", steps: scripts.map((script, i) => ({ id: `long.${i + 1}`, instruction: sh(script) })) }],
    "lease: 2s\n",
  )

/** Runs `machine`'s `flow run` in `dir` until `signal` appears in `scratch`, then kills it (SIGKILL), as its machine dying. */
async function dieAt(dir: string, machine: string, scratch: string, signal: string): Promise<void> {
  const dying = background(dir, ["run", "--cli", "script", "--agents", "1", "--headless"], {
    FLOW_MACHINE: machine,
    HOME: join(scratch, machine),
    SIGNALS: scratch,
  })
  while (!existsSync(join(scratch, signal))) await Bun.sleep(50)
  dying.proc.kill("SIGKILL")
  await dying.proc.exited
}

describe.skipIf(!HAVE_POSTGRES)("git across machines", () => {
  test("a run merges each task into the remote's main once and pushes its branch; a dependent on another machine starts from what its dependency merged there", async () => {
    await using db = await freshDatabase()
    await using f = await fleet(db, [
      { id: "base", title: "Base", status: "ready_for_agent", instructions: sh("echo base > base.txt") },
      { id: "side", title: "Side", status: "ready_for_agent", instructions: sh("echo side > side.txt") },
      // Only laptop-2's run has an agent script-2: laptop-1 leaves it alone.
      { id: "dep", title: "Dep", status: "todo", depends_on: ["base"], agent_name: "script-2", instructions: sh("cat base.txt > seen.txt") },
    ])
    // laptop-2 cloned before anything was merged: its own main lacks base.txt.
    const laptop2 = await f.clone("laptop-2")

    const first = await f.laptop1.run(["--agents", "1"])
    expect(first.stderr).toBe("")
    expect(first.stdout).toContain("left alone: its agent_name is 'script-2'")
    expect((await f.status("base")).status).toBe("done")
    expect((await f.merges()).sort()).toEqual(["Merge flow/base: base", "Merge flow/side: side"])
    expect(await git(f.bare, ["show", "main:base.txt"])).toBe("base\n")
    // Each task's branch is on the remote, at the head that was merged.
    for (const branch of ["flow/base", "flow/side"]) expect(await git(f.bare, ["rev-parse", branch])).toBe(await git(f.laptop1.dir, ["rev-parse", branch]))
    // This clone's main followed the remote's (a fast-forward), with the person's checkout.
    expect(await git(f.laptop1.dir, ["rev-parse", "main"])).toBe(await git(f.bare, ["rev-parse", "main"]))
    expect(await Bun.file(join(f.laptop1.dir, "base.txt")).text()).toBe("base\n")

    expect(await git(laptop2.dir, ["ls-tree", "--name-only", "main"])).not.toContain("base.txt")
    const second = await laptop2.run(["--agents", "2"])
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" })
    expect((await f.status("dep")).status).toBe("done")
    expect(await git(f.bare, ["show", "main:seen.txt"])).toBe("base\n")
    const merges = await f.merges()
    expect(merges.sort()).toEqual(["Merge flow/base: base", "Merge flow/dep: dep", "Merge flow/side: side"])
    expect(await git(f.bare, ["rev-parse", "--verify", "-q", "flow/dep"])).toBeTruthy()
  })

  test("a push made outside flow between the landing's fetch and its push is built on again; one that conflicts sends the task back", async () => {
    await using db = await freshDatabase()
    await using f = await fleet(db, [
      { id: "ok", title: "Ok", status: "ready_for_agent", instructions: sh("echo ok > ok.txt") },
      { id: "clash", title: "Clash", status: "todo", depends_on: ["ok"], instructions: sh("echo clash > same.txt") },
    ])
    // The check is configured now that the remote's path is known: flow.yaml is the clone's own file.
    const yaml = await Bun.file(join(f.laptop1.dir, "flow.yaml")).text()
    const scratch = f.scratch
    const check = `${outsidePush(f.bare, join(scratch, "ok"), "outside.txt")}\nif [ "$FLOW_TASK_ID" = clash ]; then\n${outsidePush(f.bare, join(scratch, "clash"), "same.txt")}\nfi`
    mkdirSync(join(scratch, "ok"))
    mkdirSync(join(scratch, "clash"))
    await Bun.write(join(f.laptop1.dir, "flow.yaml"), `${yaml}verify:\n  command: ${JSON.stringify(check)}\n`)

    const r = await f.laptop1.run(["--agents", "1"])
    expect(r.stderr).toBe("")
    expect(r.stdout).toContain("main of the shared remote moved meanwhile (a commit made outside flow): the merge queue is built again on it")
    expect(r.stdout).toMatch(/ok: queue main #1 waiting \(rebuilt on main\)\n.*ok: queue main #1 checking/)
    // ok: merged once, on top of the outside push.
    expect((await f.status("ok")).status).toBe("done")
    expect(await git(f.bare, ["show", "main:outside.txt"])).toBe("outside\n")
    expect(await git(f.bare, ["show", "main:ok.txt"])).toBe("ok\n")
    // clash: its merge conflicts with what was pushed meanwhile; the script agent has no fix: blocked.
    const clash = await f.status("clash")
    expect(clash.status).toBe("blocked")
    expect(clash.ai_notes.at(-1)).toContain("merge conflict in same.txt")
    expect(await git(f.bare, ["show", "main:same.txt"])).toBe("outside\n")
    expect(await f.merges()).toEqual(["Merge flow/ok: ok"])
  })

  test("a run killed after its push, before the task is done, is recovered by the next run as done without a second merge", async () => {
    await using db = await freshDatabase()
    // The killed run's claim holds until its lease lapses (2 s here): then the next run takes the task over.
    await using f = await fleet(db, [{ id: "once", title: "Once", status: "ready_for_agent", instructions: sh("echo once > once.txt") }], "lease: 2s\n")
    const killed = await f.laptop1.run(["--agents", "1"], { FLOW_TEST_KILL_AT: "after-push" })
    expect(killed.code).not.toBe(0)
    expect(await f.merges()).toEqual(["Merge flow/once: once"])
    expect((await f.status("once")).status).toBe("in_progress")

    const next = await f.laptop1.run(["--agents", "1"])
    expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: "" })
    // Recovered (the claim lapsed before the start) or taken over: either way landed as it was, no agent run again.
    expect(next.stdout).toMatch(/its work was finished by the last run|resumed by script-1/)
    expect(next.stdout).not.toContain("exited")
    expect((await f.status("once")).status).toBe("done")
    expect(await f.merges()).toEqual(["Merge flow/once: once"])
  })

  test("a machine killed mid-task: another machine resumes the task from its pushed branch, with a fresh session", async () => {
    await using db = await freshDatabase()
    // On laptop-1 the second step never ends: its machine dies there.
    await using f = await longTask(db, "echo one > one.txt", `${hold("laptop-1", "started")}\ncat one.txt > two.txt`)
    const laptop2 = await f.clone("laptop-2")
    await dieAt(f.laptop1.dir, "laptop-1", f.scratch, "started")
    // The first step's commit reached the remote before the machine died.
    expect(await git(f.bare, ["show", "flow/long:one.txt"])).toBe("one\n")

    const r = await laptop2.run(["--agents", "1"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect((await f.status("long")).status).toBe("done")
    expect(await git(f.bare, ["show", "main:two.txt"])).toBe("one\n")
    expect(await f.merges()).toEqual(["Merge flow/long: long"])
  })

  test("a machine's own older worktree of a task, superseded by a newer attempt another machine pushed, is kept aside: what lands is the newer attempt's work", async () => {
    await using db = await freshDatabase()
    await using f = await longTask(
      db,
      "echo one > one.txt",
      // laptop-1 dies in the second step, its edit not committed; laptop-2 takes over and does it.
      `if [ "$FLOW_MACHINE" = laptop-1 ]; then echo stale > stale.txt; fi\n${hold("laptop-1", "started-1")}\ncat one.txt > two.txt`,
      // laptop-2 dies in the third, after its second step's commit reached the remote.
      `${hold("laptop-2", "started-2")}\ncat two.txt > three.txt`,
    )
    const laptop2 = await f.clone("laptop-2")
    await dieAt(f.laptop1.dir, "laptop-1", f.scratch, "started-1")
    await dieAt(laptop2.dir, "laptop-2", f.scratch, "started-2")
    expect(await git(f.bare, ["show", "flow/long:two.txt"])).toBe("one\n")

    // Back on laptop-1, whose worktree still holds its own older attempt (one.txt, and stale.txt uncommitted).
    const r = await f.laptop1.run(["--agents", "1"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout).toContain("a newer attempt on another machine pushed flow/long")
    expect((await f.status("long")).status).toBe("done")
    expect(await git(f.bare, ["show", "main:three.txt"])).toBe("one\n")
    expect(await git(f.bare, ["ls-tree", "--name-only", "main"])).not.toContain("stale.txt")
    expect(await f.merges()).toEqual(["Merge flow/long: long"])
    // laptop-1's older work is not lost: it is kept under a ref, with what it had not committed.
    const kept = (await git(f.laptop1.dir, ["for-each-ref", "--format=%(refname)", "refs/flow/superseded/"])).trim().split("\n")
    expect(kept).toHaveLength(1)
    expect(kept[0]).toStartWith("refs/flow/superseded/flow/long/")
    expect(await git(f.laptop1.dir, ["show", `${kept[0]}:stale.txt`])).toBe("stale\n")
  })

  test("a lock file a killed git left on a remote-tracking ref goes at the next run's start, unless a git runs in the repository", async () => {
    await using db = await freshDatabase()
    await using f = await fleet(db, [{ id: "a", title: "A", status: "ready_for_agent", instructions: sh("echo a > a.txt") }])
    const lock = join(f.laptop1.dir, ".git", "refs", "remotes", "origin", "main.lock")
    mkdirSync(join(lock, ".."), { recursive: true })
    // This clone's view of the remote's main is behind it, so the next fetch must write the ref.
    await git(f.laptop1.dir, ["update-ref", "refs/remotes/origin/main", "HEAD~1"])
    // A git of the person's at work in the repository (waiting on its input): the lock may be its own, and stays.
    writeFileSync(lock, "")
    const person = Bun.spawn(["git", "cat-file", "--batch"], { cwd: f.laptop1.dir, stdin: "pipe", stdout: "ignore" })
    try {
      const held = await f.laptop1.run(["--agents", "1"])
      expect(held.stdout).not.toContain("lock file")
      expect(existsSync(lock)).toBe(true)
      expect((await f.status("a")).status).toBe("blocked") // its fetch failed on the lock, and says so
    } finally {
      person.kill()
      await person.exited
    }
    // No git runs there any more: the lock is a killed git's. It goes, and the task lands.
    expect((await f.laptop1.flow(["ready", "a"])).code).toBe(0)
    const r = await f.laptop1.run(["--agents", "1"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout).toContain("removed refs/remotes/origin/main's lock file, left by a killed git")
    expect(existsSync(lock)).toBe(false)
    expect(await f.merges()).toEqual(["Merge flow/a: a"])
  })

  test("a shared run whose repository lacks the shared remote stops at its start and says how to add it", async () => {
    await using db = await freshDatabase()
    await using f = await fleet(db, [{ id: "a", title: "A", status: "ready_for_agent", instructions: sh("echo a > a.txt") }])
    await git(f.laptop1.dir, ["remote", "remove", "origin"])
    const r = await f.laptop1.run(["--agents", "1"])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(`error: ${await realRoot(f.laptop1.dir)} has no git remote 'origin': a shared project's machines share their work through it`)
    expect(r.stderr).toContain("remote add origin <url>")
    expect((await f.status("a")).status).toBe("ready_for_agent")
  })
})

describe("a shared project's fetches", () => {
  test("worktrees made at once while the remote's main moves: every fetch and every worktree works (fetches take their turn with the worktrees' changes)", async () => {
    await using repo = await tempRepo()
    const bare = await bareOrigin(repo.path)
    // Another machine pushes to main all along: each fetch brings new commits, which git checks against every
    // worktree's HEAD (one being added has none yet) and writes under the tracking ref's lock (another fetch
    // may hold it).
    await using other = await tempRepo()
    await git(other.path, ["fetch", "-q", bare, "main"])
    await git(other.path, ["reset", "-q", "--hard", "FETCH_HEAD"])
    let pushing = true
    const pusher = (async () => {
      for (let n = 0; pushing; n++) {
        await git(other.path, [...IDENTITY, "commit", "-q", "--allow-empty", "-m", `outside ${n}`])
        await git(other.path, ["push", "-q", bare, "HEAD:main"])
      }
    })()
    const lanes = new RepoLanes()
    const serial = <T>(fn: () => Promise<T>) => lanes.run(repo.path, fn)
    const failed: string[] = []
    for (let round = 0; round < 4; round++) {
      const ids = Array.from({ length: 6 }, (_, i) => `r${round}-${i}`)
      const made = await Promise.allSettled(
        ids.map((id) => remoteWorktree({ repo: repo.path, path: join(repo.path, ".wt", id), branch: `flow/${id}`, target: "main" }, "origin", serial)),
      )
      for (const m of made) if (m.status === "rejected") failed.push(String(m.reason).split("\n")[0])
    }
    pushing = false
    await pusher
    expect(failed).toEqual([])
  })
})

async function realRoot(dir: string): Promise<string> {
  return (await git(dir, ["rev-parse", "--show-toplevel"])).trim()
}
