// Every flag an adapter passes is one the real CLI lists in its --help (the CLIs come from test/agent-clis).
import { describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { adapterFor } from "../lib/agents"
import { run } from "../lib/cli/proc"
import { REAL_CLOCK, CLIS_BIN, CLIS_DIR, ensureAgentClis } from "./agent-clis/installed"

const BIN = CLIS_BIN
ensureAgentClis()

// The help texts that list the flags of each way flow launches a CLI: [new session, resumed session].
const HELP: Record<string, { fresh: string[]; resumed: string[] }> = {
  claude: { fresh: ["--help"], resumed: ["--help"] },
  codex: { fresh: ["exec", "--help"], resumed: ["exec", "resume", "--help"] },
  gemini: { fresh: ["--help"], resumed: ["--help"] },
  opencode: { fresh: ["run", "--help"], resumed: ["run", "--help"] },
  copilot: { fresh: ["--help"], resumed: ["--help"] },
}

/** The flags of argv: elements before `--` that start with a dash, without an `=value`. */
function flagsOf(argv: string[]): string[] {
  const end = argv.indexOf("--")
  return (end < 0 ? argv : argv.slice(0, end)).filter((a) => a.startsWith("-")).map((a) => a.replace(/=.*$/s, ""))
}

function listed(help: string, flag: string): boolean {
  const escaped = flag.replace(/[-]/g, "\\-")
  return new RegExp(`(^|[\\s,\\[])${escaped}(?=[\\s,=<\\[\\]]|$)`, "m").test(help)
}

async function help(binary: string, args: string[]): Promise<string> {
  // A throwaway HOME: --help must neither read nor write the user's agent settings.
  const home = mkdtempSync(join(tmpdir(), "flow-agent-home-"))
  try {
    const r = await run([join(BIN, binary), ...args], { cwd: home, env: { HOME: home, NO_COLOR: "1", CI: "1", ...REAL_CLOCK } })
    if (r.code !== 0) throw new Error(`${binary} ${args.join(" ")} exited ${r.code}: ${r.stderr}`)
    return r.stdout + r.stderr
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}

describe("adapters' flags are accepted by the real CLIs", () => {
  for (const [cli, helps] of Object.entries(HELP)) {
    test.concurrent(`${cli}: new and resumed launches, with a model`, async () => {
      const adapter = adapterFor(cli)
      // A new session's id is passed only to adapters that choose it (Copilot); the others ignore it.
      const fresh = adapter.argv({ prompt: "Do the task.", cwd: "/w", newSessionId: "5e7d1c7a-0a53-4d52-9a1d-3f4bb0d0c2a1", model: "some-model" })
      const resumed = adapter.argv({ prompt: "Next step.", cwd: "/w", sessionId: "0cb916db-26aa-40f2-86b5-1ba81b225fd2", model: "some-model" })
      const missing: string[] = []
      for (const [argv, helpArgs] of [
        [fresh, helps.fresh],
        [resumed, helps.resumed],
      ] as const) {
        const text = await help(adapter.binary, helpArgs)
        for (const flag of flagsOf(argv)) if (!listed(text, flag)) missing.push(`${flag} (${adapter.binary} ${helpArgs.join(" ")})`)
      }
      expect(missing).toEqual([])
      expect(flagsOf(fresh).length).toBeGreaterThan(2) // the check did see flags
    })
  }
})

test("the installed CLIs are the versions the adapters name", async () => {
  const lock = await Bun.file(join(CLIS_DIR, "package.json")).json()
  const packages: Record<string, string> = {
    claude: "@anthropic-ai/claude-code",
    codex: "@openai/codex",
    gemini: "@google/gemini-cli",
    opencode: "opencode-ai",
    copilot: "@github/copilot",
  }
  for (const [cli, pkg] of Object.entries(packages)) expect([cli, lock.dependencies[pkg]]).toEqual([cli, adapterFor(cli).testedVersion])
})

test.concurrent("opencode: the task's own database (OPENCODE_DB) is the one it opens, and a session it lacks is a lost session", async () => {
  const adapter = adapterFor("opencode")
  const home = mkdtempSync(join(tmpdir(), "flow-agent-home-"))
  try {
    const store = join(home, "sessions", "t1")
    mkdirSync(store, { recursive: true })
    const argv = adapter.argv({ prompt: "Next step.", cwd: home, sessionId: "ses_0123456789abcdefABCDEFGHIJ" })
    const r = await run([join(BIN, adapter.binary), ...argv.slice(1)], {
      cwd: home,
      env: { HOME: home, PWD: home, CI: "1", ...REAL_CLOCK, ...adapter.sessionStore!(store) },
      stdin: "Next step.",
    })
    expect({ code: r.code, lost: adapter.lostSession!.test(r.stderr) }).toEqual({ code: 1, lost: true })
    expect([existsSync(join(store, "opencode.db")), existsSync(join(home, ".local", "share", "opencode", "opencode.db"))]).toEqual([true, false])
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})
