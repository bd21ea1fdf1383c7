// `flow __complete tasks|steps`: the ids the completion scripts offer, one a line. Hidden from --help. It runs
// on every Tab, so it reads tasks.yaml with Bun's native YAML parser and skips the schema (arktype) and
// validation; and it never prints an error: a shell completing in a folder without a project gets nothing.
// A shared project's ids come from its database (docs/FLEET.md): tasks.yaml there is stale or gone.
import { readFileSync } from "node:fs"
import type { Ctx } from "../lib/cli/context"
import { findProject, sharedAt } from "../lib/cli/project"

export const meta = { usage: "flow __complete <tasks|steps>", options: {} } as const

type Node = { id?: unknown; subtasks?: unknown; steps?: unknown }

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  let data: unknown
  try {
    const project = findProject(ctx)
    if (sharedAt(project.dir) || ctx.env.FLOW_DATABASE_URL) {
      const { openStore } = await import("../lib/store/open")
      data = (await (await openStore(project)).read()).data
    } else data = Bun.YAML.parse(readFileSync(project.tasksFile, "utf8"))
  } catch {
    return
  }
  const ids: string[] = []
  const walk = (tasks: unknown) => {
    if (!Array.isArray(tasks)) return
    for (const t of tasks as Node[]) {
      if (!t || typeof t !== "object") continue
      if (args[0] === "tasks" && typeof t.id === "string") ids.push(t.id)
      if (args[0] === "steps" && Array.isArray(t.steps)) for (const s of t.steps as Node[]) if (s && typeof s.id === "string") ids.push(s.id)
      walk(t.subtasks)
    }
  }
  walk((data as { tasks?: unknown } | null)?.tasks)
  if (ids.length) ctx.stdout(`${ids.join("\n")}\n`)
}
