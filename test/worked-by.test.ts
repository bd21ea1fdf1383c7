// Who works on a task (docs/CLI.md "Who works on a task"): during a real `flow run` of the script agent,
// after it is stopped, and after it finished, as `flow show`, `flow list` and their --json say it.
import { expect, test } from "bun:test"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { projectAt } from "../lib/cli/project"
import { ListReport, ShowReport } from "../lib/model/json-shapes"
import { openState } from "../lib/state/state"
import { strictJson } from "./fixtures/read-sample"
import { background, flow, git, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

/** Waits for a file the agent's script creates (a condition, polled: the script runs in another process). */
async function fileAppears(path: string): Promise<void> {
  for (let i = 0; i < 600 && !existsSync(path); i++) await Bun.sleep(50)
  expect(existsSync(path)).toBe(true)
}

test.concurrent("show, list and --json name the run's agent: working on it, stopped with its run, then the one that finished it", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\n" })
  // `slow` waits for a file the test writes; `other` is never run (blocked).
  const script = sh(
    'touch "$FLOW_PROJECT/started"\nwhile [ ! -e "$FLOW_PROJECT/go" ]; do sleep 0.05; done\necho ok > slow.txt\ngit add slow.txt\ngit commit -qm slow',
  )
  dir.write(
    "tasks.yaml",
    tasksYaml([
      { id: "slow", title: "Slow", status: "todo", instructions: script },
      { id: "other", title: "Other", status: "blocked", instructions: "x" },
    ]),
  )
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-qm", "tasks"])
  const env = { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@flow.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@flow.invalid" }
  const show = async (id: string) => (await flow(dir.path, ["show", id])).stdout.split("\n").filter((l) => /^(Agent|Worked by):/.test(l))
  const listed = async () => (await flow(dir.path, ["list"])).stdout
  const json = async () => {
    const list = strictJson<ListReport>(ListReport, (await flow(dir.path, ["list", "--json"])).stdout)
    return Object.fromEntries(list.phases.flatMap((g) => g.tasks).map((t) => [t.id, t.worked_by]))
  }

  const first = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], env)
  await fileAppears(join(dir.path, "started"))
  expect(await show("slow")).toEqual(["Agent: none (any agent may take it)", "Worked by: script-1 (working on it now)"])
  expect(await show("other")).toEqual(["Agent: none (any agent may take it)"])
  expect(await listed()).toBe("No phase\n[in_progress] slow Slow (working: script-1)\n[blocked] other Other\n")
  const working = { agent: "script-1", state: "working" as const, ended_at: null, ended_status: null }
  expect(await json()).toEqual({ slow: working, other: null })
  const shown = strictJson<ShowReport>(ShowReport, (await flow(dir.path, ["show", "slow", "--json"])).stdout)
  expect(shown.worked_by).toEqual(working)

  first.proc.kill("SIGTERM")
  expect(await first.proc.exited).toBe(130)
  expect(await show("slow")).toEqual(["Agent: none (any agent may take it)", "Worked by: script-1 (stopped with its run; the next 'flow run' resumes it)"])
  expect(await listed()).toBe("No phase\n[in_progress] slow Slow (stopped: script-1)\n[blocked] other Other\n")
  expect((await json()).slow).toMatchObject({ agent: "script-1", state: "stopped", ended_status: "in_progress" })

  dir.write("go", "")
  const second = await flow(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"], { env })
  expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 4, stderr: "" }) // `other` stays blocked
  const [agent, by] = await show("slow")
  expect(agent).toBe("Agent: none (any agent may take it)")
  expect(by).toMatch(/^Worked by: script-1 \(until \d{4}-\d\d-\d\dT[\d:.]+Z, leaving it done\)$/)
  expect(await listed()).toBe("No phase\n[done] slow Slow (by script-1)\n[blocked] other Other\n")
  expect((await json()).slow).toMatchObject({ agent: "script-1", state: "ended", ended_status: "done" })
})

test.concurrent("an agent_name stays the Agent line; a record of a killed run with no run alive is stopped", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "in_progress", agent_name: "claude-1", instructions: "x" }]),
  })
  {
    using db = await openState(projectAt(dir.path))
    await db.agents.upsert("claude-1", { cli: "claude", current_task: "a" })
  }
  const r = await flow(dir.path, ["show", "a"])
  expect(r.stdout).toContain("\nAgent: claude-1\nWorked by: claude-1 (stopped with its run; the next 'flow run' resumes it)\n")
  expect((await flow(dir.path, ["list"])).stdout).toBe("No phase\n[in_progress] a A (stopped: claude-1)\n")
})
