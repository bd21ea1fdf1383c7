// The files derived from lib/model/schema.ts are checked in; they must be what scripts/gen-schema.ts makes now,
// and the generated check must judge data exactly as arktype does.
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { type } from "arktype"
import { TaskFile } from "../lib/model/schema"
import { isTaskFile } from "../lib/model/generated/task-file-check"
import { generatedFiles } from "../scripts/gen-schema"
import { ROOT } from "./helpers"

test("checked-in generated files are fresh (else run: bun scripts/gen-schema.ts)", () => {
  for (const [file, text] of Object.entries(generatedFiles())) expect(readFileSync(join(ROOT, file), "utf8")).toBe(text)
})

const task = { id: "a", title: "A", status: "todo", instructions: "x" }
const SAMPLES: unknown[] = [
  Bun.YAML.parse(readFileSync(join(ROOT, "examples", "tasks.yaml"), "utf8")),
  { tasks: [] },
  { tasks: [task] },
  { tasks: [{ ...task, extra: 1 }] },
  { tasks: [{ ...task, id: "Not_Kebab" }] },
  { tasks: [{ ...task, status: "doing" }] },
  { tasks: [{ ...task, title: "" }] },
  { tasks: [{ ...task, phase: "2" }] },
  { tasks: [{ ...task, checkpoint: "yes" }] },
  { tasks: [{ ...task, depends_on: "b" }] },
  { tasks: [{ ...task, subtasks: [{ ...task, id: "b", status: 3 }] }] },
  { tasks: [{ ...task, subtasks: [{ ...task, id: "b", subtasks: [{ ...task, id: "c" }] }] }] },
  { tasks: [{ ...task, steps: [{ id: "a.1", instruction: "go", status: "pending" }] }] },
  { tasks: [{ ...task, steps: [{ id: "a.1", instruction: "go", status: "todo" }] }] },
  { tasks: [{ ...task, steps: [{ id: "A 1", instruction: "go" }] }] },
  { tasks: [{ ...task, steps: [{ id: "a.1" }] }] },
  { tasks: [null] },
  { tasks: "none" },
  { other: [] },
  null,
  [],
]

test("the generated check agrees with arktype on valid and invalid samples", () => {
  for (const data of SAMPLES) {
    const arktypeSays = !(TaskFile(data) instanceof type.errors)
    expect({ data, valid: isTaskFile(data) }).toEqual({ data, valid: arktypeSays })
  }
  expect(SAMPLES.filter((d) => isTaskFile(d)).length).toBeGreaterThan(3)
})

test("flow schema prints exactly docs/tasks.schema.json", async () => {
  const { flow, tempRepo } = await import("./helpers")
  await using dir = await tempRepo()
  const result = await flow(dir.path, ["schema"])
  expect(result).toEqual({ code: 0, stdout: readFileSync(join(ROOT, "docs", "tasks.schema.json"), "utf8"), stderr: "" })
})
