// The soak's fuzz corpus: mutated tasks files, each put through what validate, list and done do, in process
// (thousands of CLI spawns would take an hour; a sample also goes through the real CLI in bench/soak.ts).
// A file validate accepts must be editable by every writer, and the edit must validate again; nothing may
// throw anything but a FlowError (no RangeError from deep nesting, no internal error from an alias).
import { FlowError } from "../lib/cli/errors"
import { TasksEditor } from "../lib/store/task-edit"
import { indexTasks, type TaskFile } from "../lib/model/task-index"
import { taskLine } from "../lib/graph/task-lines"
import { applyStatus } from "../lib/store/transitions"
import { validateText } from "../lib/validation/validate"

export const BASE = `# fuzz base: comments, flow style, block strings, steps, subtasks
tasks:
  - id: setup   # the root
    title: "Set up: the repo"
    status: in_progress
    phase: 1
    instructions: |
      Make the repo.

      Keep it small.
    ai_notes:
      - 'first note'
  - id: api
    title: API layer
    status: todo
    depends_on: [setup]
    worktree: feature/api
    instructions: >-
      Build the API.
    subtasks:
      - id: api-auth
        title: Auth
        status: in_progress
        instructions: auth
      - title: Routes
        id: api-routes
        status: todo
        depends_on: [api-auth]
        instructions: routes
  - id: stepped
    title: Steps
    status: in_progress
    steps:
      - id: stepped.1
        instruction: one
        status: done
      - id: stepped.2
        instruction: two
  - {id: flowy, title: Flow style, status: in_progress, instructions: x}
  - id: last
    title: Last
    status: todo
    depends_on: [api, stepped]
    instructions: the end
`

const HOSTILE_BRANCHES = [
  "origin/main",
  "refs/heads/x",
  "heads/x",
  "remotes/origin/x",
  "HEAD",
  "@",
  "-x",
  "a..b",
  "x.lock",
  "a b",
  "x/",
  ".x",
  "a//b",
  "a~1",
  "a^",
  "a:b",
  "a?",
  "a*",
  "a[b",
  "a\\\\b",
  "a@{1}",
  "ok/name",
  "feature/x.y",
]
const CHARS = [":", "-", "#", "&", "*", "[", "]", "{", "}", "|", ">", "'", '"', "\r", "\t", " ", "\n", "!", "%", "@", "`", "x", "0"]

type Rng = () => number

function mutate(text: string, rnd: Rng): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]
  const lines = text.split("\n")
  const at = Math.floor(rnd() * lines.length)
  switch (Math.floor(rnd() * 14)) {
    case 0:
      lines.splice(at, 1)
      break
    case 1:
      lines.splice(at, 0, lines[at])
      break
    case 2: {
      const b = Math.floor(rnd() * lines.length)
      ;[lines[at], lines[b]] = [lines[b], lines[at]]
      break
    }
    case 3:
      lines[at] = rnd() < 0.5 ? `  ${lines[at]}` : lines[at].replace(/^ {1,2}/, "")
      break
    case 4: {
      const i = Math.floor(rnd() * text.length)
      return text.slice(0, i) + pick(CHARS) + text.slice(i + 1)
    }
    case 5:
      return text.replace("status: todo", "status: &s todo").replace("status: in_progress\n    instructions: the", "status: *s\n    instructions: the")
    case 6:
      return text.replace(/status: \w+/, `status: ${pick(["todo", "done", "doing", "blocked", "in_progress", "''", "[x]"])}`)
    case 7:
      return text.replace("worktree: feature/api", `worktree: ${JSON.stringify(pick(HOSTILE_BRANCHES))}`)
    case 8:
      return text.replace("    instructions: >-\n      Build the API.\n", "    steps:\n      - id: api.1\n        instruction: both\n")
    case 9:
      return rnd() < 0.5 ? text.replace(/\n/g, "\r") : text.replace(/\n/g, "\r\n")
    case 10:
      return text.slice(0, Math.floor(rnd() * text.length))
    case 11:
      return text.replace("instructions: the end\n", `instructions: the end\n    subtasks: ${"[".repeat(100 + Math.floor(rnd() * 900))}\n`)
    case 12:
      lines.splice(at, 0, `${" ".repeat(Math.floor(rnd() * 12))}- id: extra-${at}\n${" ".repeat(Math.floor(rnd() * 12))}  title: X\n    status: todo`)
      break
    default:
      lines[at] = `${lines[at]} # ${pick(CHARS)}${pick(CHARS)}`
  }
  return lines.join("\n")
}

export function seeded(seed: number): Rng {
  let s = seed >>> 0
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296
}

/** The mutated files: 1 to 3 mutations of BASE each, reproducible from the seed. */
export function corpus(count: number, seed = 12): string[] {
  const rnd = seeded(seed)
  return Array.from({ length: count }, () => {
    let text = BASE
    for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) text = mutate(text, rnd)
    return text
  })
}

export type FuzzResult = { runs: number; failures: number; accepted: number; examples: string[] }

/** Each file: validate; when valid, list every task, then done and a note on one task, whose result must validate too. */
export async function fuzz(files: string[], rnd = seeded(5)): Promise<FuzzResult> {
  const out: FuzzResult = { runs: files.length, failures: 0, accepted: 0, examples: [] }
  const fail = (text: string, why: string) => {
    out.failures++
    if (out.examples.length < 5) out.examples.push(`${why}: ${JSON.stringify(text.slice(0, 120))}`)
  }
  for (const text of files) {
    try {
      const { findings } = await validateText(text)
      if (findings.some((f) => f.severity === "error")) continue
      out.accepted++
      const data = Bun.YAML.parse(text) as TaskFile
      const ids = [...indexTasks(data).keys()]
      for (const id of ids) taskLine(indexTasks(data).get(id)!.task)
      if (ids.length === 0) continue
      const id = ids[Math.floor(rnd() * ids.length)]
      const editor = new TasksEditor(text, Bun.YAML.parse(text) as TaskFile)
      try {
        applyStatus(editor, id, "done", "2026-01-01T00:00:00Z")
      } catch (e) {
        if (!(e instanceof FlowError) || e.message.startsWith("internal error")) throw e
        continue // a parent with open subtasks: refused by rule, not a disagreement
      }
      editor.append({ taskId: id }, "ai_notes", "fuzz: note")
      const next = editor.result()
      const again = await validateText(next)
      if (again.findings.some((f) => f.severity === "error")) fail(text, `done wrote an invalid file (${again.findings[0].message})`)
    } catch (e) {
      fail(text, `threw: ${(e as Error).name}: ${(e as Error).message.split("\n")[0]}`)
    }
  }
  return out
}
