// A claim its run has just taken is not lost to the lease renewal in flight (issue 31, case 2; docs/FLEET.md,
// "Claims, leases, fencing"). The renewal is one statement over the run's claims, and a claim that commits
// while it runs is not among the rows it returns: a run that read that as "another run took this task over"
// stopped the task's agent but kept its claim, renewed ever after, so no run took the task until this one
// ended. Alone on a project there is no other run: any takeover said is a false one. The database is slowed
// by a trigger (50 ms for each row a statement updates in the table of claims), which makes the renewal and
// the claims slow enough to overlap in most runs of a few tasks.
import { describe, expect, test } from "bun:test"
import { fleet, mergesPerTask, sh, taskIds, undone } from "./fleet-helpers"
import { background, tasksYaml } from "./helpers"
import { freshDatabase, HAVE_POSTGRES } from "./postgres"

const RUNS = 10
const IDS = taskIds(6)

/** Independent tasks: three agents claim all the time, and hold three claims for each renewal to update. */
const tasks = () => tasksYaml(IDS.map((id) => ({ id, title: id, status: "todo", instructions: sh(`mkdir -p work\necho ${id} > work/${id}.txt`) })))

describe.skipIf(!HAVE_POSTGRES)("a run's lease renewal and its own claims", () => {
  test(`${RUNS} runs, each alone on a database slowed by 50 ms a row: no false takeover, every task merged once`, async () => {
    const seen: { run: number; code: number | null; takeovers: string[]; undone: unknown[]; unmerged: string[] }[] = []
    for (let run = 0; run < RUNS; run++) {
      await using db = await freshDatabase()
      // Renewals every two thirds of a second: a run of six tasks meets several.
      await using f = await fleet(db.url, tasks, "lease: 2s\n")
      await db.sql.unsafe(`
        CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$;
        CREATE TRIGGER slow_row BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION slow_row();`)
      const m1 = await f.clone("m1")
      const done = await background(m1.path, ["run", "--cli", "script", "--agents", "3", "--headless"], m1.env).done()
      const merges = await mergesPerTask(f.remote)
      seen.push({
        run,
        code: done.code,
        takeovers: done.stdout.split("\n").filter((l) => l.includes("took this task over")),
        undone: await undone(m1),
        unmerged: IDS.filter((id) => merges.get(id) !== 1),
      })
    }
    expect(seen).toEqual(Array.from({ length: RUNS }, (_, run) => ({ run, code: 0, takeovers: [], undone: [], unmerged: [] })))
  }, 900_000) // ten runs of six tasks: a minute or two on an idle machine, up to ten on one as loaded as the suite makes it
})
