// `flow prompt`: the exact text an agent receives, compared whole.
import { expect, test } from "bun:test"
import { flow, tempRepo } from "./helpers"

const TASKS = `tasks:
  - id: setup
    title: Set up
    status: done
    phase: 1
    instructions: Make the repo.
    ai_notes: ["Used Bun's test runner", "Tests live in test/"]
  - id: api
    title: HTTP API
    status: todo
    phase: 2
    depends_on: [setup]
    validation_task_id: api-check
    instructions: |
      Serve the store over HTTP.
      Use the standard library only.
    acceptance_criteria: [POST /shorten returns 201]
    steps:
      - id: api.1
        instruction: Routes
        status: done
      - id: api.2
        instruction: Error handling
        acceptance_criteria: [unknown code gives 404]
  - id: api-check
    title: Check the API
    status: todo
    depends_on: [api]
    worktree: checks/api
    instructions: Run the API tests.
`

test.concurrent("the prompt of a task with steps carries guidelines, context, dependencies' notes, the current step and the commands", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS, "GUIDELINES.md": "# Rules\n\nBe careful.\n" })
  const name = dir.path.split("/").pop()
  const r = await flow(dir.path, ["prompt", "api"])
  expect(r).toEqual({
    code: 0,
    stderr: "",
    stdout: `You are a coding agent working on task 'api' of the project '${name}', orchestrated by flow.
Your working directory is a git worktree on branch 'flow/api': work and commit only there.

# Rules

Be careful.

# Your task: api: HTTP API

Phase: 2

## Instructions

Serve the store over HTTP.
Use the standard library only.

## Acceptance criteria

- POST /shorten returns 201

## Work this task builds on

These tasks were done before yours; their code is in your branch.

- setup: Set up (done)
  - note: Used Bun's test runner
  - note: Tests live in test/

Your work will be checked afterwards by the task 'api-check'.

## Steps

This task has 2 steps, done one at a time in this session. Do only step 2 now.

### Step api.2

Error handling

Done when:
- unknown code gives 404

## Talking to flow

Run these commands from your working directory (flow finds the project through FLOW_PROJECT):
- \`flow note api "<text>"\` to record a decision or finding for the people and agents after you.
- \`flow ask api "<question>" --wait\` when something is unclear: it waits for a person's answer and prints it.
  If you cannot wait that long, run it without --wait and exit: you will be resumed in this session with the answer.
- \`flow block api "<reason>"\` when you cannot go on; then exit.
- \`flow step done api.2\` when this step is finished and committed; then exit. You will be resumed with the next step.
`,
  })
})

test.concurrent("a validating task is told what to check; --resume gives the short step prompt; errors", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  const check = await flow(dir.path, ["prompt", "api-check"])
  // The branch `flow run` gives the task: its worktree field here.
  expect(check.stdout.split("\n")[1]).toBe("Your working directory is a git worktree on branch 'checks/api': work and commit only there.")
  expect(check.stdout).toContain(`## You validate api

Check the work of 'api' (HTTP API) against its acceptance criteria:
- POST /shorten returns 201

If it falls short, run \`flow block api-check "<what is wrong>"\` instead of fixing it yourself.`)
  expect(check.stdout).toContain("- `flow done api-check` when every acceptance criterion is met")
  expect(check.stdout).not.toContain("# Guidelines")

  const resume = await flow(dir.path, ["prompt", "api", "--resume"])
  expect(resume.stdout).toStartWith("The previous step is done. Continue with step 2 of 2 of task 'api'.\n\n### Step api.2\n")
  expect(await flow(dir.path, ["prompt", "setup", "--resume"])).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: task 'setup' has no steps\nhint: run 'flow prompt setup' for the task's prompt\n",
  })
  const unknown = await flow(dir.path, ["prompt", "apj"])
  expect(unknown).toEqual({ code: 1, stdout: "", stderr: "error: no task 'apj' in tasks.yaml\nhint: did you mean 'api'?\n" })
  expect((await flow(dir.path, ["prompt"])).code).toBe(2)
})

const NESTED = `tasks:
  - id: store
    title: Storage layer
    status: done
    instructions: Keep links in SQLite.
    ai_notes: [Schema is in db/schema.sql]
  - id: config
    title: Config file
    status: todo
    instructions: Read flow.toml.
  - id: cli
    title: Command-line tool
    status: in_progress
    depends_on: [store]
    instructions: |
      A CLI named 'short' that shortens URLs.
      It prints the short code on stdout.
    subtasks:
      - id: cli-input
        title: Input handling
        status: in_progress
        depends_on: [config]
        instructions: Everything the tool reads from the user.
        subtasks:
          - id: cli-parse
            title: Write the parser
            status: todo
            depends_on: [store, config, cli-help]
            instructions: Parse argv into a command.
          - id: cli-help
            title: Help text
            status: done
            instructions: Write --help.
`

