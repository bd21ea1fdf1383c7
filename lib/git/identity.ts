// The person's git identity for the commits agents make, handed over in the variables git reads before its
// config: an agent CLI may run its shell with a git that does not read the person's config (Gemini CLI 0.61.0
// sets GIT_CONFIG_GLOBAL=/dev/null in its shell tool, and every commit failed on "Author identity unknown").
import { run } from "../cli/proc"
import { GIT_ENV } from "./git"

/** Each variable, and the config keys git makes it from when it is not set: the first one set wins. */
const FROM_CONFIG = {
  GIT_AUTHOR_NAME: ["author.name", "user.name"],
  GIT_AUTHOR_EMAIL: ["author.email", "user.email"],
  GIT_COMMITTER_NAME: ["committer.name", "user.name"],
  GIT_COMMITTER_EMAIL: ["committer.email", "user.email"],
} as const

/**
 * GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL as git in `dir` would make them
 * from its effective config (the repository's, the person's, the system's), each only when that config sets it
 * and `env` does not. `env` is the environment the agents get, flow's own (git is asked in it): a variable
 * already set there is the person's choice and reaches the agent as it is.
 */
export async function identityEnv(dir: string, env: Record<string, string | undefined>): Promise<Record<string, string>> {
  const pattern = "^(user|author|committer)\\.(name|email)$"
  const r = await run(["git", "config", "--null", "--get-regexp", pattern], { cwd: dir, env: { ...env, ...GIT_ENV } })
  const config = new Map<string, string>()
  // `key\nvalue\0` per entry, in the order git reads its files: a later one overrides.
  for (const entry of r.stdout.split("\0")) {
    const nl = entry.indexOf("\n")
    if (nl > 0) config.set(entry.slice(0, nl), entry.slice(nl + 1))
  }
  const out: Record<string, string> = {}
  for (const [variable, keys] of Object.entries(FROM_CONFIG)) {
    const value = keys.map((k) => config.get(k)).find((v) => v !== undefined && v !== "")
    if (value !== undefined && !env[variable]) out[variable] = value
  }
  return out
}
