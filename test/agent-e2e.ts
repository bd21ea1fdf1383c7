// End-to-end runs of real agent CLIs (test/agent-clis) against the scripted model server: a HOME per
// test holding the configuration a user would write to point the CLI at their own provider.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { run } from "../lib/proc"
import { ROOT } from "./helpers"

export const AGENT_BIN = join(ROOT, "test", "agent-clis", "node_modules", ".bin")
export const API_KEY = "sk-scripted-test"

export type UserHome = { path: string; env: Record<string, string>; [Symbol.asyncDispose]: () => Promise<void> }

/**
 * A temp HOME for `cli` with its provider set to the model server at `url`, telemetry and updates off,
 * and a git identity (agents commit). `env` is what `flow run` needs: that HOME, the CLIs on PATH, the key.
 */
export async function userHome(cli: "codex" | "opencode", url: string): Promise<UserHome> {
  const path = mkdtempSync(join(tmpdir(), `flow-home-${cli}-`))
  const write = (name: string, text: string) => {
    mkdirSync(dirname(join(path, name)), { recursive: true })
    writeFileSync(join(path, name), text)
  }
  write(".gitconfig", "[user]\n\tname = Agent User\n\temail = agent@example.invalid\n")
  if (cli === "codex") write(".codex/config.toml", codexConfig(url))
  else write(".config/opencode/opencode.json", opencodeConfig(url))
  const env = { HOME: path, PATH: `${AGENT_BIN}:${dirname(process.execPath)}:${process.env.PATH}`, SCRIPTED_API_KEY: API_KEY }
  const home = { path, env, [Symbol.asyncDispose]: async () => rmSync(path, { recursive: true, force: true }) }
  if (cli === "opencode") {
    // What a user does after writing the config: check the provider's models are listed. It also creates
    // OpenCode's database: two OpenCode processes starting at once in a fresh HOME race on its migration
    // and one fails ("Failed query: CREATE TABLE ..."; measured with 1.18.33), which a run of parallel
    // agents would otherwise meet as a failed first attempt.
    const r = await run([join(AGENT_BIN, "opencode"), "models", "scripted"], { cwd: path, env })
    if (r.code !== 0) {
      await home[Symbol.asyncDispose]()
      throw new Error(`opencode models scripted exited ${r.code}: ${r.stderr}`)
    }
  }
  return home
}

export const installed = (cli: string) => existsSync(join(AGENT_BIN, cli))

// $CODEX_HOME/config.toml (CODEX_HOME defaults to ~/.codex): a provider speaking the Responses API.
function codexConfig(url: string): string {
  return `model = "gpt-scripted"
model_provider = "scripted"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.scripted]
name = "Scripted model server"
base_url = "${url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
`
}

// ~/.config/opencode/opencode.json: an OpenAI-compatible provider (Chat Completions at baseURL).
function opencodeConfig(url: string): string {
  return `${JSON.stringify({
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    provider: {
      scripted: {
        npm: "@ai-sdk/openai-compatible",
        name: "Scripted model server",
        options: { baseURL: `${url}/v1`, apiKey: "{env:SCRIPTED_API_KEY}" },
        models: { "scripted-model": { name: "Scripted model" } },
      },
    },
    model: "scripted/scripted-model",
  }, null, 2)}\n`
}
