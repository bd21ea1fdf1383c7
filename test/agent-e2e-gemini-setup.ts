// How a Gemini CLI user points it at a provider: shared by the Gemini CLI end-to-end tests.
import { join } from "node:path"
import { type CliSetup, writeJson } from "./agent-e2e"
import { REAL_CLOCK } from "./agent-clis/installed"

export const gemini: CliSetup = {
  cli: "gemini",
  configure(home, url) {
    // ~/.gemini/settings.json: an API key (not a Google login), no usage statistics, no update checks.
    writeJson(join(home, ".gemini", "settings.json"), {
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
    })
    return { GEMINI_API_KEY: "test-key", GOOGLE_GEMINI_BASE_URL: url, ...REAL_CLOCK }
  },
  authError: "API error 401 UNAUTHENTICATED: invalid x-api-key",
  timeoutMs: 400_000,
}
