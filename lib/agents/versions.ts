// Which versions of each agent CLI flow was checked against, and the version a user has installed. An
// adapter's flags and stream format are checked against real binaries (test/agent-flags.test.ts, the e2e
// tests); a CLI older than the oldest of those may lack a flag or report differently (Claude Code before
// 2.1.277 reported cost per process, not per session), so `flow run` says so once, before it starts.
import { run } from "../cli/proc"
import type { Adapter } from "./types"

/**
 * The oldest version of each CLI an adapter was checked against, with a real binary or (goose) its docs
 * and source: the newest checked is the adapter's `testedVersion`. Cursor's CLI has no version flow checked.
 */
export const OLDEST_CHECKED: Readonly<Record<string, string>> = {
  claude: "2.1.197", // what npm installs on Node 20: later versions want Node 22
  codex: "0.169.0",
  gemini: "0.61.0",
  opencode: "1.18.33",
  copilot: "1.0.102",
  goose: "1.50.0",
}

/** The first `x.y.z` in a CLI's version output (`2.1.197 (Claude Code)`, `codex-cli 0.169.0`); undefined without one. */
export function parseVersion(text: string): string | undefined {
  return /\b(\d+)\.(\d+)\.(\d+)\b/.exec(text)?.[0]
}

/** Negative when `a` is older than `b`, 0 when equal, positive when newer (each a dotted number). */
export function compareVersions(a: string, b: string): number {
  const x = a.split(".").map(Number)
  const y = b.split(".").map(Number)
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/** How long `<cli> --version` may take: a CLI that hangs there (an update check) must not hold up the run. */
const PROBE_MS = 15_000

/** The installed version of the adapter's CLI (`<binary> --version`), or undefined when it cannot be told. */
export async function installedVersion(adapter: Adapter, env: Record<string, string | undefined>, cwd: string): Promise<string | undefined> {
  try {
    const r = await run([adapter.binary, "--version"], { cwd, env, signal: AbortSignal.timeout(PROBE_MS) })
    return r.code === 0 ? (parseVersion(r.stdout) ?? parseVersion(r.stderr)) : undefined
  } catch {
    return undefined // not startable: `flow run` says so itself, naming how to install it
  }
}

/** The warning for an installed version older than the oldest checked one; undefined when it is not older. */
export function versionWarning(adapter: Adapter, version: string | undefined): string | undefined {
  const oldest = OLDEST_CHECKED[adapter.cli]
  if (version === undefined || oldest === undefined || compareVersions(version, oldest) >= 0) return undefined
  return (
    `${adapter.binary} ${version} is older than ${oldest}, the oldest version flow's ${adapter.cli} adapter was checked against ` +
    `(flags, output, tokens and cost may differ); to update: ${adapter.install.replace(/^install [^:]*: /, "")}`
  )
}
