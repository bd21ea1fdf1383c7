// Where a project's tasks and run state live (docs/FLEET.md, "The shared store"): in files (tasks.yaml and
// .flow/state.db, the default) or in a PostgreSQL database named by flow.yaml's `state:` or FLOW_DATABASE_URL.
// Read on every command, so it costs one small file read: flow.yaml is parsed only when it holds `state:` or
// `project:` (the schema library, 0.25 s, loads only to explain a flow.yaml that does not parse).
import { readFileSync } from "node:fs"
import { hostname } from "node:os"
import { basename, join } from "node:path"
import { Exit, FlowError } from "../cli/errors"
import { PROJECT_KEY, type Project } from "../cli/project"
import type { Secret } from "../cli/secret"
import { type DatabaseUrl, isPostgresUrl, parseUrl, sameDatabase, shownUrl } from "./postgres/url"

export type SharedSetting = {
  kind: "postgres"
  url: DatabaseUrl
  /** the URL without its password, as every message shows it */
  shown: string
  /** the password: the URL's (FLOW_DATABASE_URL's), else PGPASSWORD */
  password?: Secret | string
  /** the project's key in the database (flow.yaml `project:`, else the folder's name) */
  key: string
  /** this machine's name for the rows only it acts on (FLOW_MACHINE, else the host name) */
  machine: string
  /** how long a command waits its turn (FLOW_LOCK_TIMEOUT): here, for a connection the server has no slot free for */
  waitMs: number
}

export type StoreSetting = { kind: "file" } | SharedSetting

/** The store the project uses; a FlowError (exit 3) for a setting that cannot be used. */
export async function storeSetting(project: Project): Promise<StoreSetting> {
  const yaml = await readSettings(project.dir)
  const env = project.storeEnv?.url
  if (yaml.state === undefined && env === undefined) return { kind: "file" }
  let url: DatabaseUrl
  let password: Secret | string | undefined
  const envUrl = env ? parseUrl(env.reveal(), "FLOW_DATABASE_URL") : undefined
  if (yaml.state !== undefined) {
    url = parseUrl(yaml.state, "flow.yaml's state")
    if (url.password !== undefined) {
      throw new FlowError(
        "flow.yaml's state holds a password; flow.yaml is shared in git, so a password there is a leak",
        Exit.invalid,
        "remove the password from state: and give it in FLOW_DATABASE_URL or PGPASSWORD (then change it: it was written down)",
      )
    }
    if (envUrl && !sameDatabase(url, envUrl)) {
      throw new FlowError(
        `FLOW_DATABASE_URL names ${shownUrl(envUrl)}, but flow.yaml's state is ${shownUrl(url)}`,
        Exit.invalid,
        "FLOW_DATABASE_URL gives the password of flow.yaml's database: make it name the same user, server and database, or unset it",
      )
    }
    password = envUrl?.password
  } else {
    url = envUrl as DatabaseUrl
    password = url.password
  }
  password ??= project.storeEnv?.password
  const key = yaml.project ?? keyOf(basename(project.dir))
  if (!PROJECT_KEY.test(key)) {
    throw new FlowError(
      `flow.yaml's project '${key}' is not a project key`,
      Exit.invalid,
      "use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit (at most 63)",
    )
  }
  return sharedSetting(project, url, key, password)
}

/** The setting of a shared store at `url` for `key`, on this machine. */
export function sharedSetting(project: Project, url: DatabaseUrl, key: string, password: Secret | string | undefined): SharedSetting {
  return { kind: "postgres", url, shown: shownUrl(url), password, key, machine: project.storeEnv?.machine || hostname(), waitMs: project.lockTimeoutMs }
}

/** A folder's name as a project key: lowercase, other characters as '-'. */
export function keyOf(name: string): string {
  const key = name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 63)
  return key || "project"
}

/** flow.yaml's `state:` and `project:`, read without the schema library. */
async function readSettings(dir: string): Promise<{ state?: string; project?: string }> {
  let text: string
  try {
    text = readFileSync(join(dir, "flow.yaml"), "utf8")
  } catch {
    return {}
  }
  if (!/^(?:state|project)\s*:/m.test(text)) return {}
  let data: unknown
  try {
    data = Bun.YAML.parse(text)
  } catch {
    return explainConfig(dir)
  }
  const record = (data ?? {}) as Record<string, unknown>
  const out: { state?: string; project?: string } = {}
  for (const key of ["state", "project"] as const) {
    const value = record[key]
    if (value === undefined || value === null) continue
    if (typeof value !== "string" || (key === "state" && !isPostgresUrl(value))) return explainConfig(dir)
    out[key] = value
  }
  return out
}

/** flow.yaml's own error, with its position (lib/config/config.ts says it best). */
async function explainConfig(dir: string): Promise<never> {
  const { loadConfig } = await import("../config/config")
  loadConfig(dir)
  throw new FlowError("flow.yaml's state must be a postgres:// URL and project a key", Exit.invalid, "'flow help config' describes both")
}
