// A run of its own for test/fleet-claims.test.ts: a separate process that claims from a shared project until
// nothing is left, with `loops` claimers at once, each under its own run id (`<run>-<n>`), then prints what
// each took as JSON. It starts when the test's other claimers are ready too (together.ts).
// Usage: bun test/fleet-claimer.ts <url> <key> <run> <loops> <ids,...>
import { projectAt } from "../lib/cli/project"
import { closeDatabases } from "../lib/store/postgres/connection"
import { PgTaskStore } from "../lib/store/postgres/pg-store"
import { parseUrl } from "../lib/store/postgres/url"
import { sharedSetting } from "../lib/store/setting"
import { ready } from "./together"

const [url, key, run, loops, ids] = process.argv.slice(2)
const claims = PgTaskStore.fresh(sharedSetting(projectAt("/tmp"), parseUrl(url, "claimer"), key, undefined)).claims
const candidates = ids.split(",")
await claims.holds({ taskId: candidates[0], attempt: -1, run }) // connected and migrated before the start
await ready()
const taken = await Promise.all(
  Array.from({ length: Number(loops) }, async (_, n) => {
    const mine: string[] = []
    // More claims than candidates would be a task taken twice: stop there rather than loop on a broken claim.
    while (mine.length <= candidates.length) {
      const fence = await claims.claim(candidates, { run: `${run}-${n}`, agent: `agent-${n}` }, 60_000)
      if (!fence) return mine
      mine.push(fence.taskId)
    }
    return mine
  }),
)
process.stdout.write(`${JSON.stringify(taken.flat())}\n`)
await closeDatabases()
