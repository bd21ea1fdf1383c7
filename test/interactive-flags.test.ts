// Every flag of the argv that opens an agent CLI's interactive session (flow refine's hand-over) is one the
// real CLI lists in its top-level --help (the CLIs come from test/agent-clis, as for test/agent-flags.test.ts).
import { expect, test } from "bun:test"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { AgentConfig } from "../lib/config/config"
import { interactiveArgv } from "../lib/plan/planning-agent"
import { run } from "../lib/cli/proc"
import { REAL_CLOCK } from "./agent-clis/installed"

const CLIS_DIR = join(import.meta.dir, "agent-clis")
const BIN = join(CLIS_DIR, "node_modules", ".bin")
if (!existsSync(BIN)) {
  console.warn("installing the agent CLIs into test/agent-clis (first run only)...")
  const r = Bun.spawnSync(["bash", join(CLIS_DIR, "install.sh")], { stdout: "inherit", stderr: "inherit" })
  if (r.exitCode !== 0) console.warn(`test/agent-clis/install.sh failed (exit ${r.exitCode}): the checks below will fail`)
}

for (const cli of ["claude", "codex", "gemini", "copilot", "opencode"]) {
  test.concurrent(`${cli}: the interactive session's flags, with a model, are in its --help`, async () => {
    const argv = interactiveArgv({ name: "a", cli, model: "some-model" } as AgentConfig, "Help me improve PRD.md.", "/w")!
    const home = mkdtempSync(join(tmpdir(), "flow-agent-home-"))
    try {
      // A throwaway HOME: --help must neither read nor write the user's agent settings.
      const r = await run([join(BIN, cli), "--help"], { cwd: home, env: { HOME: home, NO_COLOR: "1", CI: "1", ...REAL_CLOCK } })
      const help = r.stdout + r.stderr
      const end = argv.indexOf("--")
      const flags = (end < 0 ? argv : argv.slice(0, end)).filter((a) => a.startsWith("-"))
      const missing = flags.filter((f) => !new RegExp(`(^|[\\s,\\[])${f.replace(/-/g, "\\-")}(?=[\\s,=<\\[\\]]|$)`, "m").test(help))
      expect({ cli, code: r.code, missing }).toEqual({ cli, code: 0, missing: [] })
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
}
