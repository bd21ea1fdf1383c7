// The README's main job for now: build a sample project with the compiled binary and check it.
// Usage: bun scripts/demo.ts [<dir>]   (default: a new temp folder)
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dir, "..")
const flow = join(root, "dist", "flow")
const parent = resolve(process.argv[2] ?? mkdtempSync(join(tmpdir(), "flow-demo-")))
const project = join(parent, "url-shortener")

async function step(args: string[], cwd: string) {
  console.log(`\n$ flow ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ")}`)
  const proc = Bun.spawn([flow, ...args], { cwd, stdout: "inherit", stderr: "inherit" })
  const code = await proc.exited
  if (code !== 0) {
    console.error(`demo: 'flow ${args[0]}' exited ${code}`)
    process.exit(1)
  }
}

await Bun.$`mkdir -p ${parent}`.quiet()
await step(["create", "url-shortener"], parent)
await Bun.write(join(project, "tasks.yaml"), Bun.file(join(root, "examples", "tasks.yaml")))
await Bun.$`git init -q -b main ${project}`.quiet()
await step(["validate"], project)
await step(["note", "storage", "Decided: JSON file storage first; SQLite later if needed."], project)
await step(["validate"], project)
console.log(`\nThe sample project is in ${project}`)
