// `flow ready|start|done|block|todo` through the real CLI: exact output, the whole file after, cascades in
// one write, refusals that leave the file untouched.
import { expect, test } from "bun:test"
import { flow, tempRepo } from "./helpers"
import { refused, run, STAMP, stamped, unchanged } from "./change-helpers"

const GRAPH = `# A hand-written file: comments must survive every change
tasks:
  - id: setup      # the root
    title: Set up
    status: in_progress
    instructions: Make the repo.
  - id: api
    title: API
    status: todo
    depends_on: [setup]   # flow style
    instructions: |
      Build the API.

      Keep it small.
  - id: web
    title: Web
    status: todo
    depends_on:
      - setup
      - api
    instructions: Build the web.
  - id: docs
    title: Docs
    status: blocked
    depends_on: [setup]
    instructions: Write docs.
# end
`

test.concurrent("done sets completed_at and promotes only the todo dependents whose dependencies are now all done", async () => {
  await using dir = await tempRepo({ "tasks.yaml": GRAPH })
  const after = await run(dir, ["done", "setup"], { stdout: "setup: in_progress → done\napi: todo → ready_for_agent (dependencies done)\n" })
  // web still waits for api; docs is blocked, not todo, so it stays blocked.
  expect(stamped(after)).toBe(
    GRAPH.replace(
      "status: in_progress\n    instructions: Make the repo.\n",
      "status: done\n    instructions: Make the repo.\n    completed_at: <now>\n",
    ).replace("    status: todo\n    depends_on: [setup]   # flow style", "    status: ready_for_agent\n    depends_on: [setup]   # flow style"),
  )
  const second = await run(dir, ["done", "api"], { stdout: "api: ready_for_agent → done\nweb: todo → ready_for_agent (dependencies done)\n" })
  expect(stamped(second)).toContain("      Keep it small.\n    completed_at: <now>\n  - id: web\n    title: Web\n    status: ready_for_agent\n")
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("start sets started_at, warns about unfinished dependencies on stderr, and overwrites started_at on a later start", async () => {
  await using dir = await tempRepo({ "tasks.yaml": GRAPH.replace("status: in_progress", "status: todo") })
  const after = await run(dir, ["start", "web"], {
    stdout: "web: todo → in_progress\n",
    stderr: "warning: web depends on setup (todo), api (todo), not done yet; started anyway\n",
  })
  expect(stamped(after)).toBe(
    GRAPH.replace("status: in_progress", "status: todo").replace(
      "    status: todo\n    depends_on:\n      - setup\n      - api\n    instructions: Build the web.\n",
      "    status: in_progress\n    depends_on:\n      - setup\n      - api\n    instructions: Build the web.\n    started_at: <now>\n",
    ),
  )
  // An old started_at is replaced, not duplicated: it measures the latest start.
  dir.write(
    "tasks.yaml",
    after
      .replace(/started_at: \S+/, "started_at: 2020-01-01T00:00:00Z")
      .replace("status: in_progress\n    depends_on:\n      - setup", "status: blocked\n    depends_on:\n      - setup"),
  )
  const again = await run(dir, ["start", "web"], {
    stdout: "web: blocked → in_progress\n",
    stderr: "warning: web depends on setup (todo), api (todo), not done yet; started anyway\n",
  })
  expect(again).not.toContain("2020-01-01")
  expect(again.match(/started_at: (\S+)/)![1]).toMatch(STAMP)
})

test.concurrent("leaving done removes completed_at; ready, todo and block set only the status", async () => {
  const file = `tasks:
  - id: a
    title: A
    status: done
    instructions: x
    completed_at: 2026-01-02T03:04:05Z
    started_at: 2026-01-01T00:00:00Z
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  const ready = await run(dir, ["ready", "a"], { stdout: "a: done → ready_for_agent\n" })
  expect(ready).toBe(file.replace("status: done", "status: ready_for_agent").replace("    completed_at: 2026-01-02T03:04:05Z\n", ""))
  expect(await run(dir, ["todo", "a"], { stdout: "a: ready_for_agent → todo\n" })).toBe(ready.replace("ready_for_agent", "todo"))
  expect(await run(dir, ["block", "a"], { stdout: "a: todo → blocked\n" })).toBe(ready.replace("ready_for_agent", "blocked"))
})

test.concurrent("todo on its own leaves the task todo even when its dependencies are done", async () => {
  const file = "tasks:\n  - {id: a, title: A, status: done, instructions: x}\n  - {id: b, title: B, status: blocked, depends_on: [a], instructions: y}\n"
  await using dir = await tempRepo({ "tasks.yaml": file })
  expect(await run(dir, ["todo", "b"], { stdout: "b: blocked → todo\n" })).toBe(file.replace("status: blocked", "status: todo"))
})

test.concurrent("todo on an approved checkpoint holds back its dependents that have not started, names those that have", async () => {
  const file = `tasks:
  - {id: build, title: Build, status: done, instructions: b}
  - {id: review, title: Review, status: done, checkpoint: true, depends_on: [build], instructions: r}
  - {id: after, title: After, status: ready_for_agent, depends_on: [review], instructions: a}
  - {id: early, title: Early, status: in_progress, depends_on: [review], instructions: e}
  - {id: other, title: Other, status: ready_for_agent, depends_on: [build], instructions: o}
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  const after = await run(dir, ["todo", "review"], {
    stdout: "review: done → todo\nafter: ready_for_agent → todo (dependency review no longer done)\n",
    stderr:
      "warning: review is no longer done, but its dependent early (in_progress) already started; left as it is (run 'flow reset <id>' to redo it after review)\n",
  })
  expect(after).toBe(file.replace("Review, status: done", "Review, status: todo").replace("After, status: ready_for_agent", "After, status: todo"))
  // What waits on the checkpoint is no longer offered: only what does not depend on it.
  expect((await flow(dir.path, ["next"])).stdout).toBe("[ready_for_agent] other Other (depends: build)\n")
})

test.concurrent("block appends the reason to ai_notes; a reason for a task already blocked is still recorded", async () => {
  await using dir = await tempRepo({ "tasks.yaml": GRAPH })
  const after = await run(dir, ["block", "setup", "tests", "fail", "on", "CI"], {
    stdout: "setup: in_progress → blocked\nsetup: added the note 'Blocked: tests fail on CI'\n",
  })
  expect(after).toBe(
    GRAPH.replace(
      "status: in_progress\n    instructions: Make the repo.\n",
      'status: blocked\n    instructions: Make the repo.\n    ai_notes:\n      - "Blocked: tests fail on CI"\n',
    ),
  )
  const again = await run(dir, ["block", "setup", "still failing"], { stdout: "setup is already blocked; added the note 'Blocked: still failing'\n" })
  expect(again).toBe(after.replace('      - "Blocked: tests fail on CI"\n', '      - "Blocked: tests fail on CI"\n      - "Blocked: still failing"\n'))
})

test.concurrent("a verb on a task already in that status says so and writes nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": GRAPH })
  await unchanged(dir, async () => {
    for (const [verb, id, status] of [
      ["start", "setup", "in_progress"],
      ["todo", "api", "todo"],
      ["block", "docs", "blocked"],
    ]) {
      expect(await flow(dir.path, [verb, id])).toEqual({ code: 0, stdout: `${id} is already ${status}\n`, stderr: "" })
    }
  })
})

