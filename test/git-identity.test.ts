// The person's git identity handed to agents (lib/git/identity.ts): what git itself would use in the
// repository, from its real config files, and never over a variable the person set.
import { expect, test } from "bun:test"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { identityEnv } from "../lib/git/identity"
import { git, tempRepo } from "./helpers"

test.concurrent("the identity is git's own: the repository's config over the person's, author.* and committer.* over user.*", async () => {
  await using repo = await tempRepo()
  const home = mkdtempSync(join(tmpdir(), "flow-identity-home-"))
  try {
    writeFileSync(join(home, ".gitconfig"), "[user]\n\tname = Ada Person\n\temail = ada@home.invalid\n")
    // The person's own config file, as their git finds it.
    const person = { GIT_CONFIG_GLOBAL: join(home, ".gitconfig") }
    expect(await identityEnv(repo.path, person)).toEqual({
      GIT_AUTHOR_NAME: "Ada Person",
      GIT_AUTHOR_EMAIL: "ada@home.invalid",
      GIT_COMMITTER_NAME: "Ada Person",
      GIT_COMMITTER_EMAIL: "ada@home.invalid",
    })
    await git(repo.path, ["config", "user.email", "ada@work.invalid"])
    await git(repo.path, ["config", "committer.name", "Build Bot"])
    const env = await identityEnv(repo.path, person)
    expect(env).toEqual({
      GIT_AUTHOR_NAME: "Ada Person",
      GIT_AUTHOR_EMAIL: "ada@work.invalid",
      GIT_COMMITTER_NAME: "Build Bot",
      GIT_COMMITTER_EMAIL: "ada@work.invalid",
    })
    // What git itself commits with in that repository: the same identity.
    const commit = Bun.spawnSync(["git", "commit", "-q", "--allow-empty", "-m", "by git"], { cwd: repo.path, env: { ...process.env, ...person } })
    expect(commit.exitCode).toBe(0)
    expect(await git(repo.path, ["log", "-1", "--format=%an|%ae|%cn|%ce"])).toBe(
      `${env.GIT_AUTHOR_NAME}|${env.GIT_AUTHOR_EMAIL}|${env.GIT_COMMITTER_NAME}|${env.GIT_COMMITTER_EMAIL}\n`,
    )
    // A variable the person set is theirs: left out, so theirs reaches the agent (an empty one counts as unset, as for git).
    expect(await identityEnv(repo.path, { ...person, GIT_AUTHOR_EMAIL: "set@env.invalid", GIT_COMMITTER_NAME: "" })).toEqual({
      GIT_AUTHOR_NAME: "Ada Person",
      GIT_COMMITTER_NAME: "Build Bot",
      GIT_COMMITTER_EMAIL: "ada@work.invalid",
    })
    // Nothing set anywhere: nothing handed over (git's own error stays git's).
    expect(await identityEnv(home, { GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" })).toEqual({})
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})
