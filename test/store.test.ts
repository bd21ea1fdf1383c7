// The tasks.yaml store through the real CLI: byte-exact edits, the cross-process lock, and refusing to
// write a file that does not parse or validate.
import { expect, test } from "bun:test"
import { readFileSync, statSync } from "node:fs"
import { flow, ROOT, tempRepo } from "./helpers"

const COMMENTED = `# Project tasks: edited by hand too
tasks:
  # phase one
  - id: setup   # the root
    title: "Set up the repo"
    status: done
    phase: 1
    instructions: |
      Make the repo.

      Keep it small.
    ai_notes:
      - 'first note'   # kept
    # trailing comment in setup

  - id: api
    title: API layer
    status: todo
    depends_on: [setup]   # flow style stays flow style
    instructions: >-
      Build the API.
    subtasks:
      - id: api-auth
        title: Auth
        status: todo
        instructions: auth
        ai_notes: []
      - title: Routes
        id: api-routes
        status: todo
        instructions: routes
  - {id: flowy, title: Flow style, status: todo, instructions: x}
# end of file
`

test.concurrent("a note changes only the lines it adds; comments, quoting and layout survive byte for byte", async () => {
  await using dir = await tempRepo({ "tasks.yaml": COMMENTED })
  for (const [id, text] of [
    ["setup", "second: note # not a comment"],
    ["api-auth", 'say "hi"\nand more'],
    ["api-routes", "r1"],
    ["flowy", "f1"],
    ["api", "on api"],
  ]) {
    expect(await flow(dir.path, ["note", id, text])).toEqual({ code: 0, stdout: `Added a note to ${id}\n`, stderr: "" })
  }
  expect(dir.read("tasks.yaml")).toBe(`# Project tasks: edited by hand too
tasks:
  # phase one
  - id: setup   # the root
    title: "Set up the repo"
    status: done
    phase: 1
    instructions: |
      Make the repo.

      Keep it small.
    ai_notes:
      - 'first note'   # kept
      - "second: note # not a comment"
    # trailing comment in setup

  - id: api
    title: API layer
    status: todo
    depends_on: [setup]   # flow style stays flow style
    instructions: >-
      Build the API.
    subtasks:
      - id: api-auth
        title: Auth
        status: todo
        instructions: auth
        ai_notes: ["say \\"hi\\"\\nand more"]
      - title: Routes
        id: api-routes
        status: todo
        instructions: routes
        ai_notes:
          - r1
    ai_notes:
      - on api
  - {id: flowy, title: Flow style, status: todo, instructions: x, ai_notes: [f1]}
# end of file
`)
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("50 processes adding a note at the same moment leave 50 notes and a valid, commented file", async () => {
  await using dir = await tempRepo({ "tasks.yaml": COMMENTED })
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => flow(dir.path, ["note", "api", `note ${i}`])))
  expect(results.filter((r) => r.code !== 0)).toEqual([])
  const text = dir.read("tasks.yaml")
  const data = Bun.YAML.parse(text) as { tasks: { id: string; ai_notes?: string[] }[] }
  const notes = data.tasks.find((t) => t.id === "api")!.ai_notes!
  expect(notes.toSorted()).toEqual(Array.from({ length: 50 }, (_, i) => `note ${i}`).toSorted())
  expect(text.startsWith("# Project tasks: edited by hand too\ntasks:\n  # phase one\n")).toBe(true)
  expect(text).toContain("# trailing comment in setup")
  expect(text.endsWith("# end of file\n")).toBe(true)
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("a lock left by a killed process is taken over at once", async () => {
  await using dir = await tempRepo({ "tasks.yaml": COMMENTED })
  const holder = Bun.spawn([process.execPath, `${ROOT}/test/fixtures/hold-lock.ts`, dir.file("tasks.yaml")], { stdout: "pipe" })
  const reader = holder.stdout.getReader()
  expect(new TextDecoder().decode((await reader.read()).value)).toBe("locked\n")
  holder.kill("SIGKILL")
  await holder.exited
  expect(JSON.parse(dir.read("tasks.yaml.lock")).pid).toBe(holder.pid)
  // The owner's pid is checked, not the lock's age: no wait for a staleness timeout.
  expect(await flow(dir.path, ["note", "setup", "after the crash"])).toEqual({ code: 0, stdout: "Added a note to setup\n", stderr: "" })
  expect(dir.read("tasks.yaml")).toContain("- after the crash")
})

test.concurrent("waiting for a live lock ends with a message naming the holder, and writes nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": COMMENTED })
  const holder = Bun.spawn([process.execPath, `${ROOT}/test/fixtures/hold-lock.ts`, dir.file("tasks.yaml")], { stdout: "pipe" })
  await holder.stdout.getReader().read()
  try {
    const r = await flow(dir.path, ["note", "setup", "x"], { env: { FLOW_LOCK_TIMEOUT: "0.3" } })
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(
      new RegExp(
        `^error: tasks.yaml is locked by process ${holder.pid} \\(hold-lock fixture\\) since \\S+; gave up after it held the lock for 0.3 s without progress\\nhint: process ${holder.pid} runs but used no CPU meanwhile: if it hangs, end it \\(kill ${holder.pid}\\): flow takes over the lock of a process that has ended; do not delete \\S+tasks.yaml.lock while its process runs; FLOW_LOCK_TIMEOUT \\(seconds\\) sets how long to wait\\n$`,
      ),
    )
    expect(dir.read("tasks.yaml")).toBe(COMMENTED)
  } finally {
    holder.kill()
  }
})