test.concurrent("a subtask two levels deep gets its ancestors' instructions and every dependency with what is true of it", async () => {
  await using dir = await tempRepo({ "tasks.yaml": NESTED })
  const name = dir.path.split("/").pop()
  const r = await flow(dir.path, ["prompt", "cli-parse"])
  expect(r.code).toBe(0)
  expect(r.stderr).toBe("")
  expect(r.stdout.split("\n")).toEqual([
    `You are a coding agent working on task 'cli-parse' of the project '${name}', orchestrated by flow.`,
    "Your working directory is a git worktree on branch 'flow/cli-parse': work and commit only there.",
    "",
    "# Your task: cli-parse: Write the parser",
    "",
    "## Part of",
    "",
    "Your task is one part of larger tasks, outermost first. Their instructions, for context (do only your own task):",
    "",
    "### cli: Command-line tool",
    "",
    "A CLI named 'short' that shortens URLs.",
    "It prints the short code on stdout.",
    "",
    "### cli-input: Input handling",
    "",
    "Everything the tool reads from the user.",
    "",
    "## Instructions",
    "",
    "Parse argv into a command.",
    "",
    "## Work this task builds on",
    "",
    "Your task depends on these tasks. Not all of them are done: the code of a task that is not done is not in your branch, so do not rely on it.",
    "",
    "- store: Storage layer (done: its code is in your branch)",
    "  - note: Schema is in db/schema.sql",
    "",
    "- config: Config file (todo: not done yet, its code is not in your branch)",
    "",
    "- cli-help: Help text (done: its code is in your branch)",
    "",
    "## Talking to flow",
    "",
    "Run these commands from your working directory (flow finds the project through FLOW_PROJECT):",
    '- `flow note cli-parse "<text>"` to record a decision or finding for the people and agents after you.',
    '- `flow ask cli-parse "<question>" --wait` when something is unclear: it waits for a person\'s answer and prints it.',
    "  If you cannot wait that long, run it without --wait and exit: you will be resumed in this session with the answer.",
    '- `flow block cli-parse "<reason>"` when you cannot go on; then exit.',
    "- `flow done cli-parse` when every acceptance criterion is met, the tests pass and your work is committed; then exit.",
    "",
  ])
})

test.concurrent("a subtask inherits its parent's dependencies; long ancestor instructions are shortened", async () => {
  const long = `${"word ".repeat(200).trim()}`
  await using dir = await tempRepo({
    "tasks.yaml": `tasks:
  - id: base
    title: Base
    status: done
    instructions: x
  - id: top
    title: Top
    status: todo
    depends_on: [base]
    instructions: ${long}
    subtasks:
      - id: leaf
        title: Leaf
        status: todo
        instructions: y
`,
  })
  const r = await flow(dir.path, ["prompt", "leaf"])
  expect(r.stdout).toContain(`These tasks were done before yours; their code is in your branch.

- base: Base (done; a dependency of top, which your task is part of)
`)
  const shortened = r.stdout.split("\n").find((l) => l.startsWith("word word"))
  expect(shortened).toEndWith(" word … (shortened: `flow show top` prints all of it)")
  expect(shortened!.length).toBeLessThan(long.length)
  // No prompt text may ask for command substitution: Gemini CLI refuses such commands.
  expect(r.stdout).not.toContain("$(")
})

test.concurrent("--resume before any step is done does not claim a previous step is done", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": `tasks:
  - id: st
    title: Stepped
    status: todo
    steps:
      - id: st.1
        instruction: One
      - id: st.2
        instruction: Two
      - id: st.3
        instruction: Three
`,
  })
  const r = await flow(dir.path, ["prompt", "st", "--resume"])
  expect(r.stdout.split("\n")[0]).toBe("No step of task 'st' is done yet. Continue with step 1 of 3 of task 'st'.")
})

test.concurrent("no text flow writes into a prompt holds a command substitution (Gemini CLI refuses any command with one)", async () => {
  const { taskPrompt, stepPrompt, answersPrompt } = await import("../lib/prompts/prompt")
  const { indexTasks } = await import("../lib/model/task-index")
  const index = indexTasks(Bun.YAML.parse(TASKS) as Parameters<typeof indexTasks>[0])
  const api = index.get("api")!.task
  const step = api.steps![1]!
  const questions = [{ id: "q-1", text: "Which port?", answer: "8080" }]
  const prompts = [
    taskPrompt({ index, taskId: "api", projectName: "p", workspace: { branch: "flow/api" }, questions }),
    taskPrompt({ index, taskId: "setup", projectName: "p" }),
    stepPrompt(api, step),
    answersPrompt(api, questions, step),
    answersPrompt(index.get("api-check")!.task, questions, undefined),
  ]
  for (const prompt of prompts) expect(prompt).not.toMatch(/\$\(|<\(|>\(/)
})
