// Agents call `flow` from their worktrees. The run puts a small launcher first on their PATH that starts
// this very flow (the compiled binary, or bun with flow.ts from a source checkout), so the agents' commands
// and the orchestrator always agree on the version.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"

/** The argv that starts this flow. */
export function selfArgv(): string[] {
  const compiled = import.meta.path.startsWith("/$bunfs") || import.meta.path.startsWith("B:\\~BUN")
  return compiled ? [process.execPath] : [process.execPath, resolve(import.meta.dir, "..", "..", "flow.ts")]
}

export function writeFlowShim(stateDir: string, argv: string[]): string {
  const bin = join(stateDir, "bin")
  mkdirSync(bin, { recursive: true })
  const quoted = argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ")
  const file = join(bin, "flow")
  writeFileSync(file, `#!/bin/sh\nexec ${quoted} "$@"\n`)
  chmodSync(file, 0o755)
  return bin
}
