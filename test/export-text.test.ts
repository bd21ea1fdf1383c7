// A graph written onto the tasks.yaml text it came from (lib/store/export-text.ts): the text itself when
// nothing changed, minimal edits for progress, the YAML Document laid over for the rest; always a text that
// reads back as the graph, keeping the comments of the tasks still there.
import { expect, test } from "bun:test"
import { textOnto } from "../lib/store/export-text"
import type { TaskFile } from "../lib/model/task-index"

const BASE = `# header comment
phases:
  - {number: 1, title: Base}
tasks:
  # the root task
  - id: a
    title: A   # inline
    status: todo
    instructions: |
      Line one.
      Line two.
  - id: b
    title: B
    status: todo
    depends_on: [a]
    instructions: b
    subtasks:
      # a subtask's comment
      - id: b1
        title: B1
        status: todo
        instructions: x
        steps:
          - {id: b1-s, instruction: do}
# trailing comment
`

const parse = (text: string) => Bun.YAML.parse(text) as TaskFile

test("a graph that reads as the text gets the text back byte for byte", () => {
  expect(textOnto(BASE, parse(BASE))).toBe(BASE)
  const crlf = BASE.replace(/\n/g, "\r\n")
  expect(textOnto(crlf, parse(crlf))).toBe(crlf)
})

test("a graph laid over a CRLF text with a byte order mark keeps both", () => {
  const crlf = `\uFEFF${BASE.replace(/\n/g, "\r\n")}`
  const data = parse(crlf)
  data.tasks.push({ id: "c", title: "C", status: "todo", instructions: "c" })
  const text = textOnto(crlf, data)
  expect(parse(text)).toEqual(data)
  expect({ bom: text.startsWith("\uFEFF"), lf: text.replaceAll("\r\n", "").includes("\n") }).toEqual({ bom: true, lf: false })
})

test("progress (values, removed keys, appended notes, step state) is written as minimal edits", () => {
  const data = parse(BASE)
  const [a, b] = data.tasks
  a.status = "done"
  ;(a as Record<string, unknown>).completed_at = "2024-01-02T03:04:05Z"
  a.ai_notes = ["first"]
  b.subtasks![0].steps![0].status = "in_progress"
  delete (b as Record<string, unknown>).depends_on
  const text = textOnto(BASE, data)
  expect(parse(text)).toEqual(data)
  expect(text).toBe(
    BASE.replace("    title: A   # inline\n    status: todo\n", "    title: A   # inline\n    status: done\n")
      .replace("      Line two.\n", "      Line two.\n    completed_at: 2024-01-02T03:04:05Z\n    ai_notes:\n      - first\n")
      .replace("    depends_on: [a]\n", "")
      .replace("{id: b1-s, instruction: do}", "{id: b1-s, instruction: do, status: in_progress}"),
  )
})

test("tasks added, removed and moved keep the comments of those still there", () => {
  const data = parse(BASE)
  const [a, b] = data.tasks
  data.tasks = [b, a, { id: "c", title: "C", status: "todo", instructions: "new" }]
  b.subtasks = []
  const text = textOnto(BASE, data)
  expect(parse(text)).toEqual(data)
  expect(text).toContain("# header comment")
  // The Document is written by the yaml package: a comment's spacing and flow lists' may change, not their place.
  expect(text).toMatch(/title: A +# inline\n/)
  expect(text).toContain("depends_on: [a]\n")
  expect(text.indexOf("id: b")).toBeLessThan(text.indexOf("id: a"))
  expect(text).toContain("- id: c\n")
})

test("a top-level key other than the tasks follows the graph; without a text the graph is rendered afresh", () => {
  const data = parse(BASE) as TaskFile & { phases: unknown[] }
  data.phases = [
    { number: 1, title: "Base" },
    { number: 2, title: "More" },
  ]
  const text = textOnto(BASE, data)
  expect(parse(text)).toEqual(data)
  expect(text).toContain("# the root task")
  const fresh = textOnto(undefined, data)
  expect(parse(fresh)).toEqual(data)
})
