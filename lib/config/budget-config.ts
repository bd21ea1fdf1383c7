// Parts of flow.yaml for the commands that only read (show, the dashboard, the inspector), without loading
// arktype (about 0.25 s of start-up) when flow.yaml does not set the part asked for: the schema checks the
// file only then.
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { BudgetConfig, FlowConfig } from "./config"

/** flow.yaml's `key`, checked as `flow run` checks it (a bad flow.yaml is the same error); undefined without one. */
export async function readConfigPart<K extends "budget" | "review">(projectDir: string, key: K): Promise<FlowConfig[K] | undefined> {
  const file = join(projectDir, "flow.yaml")
  if (!existsSync(file)) return undefined
  let data: unknown
  try {
    data = Bun.YAML.parse(readFileSync(file, "utf8"))
  } catch {
    data = { [key]: "unparsed" } // loadConfig says where it does not parse
  }
  if (data === null || typeof data !== "object" || !(key in data)) return undefined
  const { loadConfig } = await import("./config")
  return loadConfig(projectDir)[key]
}

/** flow.yaml's `budget`; undefined without one. */
export function readBudgetConfig(projectDir: string): Promise<BudgetConfig | undefined> {
  return readConfigPart(projectDir, "budget")
}
