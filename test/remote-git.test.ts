// The shared remote's refs in one clone (lib/git/remote-git.ts), with real git: several of the clone's gits
// write one remote-tracking ref at once in a fleet run (a task's worktree fetching the target while a landing
// records its push there), and git refuses the later writer ("cannot lock ref ... is at X but expected Y").
import { expect, test } from "bun:test"
import { fetchBranch, tracking } from "../lib/git/remote-git"
import { bareOrigin, git, tempRepo } from "./helpers"

test("a fetch racing another write of its tracking ref is tried again, not failed: it ends at the remote's branch", async () => {
  await using repo = await tempRepo({ "a.txt": "a\n" })
  await bareOrigin(repo.path)
  const commit = async (n: number) => {
    await Bun.write(repo.file("a.txt"), `${n}\n`)
    await git(repo.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qam", `c${n}`])
  }
  for (let n = 1; n <= 4; n++) await commit(n)
  await git(repo.path, ["push", "-q", "origin", "main"])
  const remoteMain = (await git(repo.path, ["rev-parse", "main"])).trim()
  const ref = tracking("origin", "main")
  // Each round: the tracking ref is set back, then two fetches and a writer of the ref (as a landing's push
  // record is) go at once. Without the retry, git failed about half of such rounds here.
  for (let round = 0; round < 30; round++) {
    await git(repo.path, ["update-ref", ref, "main~3"])
    const [a, , b] = await Promise.all([
      fetchBranch(repo.path, "origin", "main"),
      // the other writer: whether git lets it through or not is not this test's matter
      Bun.spawn(["git", "update-ref", ref, `main~${1 + (round % 3)}`], { cwd: repo.path, stderr: "ignore" }).exited,
      fetchBranch(repo.path, "origin", "main"),
    ])
    expect([a, b]).toEqual([remoteMain, remoteMain])
  }
})