test.concurrent("a file that does not parse is never written: the error names file:line:column with the line and a caret", async () => {
  const broken = "tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: [unclosed\n"
  await using dir = await tempRepo({ "tasks.yaml": broken })
  const r = await flow(dir.path, ["note", "a", "x"])
  expect(r.code).toBe(3)
  expect(r.stdout).toBe("")
  expect(r.stderr).toMatch(
    /^error: tasks.yaml is invalid \(1 error, 0 warnings\); the first:\nERROR: YAML: .+\n {2}at \S+tasks.yaml:\d+:\d+\n +\d+ \| .*\n +\| +\^\n/,
  )
  expect(readFileSync(dir.file("tasks.yaml"), "utf8")).toBe(broken)
})

test.concurrent("a file that fails validation is left untouched and the command exits 3", async () => {
  const invalid = "tasks:\n  - id: a\n    title: A\n    status: doing\n    instructions: x\n"
  await using dir = await tempRepo({ "tasks.yaml": invalid })
  const r = await flow(dir.path, ["note", "a", "x"])
  expect(r.code).toBe(3)
  expect(r.stderr).toContain(`ERROR: Task 'a': status must be one of todo, ready_for_agent, assigned, in_progress, done, blocked (was "doing")`)
  expect(r.stderr).toContain("hint: run 'flow validate' to see every problem")
  expect(dir.read("tasks.yaml")).toBe(invalid)
})

test.concurrent("an unknown task id names the closest one and writes nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": COMMENTED })
  expect(await flow(dir.path, ["note", "api-auht", "x"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: no task 'api-auht' in tasks.yaml\nhint: did you mean 'api-auth'?\n",
  })
  expect(dir.read("tasks.yaml")).toBe(COMMENTED)
})

test.concurrent("a CRLF file stays CRLF through note, done, todo and assign: the same edits as on LF, with CR LF", async () => {
  const steps = "  - id: st\r\n    title: Steps\r\n    status: todo\r\n    steps:\r\n      - id: st.1\r\n        instruction: one\r\n"
  const edits = [
    ["note", "setup", "second"],
    ["note", "api-auth", "in a flow list"],
    ["note", "api-routes", "new list"],
    ["note", "flowy", "flow style task"],
    ["done", "api-routes"],
    ["todo", "api-routes"],
    ["assign", "api", "claude-1"],
    ["assign", "api", "--clear"],
    ["step", "start", "st.1"],
    ["step", "done", "st.1"],
  ]
  const run = async (text: string) => {
    await using dir = await tempRepo({ "tasks.yaml": text })
    for (const args of edits) expect({ args, ...(await flow(dir.path, args)) }).toMatchObject({ args, code: 0, stderr: "" })
    return dir.read("tasks.yaml").replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>")
  }
  const lf = COMMENTED + steps.replaceAll("\r\n", "\n")
  const [fromLf, fromCrlf] = await Promise.all([run(lf), run(lf.replaceAll("\n", "\r\n"))])
  expect(fromLf).not.toBe(lf)
  expect(fromCrlf).toBe(fromLf.replaceAll("\n", "\r\n"))
})

test.concurrent("the .flow folder a command creates is its owner's alone (it holds prompts, questions and answers)", async () => {
  await using dir = await tempRepo({ "tasks.yaml": "tasks:\n  - {id: a, title: A, status: todo, instructions: x}\n" })
  expect((await flow(dir.path, ["done", "a"])).code).toBe(0)
  expect(statSync(dir.file(".flow")).mode & 0o777).toBe(0o700)
})
