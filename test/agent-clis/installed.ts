// The real agent CLIs for the tests, installed into this folder the first time a test needs them (about
// a minute, 1.4 GB, from the npm registry), so `bun test` checks them on a fresh clone too.
import { existsSync } from "node:fs"
import { join } from "node:path"

export const CLIS_DIR = import.meta.dir
export const CLIS_BIN = join(CLIS_DIR, "node_modules", ".bin")

/**
 * What a test that runs a real agent CLI adds to flow's environment. CI's unit pass preloads libfaketime (a year
 * ahead) into every process. Claude Code cannot open the semaphore libfaketime shares between processes and
 * prints an error into its output, which flow rightly logs; Copilot's native runtime hung at its exit under it
 * (a dispose waiting on a futex for ever: three tests past 900 s). So flow and the CLIs run on the real clock in
 * those tests (an empty LD_PRELOAD loads nothing): they are about the CLIs, not the date.
 */
export const REAL_CLOCK: Record<string, string> = { LD_PRELOAD: "" }

/** Installs the CLIs unless they are there; a failed install is reported, and the tests that need them fail. */
export function ensureAgentClis(): void {
  if (existsSync(CLIS_BIN)) return
  console.warn("installing the agent CLIs into test/agent-clis (first run only)...")
  const r = Bun.spawnSync(["bash", join(CLIS_DIR, "install.sh")], { stdout: "inherit", stderr: "inherit" })
  if (r.exitCode !== 0) console.warn(`test/agent-clis/install.sh failed (exit ${r.exitCode}): the tests of the real CLIs will fail`)
}
