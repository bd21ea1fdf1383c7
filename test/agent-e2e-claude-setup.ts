// How a Claude Code user points it at a provider: shared by the Claude Code end-to-end tests.
import { join } from "node:path"
import { type CliSetup, writeJson } from "./agent-e2e"
import { REAL_CLOCK } from "./agent-clis/installed"

export const claude: CliSetup = {
  cli: "claude",
  // ~/.claude/settings.json: Claude Code reads its `env` as its user's environment.
  configure(home, url) {
    writeJson(join(home, ".claude", "settings.json"), {
      env: {
        ANTHROPIC_BASE_URL: url,
        ANTHROPIC_API_KEY: "sk-ant-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", // no telemetry, no auto-update, no other calls home
        // A rejected key is retried 10 times over about 3 minutes before Claude Code gives up: one retry is
        // enough to show it gives up and why, and keeps the test short.
        CLAUDE_CODE_MAX_RETRIES: "1",
      },
    })
    return { ...REAL_CLOCK }
  },
  authError: "Invalid API key · Fix external API key",
}
