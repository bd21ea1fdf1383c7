// Conflicts avoided before they happen (issue 35): tasks that may run at once and name the same files (`files`,
// from plan.md's `Files:` lines). The run keeps them apart while other work is ready, each one's prompt names
// the other, and `flow validate` reports the pair.
import { expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { flow, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

test.concurrent("two ready tasks naming the same file are not started together while another ready task could be", async () => {
  const logDir = mkdtempSync(join(tmpdir(), "flow-overlap-log-"))
  const log = join(logDir, "log")
  // Each task says when it starts and ends. 'a' ends only once 'other' started, and 'other' only after 'a'
  // ended: while 'a' works, 'b' (which names a's file) is passed over for 'other', and starts after 'a' ended.
  const task = (id: string, files: string[], wait = "") => ({
    id,
    title: `Task ${id}`,
    status: "todo",
    files,
    instructions: sh(`echo "start ${id}" >> ${log}\n${wait}echo ${id} > ${id}.txt\necho "end ${id}" >> ${log}`),
  })
  const waitFor = (line: string) => `i=0; while ! grep -q "${line}" ${log} && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n`
  try {
    await using dir = await tempRepo({
      "tasks.yaml": tasksYaml([
        task("a", ["src/x.ts"], waitFor("start other")),
        task("b", ["src/x.ts", "src/z.ts"]),
        task("other", ["src/y.ts"], waitFor("end a")),
      ]),
    })
    const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    const lines = readFileSync(log, "utf8").trim().split("\n")
    expect(lines.indexOf("start b")).toBeGreaterThan(lines.indexOf("end a"))
    for (const f of ["a.txt", "b.txt", "other.txt"]) expect(dir.read(f)).toBe(`${f[0] === "o" ? "other" : f[0]}\n`)
  } finally {
    rmSync(logDir, { recursive: true, force: true })
  }
})

test.concurrent("two tasks naming the same file with nothing else ready still run side by side", async () => {
  const logDir = mkdtempSync(join(tmpdir(), "flow-overlap-log-"))
  const log = join(logDir, "log")
  // Each waits until the other has started: the run ends only if both were started at once.
  const task = (id: string, other: string) => ({
    id,
    title: `Task ${id}`,
    status: "todo",
    files: ["src/x.ts"],
    instructions: sh(
      `echo "start ${id}" >> ${log}\ni=0; while ! grep -q "start ${other}" ${log} && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\ngrep -q "start ${other}" ${log}\necho ${id} > ${id}.txt`,
    ),
  })
  try {
    await using dir = await tempRepo({ "tasks.yaml": tasksYaml([task("a", "b"), task("b", "a")]) })
    const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect([dir.read("a.txt"), dir.read("b.txt")]).toEqual(["a\n", "b\n"])
  } finally {
    rmSync(logDir, { recursive: true, force: true })
  }
})

const graph = tasksYaml([
  { id: "a", title: "Parser", status: "todo", files: ["src/parse.ts"], instructions: "write the parser" },
  { id: "b", title: "Printer", status: "todo", files: ["src/print.ts", "src/parse.ts"], instructions: "write the printer" },
  // 'c' waits for both: it never runs beside either, though it names the same file.
  { id: "c", title: "Errors", status: "todo", depends_on: ["a", "b"], files: ["src/"], instructions: "errors" },
  // 'd' has no path to 'a' but is done: it is not at work beside anything any more.
  { id: "d", title: "Lexer", status: "done", files: ["src/parse.ts"], instructions: "lexer" },
  { id: "e", title: "Docs", status: "todo", files: ["docs/"], instructions: "docs" },
])

test.concurrent("each prompt of two tasks that may run at once over the same files names the other and the files", async () => {
  await using dir = await tempRepo({ "tasks.yaml": graph })
  const a = await flow(dir.path, ["prompt", "a"])
  const b = await flow(dir.path, ["prompt", "b"])
  const section = (text: string) => text.slice(text.indexOf("## Other tasks on the same files"), text.indexOf("## Talking to flow"))
  expect(section(a.stdout)).toContain("- b: Printer (todo): `src/parse.ts`\n")
  expect(section(b.stdout)).toContain("- a: Parser (todo): `src/parse.ts`\n")
  for (const text of [section(a.stdout), section(b.stdout)]) {
    expect(text).toContain("may be worked on by other agents at the same time as yours")
    expect(text).not.toMatch(/- [cde]:/)
  }
  // A task on files of its own, or linked by dependencies to every task on its files, has no such section.
  for (const id of ["c", "e"]) expect((await flow(dir.path, ["prompt", id])).stdout).not.toContain("## Other tasks on the same files")
})

test.concurrent("flow validate reports pairs of tasks with no dependency path between them that name the same files", async () => {
  // 'c' waits for 'a' alone: it may run at once with 'b', several levels of the graph apart.
  const text = graph.replace("depends_on:\n      - a\n      - b", "depends_on:\n      - a")
  await using dir = await tempRepo({ "tasks.yaml": text })
  const r = await flow(dir.path, ["validate", "--json"])
  expect(r.code).toBe(0)
  const report = JSON.parse(r.stdout) as {
    valid: boolean
    warnings: number
    findings: { severity: string; message: string; line: number; column: number; task_id: string }[]
  }
  const pairs = report.findings.filter((f) => f.message.includes("may run at the same time"))
  const lineOf = (needle: string, from: string) => text.split("\n").indexOf(needle, text.split("\n").indexOf(from)) + 1
  expect(pairs).toEqual([
    {
      severity: "warning",
      message: "Tasks 'a' and 'b' may run at the same time (no dependency path between them) and both name 'src/parse.ts': their merges are likely to conflict",
      task_id: "b",
      line: lineOf("    files:", "  - id: b"),
      column: 5,
      hint: "make one depend on the other, or split the files so that each task has its own ('flow run' keeps them apart while other work is ready)",
    } as never,
    expect.objectContaining({ task_id: "c", message: expect.stringContaining("Tasks 'b' and 'c' may run at the same time") }),
  ])
  expect(report.valid).toBe(true)
  const plain = await flow(dir.path, ["validate"])
  expect(plain.code).toBe(0)
  expect(plain.stdout).toContain(`  at tasks.yaml:${lineOf("    files:", "  - id: b")}:5\n`)
})
