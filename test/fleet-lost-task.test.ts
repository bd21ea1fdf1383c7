// A machine whose task another machine took over and landed, while its own agent went on (issue 31; docs/
// FLEET.md, "Claims, leases, fencing"): its landing meets the other attempt's merge in the remote's main and
// conflicts with it. That is not a failed merge of this machine's: it says it no longer holds the task and
// that another run landed it, lands nothing and blocks nothing. The lapse is made in the database (the claim
// given back, as a lapse the other run took over leaves it), with a lease long enough that no renewal of the
// first machine's comes between: the landing is what finds it.
import { describe, expect, test } from "bun:test"
import { existsSync, writeFileSync } from "node:fs"
import { fleet, mergesPerTask, sh } from "./fleet-helpers"
import { background, git, tasksYaml } from "./helpers"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"

describe.skipIf(!HAVE_POSTGRES)("a task lost while its agent worked", () => {
  test("the machine that lost it says another run landed it, not that its merge failed, and lands nothing", async () => {
    await using db = await freshDatabase()
    let go = ""
    await using f = await fleet(
      db.url,
      (log) => {
        go = `${log}.go`
        // The first machine's agent waits for the test's word; the other's works at once.
        return tasksYaml([
          {
            id: "t01",
            title: "One",
            status: "todo",
            instructions: sh(
              `echo "$FLOW_TASK_ID $FLOW_ATTEMPT $FLOW_MACHINE" >> ${log}.started\nif [ "$FLOW_MACHINE" = m1 ]; then while [ ! -f ${go} ]; do sleep 0.1; done; fi\nmkdir -p work\necho "attempt $FLOW_ATTEMPT on $FLOW_MACHINE" > work/t01.txt`,
            ),
          },
        ])
      },
      "lease: 600s\n",
    )
    const [m1, m2] = [await f.clone("m1"), await f.clone("m2")]
    const first = background(m1.path, ["run", "--cli", "script", "--agents", "1", "--headless"], m1.env)
    while (!existsSync(`${f.log}.started`) || !(await Bun.file(`${f.log}.started`).text()).includes("t01 1 m1")) await Bun.sleep(50)
    // m1's claim lapses unrenewed (its machine cut off from the database, say): m2 takes the task over.
    await db.sql`UPDATE tasks SET claimed_by = NULL, claimed_agent = NULL, lease_until = NULL WHERE project = 'shop' AND id = 't01'`
    const second = await background(m2.path, ["run", "--cli", "script", "--agents", "1", "--headless"], m2.env).done()
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" })
    const merge = (await git(f.remote, ["log", "--merges", "--format=%H", "-1", "main"])).trim()
    // m1's agent finishes now, writing the file m2's attempt wrote too.
    writeFileSync(go, "")
    const done = await first.done()
    const said = done.stdout.split("\n").filter((l) => l.includes("t01:"))
    // Its branch's push is refused (the other attempt pushed it since), as any stale attempt's is.
    expect(said.filter((l) => /merge .* failed|blocked/.test(l))).toEqual([])
    expect(
      said.some((l) =>
        l.endsWith(
          `t01: this run no longer holds t01 (its claim of attempt 1 lapsed), and another run landed it: main of origin has its merge (${merge.slice(0, 12)}); nothing of this attempt lands`,
        ),
      ),
    ).toBe(true)
    expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: "" })
    expect(await mergesPerTask(f.remote)).toEqual(new Map([["t01", 1]]))
    expect(await git(f.remote, ["show", "main:work/t01.txt"])).toBe("attempt 2 on m2\n")
    expect((await db.sql`SELECT status, attempt FROM tasks WHERE project = 'shop' AND id = 't01'`)[0]).toEqual({ status: "done", attempt: 2 })
  }, 300_000)
})
