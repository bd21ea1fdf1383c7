// `flow prompt --json`: the same text as without --json, in the PromptReport shape of lib/model/json-shapes.ts.
import { expect, test } from "bun:test"
import { type } from "arktype"
import { PromptReport } from "../lib/model/json-shapes"
import { flow, tempRepo } from "./helpers"

const TASKS = `tasks:
  - id: api
    title: HTTP API
    status: todo
    steps:
      - {id: api.1, instruction: Routes, status: done}
      - {id: api.2, instruction: Error handling}
  - id: docs
    title: Docs
    status: todo
    instructions: Write them.
`

test.concurrent("--json gives task_id, kind, step_id and the exact prompt of the text output, for both prompts; errors go to stderr as JSON", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  const cases = [
    { args: ["api"], kind: "task", step_id: "api.2" },
    { args: ["api", "--resume"], kind: "resume", step_id: "api.2" },
    { args: ["docs"], kind: "task", step_id: null },
  ]
  for (const c of cases) {
    const [text, json] = await Promise.all([flow(dir.path, ["prompt", ...c.args]), flow(dir.path, ["prompt", ...c.args, "--json"])])
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: "" })
    const report = JSON.parse(json.stdout)
    expect(PromptReport(report) instanceof type.errors).toBe(false)
    expect(report).toEqual({ task_id: c.args[0], kind: c.kind, step_id: c.step_id, prompt: text.stdout })
  }
  expect(await flow(dir.path, ["prompt", "docs", "--resume", "--json"])).toEqual({
    code: 1,
    stdout: "",
    stderr: `${JSON.stringify({ error: "task 'docs' has no steps", hint: "run 'flow prompt docs' for the task's prompt", exit: 1 })}\n`,
  })
})
