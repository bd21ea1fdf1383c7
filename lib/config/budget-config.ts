// flow.yaml's budget for the commands that only read (show, the dashboard, the inspector), without loading
// arktype (about 0.25 s of start-up) when flow.yaml sets no budget: the schema checks the file only then.
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { BudgetConfig } from "./config"

/** flow.yaml's `budget`, checked as `flow run` checks it (a bad flow.yaml is the same error); undefined without one. */
export async function readBudgetConfig(projectDir: string): Promise<BudgetConfig | undefined> {
  const file = join(projectDir, "flow.yaml")
  if (!existsSync(file)) return undefined
  let data: unknown
  try {
    data = Bun.YAML.parse(readFileSync(file, "utf8"))
  } catch {
    data = { budget: "unparsed" } // loadConfig says where it does not parse
  }
  if (data === null || typeof data !== "object" || !("budget" in data)) return undefined
  const { loadConfig } = await import("./config")
  return loadConfig(projectDir).budget
}
