// The oldest agent CLI versions flow was checked against (lib/agents/versions.ts), and `flow run`'s warning,
// once per CLI, when an installed one is older: a fake `claude` on PATH that says which version it is.
import { expect, test } from "bun:test"
import { mkdirSync, symlinkSync } from "node:fs"
import { dirname, join } from "node:path"
import { AGENT_CLIS, adapterFor } from "../lib/agents"
import { compareVersions, OLDEST_CHECKED, parseVersion } from "../lib/agents/versions"
import { flow, ROOT, tempRepo } from "./helpers"

test("versions are read from what each CLI prints and compared as numbers", () => {
  expect(
    ["2.1.197 (Claude Code)", "codex-cli 0.169.0", "0.61.0\n", "GitHub Copilot CLI 1.0.102.\nRun 'copilot update'", "no version"].map(parseVersion),
  ).toEqual(["2.1.197", "0.169.0", "0.61.0", "1.0.102", undefined])
  expect([compareVersions("2.1.99", "2.1.197") < 0, compareVersions("2.10.0", "2.9.9") > 0, compareVersions("1.0.0", "1.0.0")]).toEqual([true, true, 0])
})

test("every adapter of a versioned CLI names the oldest version it was checked against, not newer than its tested one", () => {
  const versioned = AGENT_CLIS.filter((cli) => cli !== "command" && cli !== "cursor")
  expect(Object.keys(OLDEST_CHECKED).sort()).toEqual(versioned.sort())
  for (const cli of versioned) {
    const tested = parseVersion(adapterFor(cli).testedVersion) as string
    expect({ cli, older: compareVersions(OLDEST_CHECKED[cli], tested) <= 0 }).toEqual({ cli, older: true })
  }
})

async function runWithClaude(version: string) {
  const dir = await tempRepo({ "tasks.yaml": "tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: Do it.\n" })
  const bin = join(dir.path, ".test-bin")
  mkdirSync(bin)
  symlinkSync(join(ROOT, "test", "fixtures", "fake-agents", "fake-claude.ts"), join(bin, "claude"))
  // Two agents of the same CLI: still one warning.
  dir.write("flow.yaml", "agents:\n  - name: c1\n    cli: claude\n  - name: c2\n    cli: claude\n")
  const env = { PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`, FAKE_CLAUDE_VERSION: version, FAKE_AGENT_FOLLOW_PROMPT: "1" }
  const r = await flow(dir.path, ["run", "--headless"], { env })
  await dir[Symbol.asyncDispose]()
  return r
}

test.concurrent("a run with a CLI older than the oldest checked warns once, before it starts, and runs anyway", async () => {
  const r = await runWithClaude("2.1.100")
  expect({ code: r.code, stderr: r.stderr }).toEqual({
    code: 0,
    stderr:
      "warning: claude 2.1.100 is older than 2.1.197, the oldest version flow's claude adapter was checked against (flags, output, tokens and cost may differ); to update: npm install -g @anthropic-ai/claude-code\n",
  })
})

test.concurrent("the oldest checked version itself and newer ones give no warning", async () => {
  for (const version of ["2.1.197", "2.1.330"]) expect(await runWithClaude(version)).toMatchObject({ code: 0, stderr: "" })
})
