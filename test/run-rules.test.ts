// `flow run` rules of issue 11 beyond crashes: a fresh session gets the whole prompt, `assigned` is written,
// tasks restricted to an agent the run lacks are named, and a project folder outside any repository works
// when every task names its repo.
import { expect, test } from "bun:test"
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { background, flow, git, pidsOf, tasksYaml, tempRepo, until } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

test.concurrent("a command agent that cannot resume is retried with the whole task prompt, then the reminder; assigned is written", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\nprompts/\n" })
  // The agent records each prompt it gets; the first time it exits without 'flow done', the second it finishes.
  dir.write(
    "agent.sh",
    `n=$(ls "${dir.path}/prompts" 2>/dev/null | wc -l)\nmkdir -p "${dir.path}/prompts"\nprintf '%s' "$1" > "${dir.path}/prompts/$n"\n[ "$n" = 0 ] && exit 0\nflow done "$FLOW_TASK_ID"\n`,
  )
  dir.write("flow.yaml", `agents:\n  - name: cmd\n    cli: command\n    command: ["bash", "${dir.file("agent.sh")}", "{prompt}"]\n`)
  dir.write("tasks.yaml", tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "Build the API." }]))
  const r = await flow(dir.path, ["run", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toContain("api: todo → assigned")
  expect(r.stdout).toContain("api: assigned → in_progress")
  const second = readFileSync(dir.file("prompts/1"), "utf8")
  expect(second).toContain("# Your task: api: API")
  expect(second).toContain("Build the API.")
  expect(second).toContain("the agent exited (code 0) without 'flow done api'")
})

test.concurrent("a task restricted to an agent this run lacks is named at the start and in the summary", async () => {
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "tasks.yaml": tasksYaml([
      { id: "mine", title: "Mine", status: "todo", instructions: sh("true") },
      { id: "theirs", title: "Theirs", status: "todo", agent_name: "ghost", instructions: sh("true") },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect(r.code).toBe(4)
  expect(r.stdout).toContain("theirs: left alone: its agent_name is 'ghost', which is not an agent of this run (agents: script-1)")
  expect(r.stdout).toMatch(/run: finished after [\d.]+ s: 1 done, 1 not done, for agents not in this run: theirs \(ghost\)\n/)
})

test.concurrent("a project folder that is not a repository runs when every task names its repo", async () => {
  const parent = mkdtempSync(join(tmpdir(), "flow-norepo-"))
  try {
    const app = join(parent, "repos", "app")
    mkdirSync(app, { recursive: true })
    await git(app, ["init", "-q", "-b", "main"])
    await git(app, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "initial"])
    writeFileSync(join(parent, "tasks.yaml"), tasksYaml([{ id: "a", title: "A", status: "todo", repo: "repos/app", instructions: sh("echo a > a.txt") }]))
    const r = await flow(parent, ["run", "--agents", "1", "--cli", "script", "--headless"])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(readFileSync(join(app, "a.txt"), "utf8")).toBe("a\n")
  } finally {
    rmSync(parent, { recursive: true, force: true })
  }
})

test.concurrent("what an agent starts in a session of its own dies with the run (SIGTERM), and what a killed run left dies when the next starts", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\n" })
  // Like OpenCode's tools: `setsid` puts the sleep outside the agent's process group, so only the
  // environment (FLOW_RUN_ID) ties it to the run. Started once per run (the marker file is per run).
  // `inGroup` stays in the agent's group: kill -9 of flow kills it at once (the group's guard, lib/cli/proc.ts).
  const tag = (900 + Math.random() * 99).toFixed(6)
  const [marker, inGroup] = [`sleep ${tag}1`, `sleep ${tag}2`]
  dir.write(
    "tasks.yaml",
    tasksYaml([{ id: "long", title: "Long", status: "todo", instructions: sh(`setsid -f ${marker} </dev/null >/dev/null 2>&1\n${inGroup}`) }]),
  )
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qm", "tasks"])
  const waitForMarker = async () => {
    for (let i = 0; i < 600 && pidsOf(marker).length === 0; i++) await Bun.sleep(100)
    expect(pidsOf(marker).length).toBe(1)
  }
  const first = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
  await first.waitFor("long: started by")
  await waitForMarker()
  first.proc.kill("SIGTERM")
  expect(await first.proc.exited).toBe(130)
  expect(pidsOf(marker)).toEqual([])

  const second = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
  await second.waitFor((o) => /long: (started|resumed) by/.test(o))
  await waitForMarker()
  const left = pidsOf(marker)
  await until(() => pidsOf(inGroup).length > 0)
  second.proc.kill("SIGKILL")
  await second.proc.exited
  await until(() => pidsOf(inGroup).length === 0)
  expect(pidsOf(inGroup)).toEqual([]) // kill -9 of flow: the guard kills the agent's group at once
  expect(pidsOf(marker)).toEqual(left) // but not what left the group

  const third = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
  await third.waitFor("stopped what a dead run left running")
  for (let i = 0; i < 100 && pidsOf(marker).some((p) => left.includes(p)); i++) await Bun.sleep(50)
  expect(pidsOf(marker).filter((p) => left.includes(p))).toEqual([])
  third.proc.kill("SIGTERM")
  expect(await third.proc.exited).toBe(130)
  expect(pidsOf(marker)).toEqual([])
})

test.concurrent("a task whose status cannot be written (a read-only tasks.yaml) is left alone for the run, not taken again in a loop", async () => {
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") }]),
  })
  chmodSync(dir.file("tasks.yaml"), 0o444)
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 4, stderr: "" })
  expect(r.stdout).toContain(
    `a: its status cannot be written: ${dir.file("tasks.yaml")} is read-only (mode 0444): flow does not replace a file that may not be written; left alone until the next run\n`,
  )
  expect(r.stdout).toMatch(/run: finished after [\d.]+ s: 0 done, 1 not done\n$/)
})
