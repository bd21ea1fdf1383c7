// `flow log` and the run's log file (.flow/runs/<run-id>.log): real headless runs of the script agent, the
// file against what the run printed, one task's lines across runs, --follow of a live run to its end, and
// how many runs' logs are kept. (After the full screen: test/run-tui.test.ts.)
import { expect, test } from "bun:test"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { KEEP_RUNS } from "../lib/run/run-log"
import { background, flow, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const RUN = ["run", "--headless", "--agents", "1", "--cli", "script"]
const logsOf = (dir: string) => readdirSync(join(dir, ".flow", "runs")).sort()

const project = (tasks: Record<string, unknown>[]) => tempRepo({ ".gitignore": ".flow/\n", "tasks.yaml": tasksYaml(tasks) })

test.concurrent("before any run it says so; an unknown task id is an error with the closest id", async () => {
  await using dir = await project([{ id: "api", title: "API", status: "todo", instructions: "x" }])
  expect(await flow(dir.path, ["log"])).toEqual({ code: 0, stdout: "No run has been logged yet: each 'flow run' keeps its log in .flow/runs/.\n", stderr: "" })
  const typo = await flow(dir.path, ["log", "apj"])
  expect({ code: typo.code, stdout: typo.stdout }).toEqual({ code: 1, stdout: "" })
  expect(typo.stderr).toContain("no task 'apj'")
  expect(typo.stderr).toContain("'api'")
  expect((await flow(dir.path, ["log", "a", "b"])).code).toBe(2)
})

test.concurrent("a run's log file holds exactly what the headless run printed; a task's lines come from every run", async () => {
  await using dir = await project([
    { id: "api", title: "API", status: "todo", instructions: sh("echo building the api") },
    { id: "api-docs", title: "Docs", status: "todo", depends_on: ["api"], instructions: sh("echo writing docs\nexit 3") },
  ])
  const first = await flow(dir.path, RUN)
  expect(first.code).toBe(4) // api-docs fails
  const [one] = logsOf(dir.path)
  expect(one).toMatch(/^\d{8}-\d{6}-\d+\.log$/)
  expect(readFileSync(join(dir.path, ".flow", "runs", one), "utf8")).toBe(first.stdout)
  expect(await flow(dir.path, ["log"])).toEqual({ code: 0, stdout: first.stdout, stderr: "" })

  expect((await flow(dir.path, ["todo", "api-docs"])).code).toBe(0)
  const second = await flow(dir.path, RUN)
  const two = logsOf(dir.path).find((f) => f !== one) as string
  expect(logsOf(dir.path)).toEqual([one, two].sort())
  expect((await flow(dir.path, ["log"])).stdout).toBe(second.stdout) // the latest run's

  // A task's lines: `<time> api-docs: ...` and `<time> api-docs | ...`, not api's (a prefix of the id).
  const mine = (out: string) => out.split("\n").filter((l) => / api-docs(:| \|) /.test(l))
  const docs = await flow(dir.path, ["log", "api-docs"])
  expect(docs).toEqual({
    code: 0,
    stdout: `==> ${one.slice(0, -4)} <==\n${mine(first.stdout).join("\n")}\n==> ${two.slice(0, -4)} <==\n${mine(second.stdout).join("\n")}\n`,
    stderr: "",
  })
  expect(docs.stdout).toContain(" api-docs | writing docs\n")
  expect(docs.stdout).not.toContain("building the api")
  // api ran only in the first run: the second has no header.
  expect((await flow(dir.path, ["log", "api"])).stdout).toStartWith(`==> ${one.slice(0, -4)} <==\n`)
  expect((await flow(dir.path, ["log", "api"])).stdout).not.toContain(two.slice(0, -4))
  // --follow of a finished run prints it and ends at once.
  expect(await flow(dir.path, ["log", "--follow"])).toEqual({ code: 0, stdout: second.stdout, stderr: "" })
})

test.concurrent("--follow prints a live run's lines as they come and ends when the run ends; with a task id, only its lines", async () => {
  await using dir = await project([
    { id: "slow", title: "Slow", status: "todo", instructions: sh('echo waiting\nwhile [ ! -e "$FLOW_PROJECT/go" ]; do sleep 0.05; done\necho released') },
    { id: "other", title: "Other", status: "todo", depends_on: ["slow"], instructions: sh("echo other ran") },
  ])
  const run = background(dir.path, RUN)
  await run.waitFor("slow | waiting")
  const all = background(dir.path, ["log", "--follow"])
  const slow = background(dir.path, ["log", "-f", "slow"])
  await all.waitFor("slow | waiting")
  await slow.waitFor("slow | waiting")
  writeFileSync(join(dir.path, "go"), "")
  const ran = await run.done()
  expect(ran.code).toBe(0)
  const followed = await all.done()
  expect(followed).toEqual({ code: 0, stdout: ran.stdout, stderr: "" }) // every line, the summary last
  const task = await slow.done()
  const [id] = logsOf(dir.path)
  const lines = ran.stdout.split("\n").filter((l) => / slow(:| \|) /.test(l))
  expect(task).toEqual({ code: 0, stdout: `==> ${id.slice(0, -4)} <==\n${lines.join("\n")}\n`, stderr: "" })
  expect(task.stdout).toContain(" slow | released\n")
  expect(task.stdout).not.toContain("other")
})

test.concurrent(`the newest ${KEEP_RUNS} runs' logs are kept: a run removes the oldest beyond them`, async () => {
  await using dir = await project([{ id: "a", title: "A", status: "todo", instructions: sh("echo a") }])
  const old = Array.from({ length: KEEP_RUNS }, (_, i) => `20260101-0000${String(i).padStart(2, "0")}-100.log`)
  dir.write(".flow/runs/notes.txt", "not a log: left alone\n")
  for (const name of old) dir.write(`.flow/runs/${name}`, `${name}\n`)
  expect((await flow(dir.path, RUN)).code).toBe(0)
  const kept = logsOf(dir.path)
  expect(kept).toHaveLength(KEEP_RUNS + 1) // with notes.txt
  expect(kept).toContain("notes.txt")
  expect(kept.filter((f) => old.includes(f))).toEqual(old.slice(1))
  expect((await flow(dir.path, ["log"])).stdout).toContain(" a | a\n") // the new run's is the latest
})
