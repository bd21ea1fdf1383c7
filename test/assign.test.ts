// `flow assign <task_id> <agent_name>`: sets agent_name only.
import { expect, test } from "bun:test"
import { flow, tempRepo } from "./helpers"
import { refused, run, unchanged } from "./change-helpers"

const FILE = `tasks:
  # the api
  - id: api
    title: API
    status: ready_for_agent
    instructions: build
  - {id: done-one, title: Done, status: done, instructions: x, agent_name: codex}
`

test.concurrent("assign sets agent_name and leaves the status; a done task may be reassigned", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  const after = await run(dir, ["assign", "api", "claude"], { stdout: "api: assigned to claude\n" })
  expect(after).toBe(FILE.replace("    instructions: build\n", "    instructions: build\n    agent_name: claude\n"))
  const again = await run(dir, ["assign", "done-one", "claude.2_b-c"], { stdout: "done-one: assigned to claude.2_b-c (was codex)\n" })
  expect(again).toBe(after.replace("agent_name: codex}", "agent_name: claude.2_b-c}"))
})

test.concurrent("assigning the same agent again says so and writes nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  await unchanged(dir, async () =>
    expect(await flow(dir.path, ["assign", "done-one", "codex"])).toEqual({ code: 0, stdout: "done-one is already assigned to codex\n", stderr: "" }),
  )
})

test.concurrent("a bad agent name or a missing argument is a usage error; an unknown task exits 1", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  const naming = "hint: use up to 64 letters, digits, '.', '_' and '-', starting with a letter or digit (for example claude or codex-2)\n"
  for (const bad of ["-claude", ".x", "a b", "x/y", "é", "a".repeat(65)]) {
    const args = bad.startsWith("-") ? ["assign", "api", "--", bad] : ["assign", "api", bad]
    await refused(dir, args, 2, `error: '${bad}' is not a valid agent name\n${naming}`)
  }
  await refused(
    dir,
    ["assign", "api"],
    2,
    "error: missing <agent_name>\nhint: usage: flow assign <task_id> <agent_name> | flow assign <task_id> --clear [--json]\n",
  )
  await refused(
    dir,
    ["assign", "api", "a", "b"],
    2,
    "error: unexpected argument 'b'\nhint: usage: flow assign <task_id> <agent_name> | flow assign <task_id> --clear [--json]\n",
  )
  await refused(dir, ["assign", "apx", "claude"], 1, "error: no task 'apx' in tasks.yaml\nhint: did you mean 'api'?\n")
})

test.concurrent("assign --clear removes agent_name, touching nothing else; clearing an unassigned task writes nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": FILE })
  const after = await run(dir, ["assign", "done-one", "--clear"], { stdout: "done-one: no longer assigned (was codex)\n" })
  expect(after).toBe(FILE.replace(", agent_name: codex}", "}"))
  await unchanged(dir, async () =>
    expect(await flow(dir.path, ["assign", "api", "--clear"])).toEqual({ code: 0, stdout: "api is not assigned to any agent\n", stderr: "" }),
  )
  await refused(
    dir,
    ["assign", "api", "claude", "--clear"],
    2,
    "error: unexpected argument 'claude'\nhint: usage: flow assign <task_id> <agent_name> | flow assign <task_id> --clear [--json]\n",
  )
})
