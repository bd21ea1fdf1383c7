// The README's main job: build dist/flow (npm run demo does), then let it create the demo project in a new
// temp folder and drive it end to end with offline agents. Usage: bun scripts/demo.ts [<dir>]
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const flow = resolve(import.meta.dir, "..", "dist", "flow")
const dir = resolve(process.argv[2] ?? join(mkdtempSync(join(tmpdir(), "flow-demo-")), "shorty"))
console.log(`$ flow demo ${dir} --yes`)
const run = Bun.spawn([flow, "demo", dir, "--yes"], { stdout: "inherit", stderr: "inherit" })
const code = await run.exited
if (code !== 0) {
  console.error(`demo: 'flow demo' exited ${code}`)
  process.exit(1)
}
console.log(`\n$ flow list   (in ${dir})`)
const list = Bun.spawn([flow, "-C", dir, "list"], { stdout: "inherit", stderr: "inherit" })
process.exit(await list.exited)
