// The floor of bench/validate-floods.ts: the `yaml` package's own parse of a file, as flow's validate uses it
// for positions (parseDocument with a LineCounter). Prints the number of errors yaml found.
// Usage: yaml-floor [file]   (default: tasks.yaml in the working directory)
import { readFileSync } from "node:fs"
import { LineCounter, parseDocument } from "yaml"

const text = readFileSync(process.argv[2] ?? "tasks.yaml", "utf8")
const doc = parseDocument(text, { lineCounter: new LineCounter(), prettyErrors: false })
process.stdout.write(`${doc.errors.length}\n`)