const TREE = `tasks:
  - id: app
    title: App
    status: in_progress
    instructions: parent
    subtasks:
      - id: app-ui
        title: UI
        status: in_progress
        instructions: ui
        subtasks:
          - id: app-ui-form
            title: Form
            status: in_progress
            instructions: form
          - id: app-ui-list
            title: List
            status: done
            instructions: list
      - id: app-api
        title: API
        status: done
        instructions: api
  - id: release
    title: Release
    status: todo
    depends_on: [app]
    instructions: ship it
  - id: after-ui
    title: After UI
    status: todo
    depends_on: [app-ui]
    instructions: next
`

test.concurrent("done on a parent with open subtasks is refused, naming them with their statuses", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TREE })
  await refused(
    dir,
    ["done", "app"],
    1,
    "error: cannot mark 'app' done: 2 subtasks are not done: app-ui (in_progress), app-ui-form (in_progress)\nhint: a parent completes when all its subtasks are done (flow done <subtask_id>); it then becomes done by itself ('flow done app --force' marks it done with them open)\n",
  )
  await refused(
    dir,
    ["done", "app-ui"],
    1,
    "error: cannot mark 'app-ui' done: 1 subtask is not done: app-ui-form (in_progress)\nhint: a parent completes when all its subtasks are done (flow done <subtask_id>); it then becomes done by itself ('flow done app-ui --force' marks it done with them open)\n",
  )
  // --force overrides the refusal: the person's call (SPEC 3.2: done from any status); the subtasks keep theirs.
  const after = await run(dir, ["done", "app-ui", "--force"], { stdout: "app-ui: in_progress → done\nafter-ui: todo → ready_for_agent (dependencies done)\n" })
  expect(stamped(after)).toContain(
    "        status: done\n        instructions: ui\n        subtasks:\n          - id: app-ui-form\n            title: Form\n            status: in_progress\n",
  )
})

