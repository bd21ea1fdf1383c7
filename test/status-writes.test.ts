// The run's status writes to tasks.yaml, coalesced (lib/run/worker/status-writes.ts): edits asked for together go
// in one write, and one that fails fails alone.
import { expect, test } from "bun:test"
import { projectAt } from "../lib/cli/project"
import type { RunSettings } from "../lib/run/settings"
import { coalescedWrite } from "../lib/run/worker/status-writes"
import { FileStore } from "../lib/store/file/file-store"
import { applyStatus } from "../lib/store/transitions"
import { tasksYaml, tempRepo } from "./helpers"

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

test.concurrent("edits asked for at once are all applied, each gets its own changes, and one that throws fails alone", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": `# the team's comment\n${tasksYaml(["a", "b", "c"].map((id) => ({ id, title: id, status: "in_progress", instructions: "x" })))}`,
  })
  const project = projectAt(dir.path)
  const s = { project, store: new FileStore(project), signal: new AbortController().signal } as unknown as RunSettings
  const at = "2026-01-01T00:00:00Z"
  const writes = [
    coalescedWrite(s, "a", (e) => applyStatus(e, "a", "done", at).changes),
    coalescedWrite(s, "b", (e) => applyStatus(e, "b", "done", at).changes),
    coalescedWrite(s, "missing", (e) => applyStatus(e, "nope", "done", at).changes),
    coalescedWrite(s, "c", (e) => applyStatus(e, "c", "blocked", at).changes),
  ]
  const [a, b, missing, c] = await Promise.allSettled(writes)
  expect(a).toEqual({ status: "fulfilled", value: [expect.objectContaining({ id: "a", from: "in_progress", to: "done" })] })
  expect(b).toEqual({ status: "fulfilled", value: [expect.objectContaining({ id: "b", to: "done" })] })
  expect(missing.status).toBe("rejected")
  expect(c).toEqual({ status: "fulfilled", value: [expect.objectContaining({ id: "c", to: "blocked" })] })
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done", b: "done", c: "blocked" })
  expect(dir.read("tasks.yaml")).toStartWith("# the team's comment\n")
})
