// The benchmark's floor: the least any command that reads tasks.yaml must do. Reads the file, parses it
// with Bun.YAML.parse, prints the number of tasks. bench/run.ts compiles it with the flags of
// package.json's build script, like dist/flow, so the floor includes the same process start-up.
// Usage: floor [file]   (default: tasks.yaml in the working directory)
import { readFileSync } from "node:fs"

const text = readFileSync(process.argv[2] ?? "tasks.yaml", "utf8")
const data = Bun.YAML.parse(text) as { tasks?: unknown[] } | null
process.stdout.write(`${Array.isArray(data?.tasks) ? data.tasks.length : 0}\n`)
