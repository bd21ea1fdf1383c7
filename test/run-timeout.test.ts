// task_timeout: an agent that stops (SIGSTOP), hangs or loops is stopped after the limit, with its whole
// process group, and its task is retried like an agent that exits without `flow done`, then blocked with why.
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { background, flow, tasksYaml, tempRepo, type TempDir } from "./helpers"

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))
const notes = (yaml: string, id: string) =>
  (Bun.YAML.parse(yaml) as { tasks: { id: string; ai_notes?: string[] }[] }).tasks.find((t) => t.id === id)?.ai_notes ?? []

/** A command agent running `script` (bash) that counts its turns in turns/ and records each pid. */
function commandAgent(dir: TempDir, script: string, config = "") {
  dir.write("agent.sh", `mkdir -p "${dir.path}/turns"\nn=$(ls "${dir.path}/turns" | wc -l)\necho $$ > "${dir.path}/turns/$n"\n${script}\n`)
  dir.write("flow.yaml", `agents:\n  - name: cmd\n    cli: command\n    command: ["bash", "${dir.file("agent.sh")}", "{prompt}"]\n${config}`)
}

const turns = (dir: TempDir) =>
  Bun.spawnSync(["ls", dir.file("turns")])
    .stdout.toString()
    .trim()
    .split("\n")
    .filter(Boolean)
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

test.concurrent("a SIGSTOPped agent is stopped after task_timeout, its process gone, and its task retried: the next turn finishes it", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\nagent.sh\nturns/\n" })
  // The first turn stops itself; the second finishes.
  commandAgent(dir, `[ "$n" = 0 ] && kill -STOP $$\nflow done "$FLOW_TASK_ID"`, "task_timeout: 2s\n")
  dir.write("tasks.yaml", tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "Build the API." }]))
  const r = await flow(dir.path, ["run", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toContain("api: task_timeout: its agent ran for 2s: stopping it\n")
  expect(r.stdout).toContain("api: retry 2: the agent was stopped after 2s (task_timeout) without 'flow done api' or 'flow block api'\n")
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ api: "done" })
  const pids = turns(dir).map((n) => Number(readFileSync(dir.file(`turns/${n}`), "utf8")))
  expect(pids).toHaveLength(2)
  expect(pids.map(alive)).toEqual([false, false])
})

test.concurrent("an agent stopped by task_timeout on every turn is blocked with why after the retries; the task's own task_timeout wins", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\nagent.sh\nturns/\n" })
  commandAgent(dir, "echo working\nkill -STOP $$", "task_timeout: 1h\nretries: 1\n")
  dir.write("tasks.yaml", tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "Build the API.", task_timeout: "1s" }]))
  const r = await flow(dir.path, ["run", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
  expect(turns(dir)).toHaveLength(2)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ api: "blocked" })
  expect(notes(dir.read("tasks.yaml"), "api")).toEqual([
    "the agent was stopped after 1s (task_timeout) without 'flow done' or 'flow block'; its last output:\nworking",
  ])
})

test.concurrent("the script agent stopped by task_timeout is blocked at once, as a failing script is", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\n", "flow.yaml": "task_timeout: 1s\n" })
  dir.write("tasks.yaml", tasksYaml([{ id: "s", title: "S", status: "todo", instructions: "```sh\necho before\nkill -STOP $$\necho after\n```" }]))
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
  expect(notes(dir.read("tasks.yaml"), "s")).toEqual(["script was stopped after 1s (task_timeout):\nbefore"])
})

test.concurrent("time an agent waits for an answer (flow ask --wait) does not count against task_timeout", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\nagent.sh\nturns/\n" })
  commandAgent(dir, `echo asking\nflow ask "$FLOW_TASK_ID" "which port?" --wait\nflow done "$FLOW_TASK_ID"`, "task_timeout: 2s\n")
  dir.write("tasks.yaml", tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "Build the API." }]))
  const run = background(dir.path, ["run", "--headless"])
  await run.waitFor("api | asking")
  // Longer than the limit, all of it waiting for a person.
  await Bun.sleep(3_000)
  expect((await flow(dir.path, ["questions"])).stdout).toContain("q-1")
  expect((await flow(dir.path, ["answer", "q-1", "8080"])).code).toBe(0)
  const r = await run.done()
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).not.toContain("task_timeout")
  expect(turns(dir)).toHaveLength(1)
})