test.concurrent("done on a task whose steps are not all done is refused like a parent, naming them; --force marks it done", async () => {
  const file = `tasks:
  - id: api
    title: API
    status: in_progress
    steps:
      - {id: api.1, instruction: One, status: done}
      - {id: api.2, instruction: Two, status: in_progress}
      - {id: api.3, instruction: Three}
  - {id: web, title: Web, status: todo, depends_on: [api], instructions: w}
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  await refused(
    dir,
    ["done", "api"],
    1,
    "error: cannot mark 'api' done: 2 steps are not done: api.2 (in_progress), api.3 (pending)\nhint: finish them in order with 'flow step done <step_id>' (next: api.2), then 'flow done api'; 'flow done api --force' marks it done with them open\n",
  )
  // The way an agent finishes (flow step done of the last step, then flow done) still works.
  await run(dir, ["step", "done", "api.2"], { stdout: "api.2: in_progress → done\n" })
  await refused(
    dir,
    ["done", "api"],
    1,
    "error: cannot mark 'api' done: 1 step is not done: api.3 (pending)\nhint: finish them in order with 'flow step done <step_id>' (next: api.3), then 'flow done api'; 'flow done api --force' marks it done with them open\n",
  )
  const forced = await run(dir, ["done", "api", "--force"], { stdout: "api: in_progress → done\nweb: todo → ready_for_agent (dependencies done)\n" })
  expect(stamped(forced)).toContain("      - {id: api.3, instruction: Three}\n    completed_at: <now>\n")
  await using other = await tempRepo({ "tasks.yaml": file.replace("status: in_progress}", "status: done}") })
  await run(other, ["step", "done", "api.3"], {
    stdout: "api.3: pending → done\nAll steps of api are done; the orchestrator merges and marks the task done.\n",
  })
  await run(other, ["done", "api"], { stdout: "api: in_progress → done\nweb: todo → ready_for_agent (dependencies done)\n" })
})

test.concurrent("the last subtask done completes its parents two levels up and promotes their dependents, in one write", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TREE })
  const after = await run(dir, ["done", "app-ui-form"], {
    stdout: [
      "app-ui-form: in_progress → done",
      "app-ui: in_progress → done (all subtasks done)",
      "after-ui: todo → ready_for_agent (dependencies done)",
      "app: in_progress → done (all subtasks done)",
      "release: todo → ready_for_agent (dependencies done)",
      "",
    ].join("\n"),
  })
  expect(stamped(after)).toBe(`tasks:
  - id: app
    title: App
    status: done
    instructions: parent
    subtasks:
      - id: app-ui
        title: UI
        status: done
        instructions: ui
        subtasks:
          - id: app-ui-form
            title: Form
            status: done
            instructions: form
            completed_at: <now>
          - id: app-ui-list
            title: List
            status: done
            instructions: list
        completed_at: <now>
      - id: app-api
        title: API
        status: done
        instructions: api
    completed_at: <now>
  - id: release
    title: Release
    status: ready_for_agent
    depends_on: [app]
    instructions: ship it
  - id: after-ui
    title: After UI
    status: ready_for_agent
    depends_on: [app-ui]
    instructions: next
`)
  expect((await flow(dir.path, ["validate"])).code).toBe(0)
})

test.concurrent("a checkpoint parent is not completed by its subtasks: it waits for review", async () => {
  const file = `tasks:
  - id: review
    title: Review
    status: in_progress
    checkpoint: true
    instructions: look
    subtasks:
      - {id: review-a, title: A, status: in_progress, instructions: a}
`
  await using dir = await tempRepo({ "tasks.yaml": file })
  const after = await run(dir, ["done", "review-a"], {
    stdout: "review-a: in_progress → done\n",
    stderr: "note: review: all subtasks done; it is a checkpoint, so it waits for review: run 'flow done review' to accept it\n",
  })
  expect(stamped(after)).toBe(
    file.replace(
      "{id: review-a, title: A, status: in_progress, instructions: a}",
      "{id: review-a, title: A, status: done, instructions: a, completed_at: <now>}",
    ),
  )
})

test.concurrent("an unknown task id exits 1 naming the closest id, and the file is untouched", async () => {
  await using dir = await tempRepo({ "tasks.yaml": GRAPH })
  for (const verb of ["ready", "start", "done", "block", "todo"]) {
    await refused(dir, [verb, "stup"], 1, "error: no task 'stup' in tasks.yaml\nhint: did you mean 'setup'?\n")
  }
})

test.concurrent("a step id given to a status verb points to the step command, not to a near task id", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": `tasks:
  - id: st
    title: Stepped
    status: in_progress
    steps:
      - {id: st.1, instruction: One, status: done}
      - {id: st.2, instruction: Two, status: in_progress}
`,
  })
  await refused(dir, ["done", "st.2"], 1, "error: 'st.2' is a step of task 'st', not a task\nhint: run 'flow step done st.2'\n")
  await refused(dir, ["start", "st.2"], 1, "error: 'st.2' is a step of task 'st', not a task\nhint: run 'flow step start st.2'\n")
  await refused(dir, ["block", "st.2"], 1, "error: 'st.2' is a step of task 'st', not a task\nhint: run 'flow block st' for the whole task\n")
})

test.concurrent("usage errors exit 2 and write nothing", async () => {
  await using dir = await tempRepo({ "tasks.yaml": GRAPH })
  await refused(dir, ["done"], 2, "error: missing <task_id>\nhint: usage: flow done <task_id> [--force] [--json]\n")
  await refused(dir, ["block"], 2, "error: missing <task_id>\nhint: usage: flow block <task_id> [<reason>] [--json]\n")
  await refused(dir, ["start", "setup", "api"], 2, "error: unexpected argument 'api'\nhint: usage: flow start <task_id> [--json]\n")
  await refused(dir, ["start", "setup", "--force"], 2, "error: Unknown option '--force'\nhint: run 'flow start --help' for its usage\n")
  await refused(dir, ["ready", "--now", "api"], 2, "error: Unknown option '--now'\nhint: run 'flow ready --help' for its usage\n")
})

test.concurrent("each verb has its own help", async () => {
  await using dir = await tempRepo({ "tasks.yaml": GRAPH })
  const help = await flow(dir.path, ["done", "--help"])
  expect(help.code).toBe(0)
  expect(help.stdout.split("\n").slice(0, 3)).toEqual([
    "mark a task done; promotes dependents, completes parents",
    "",
    "Usage: flow done <task_id> [--force] [--json]",
  ])
})
