// Gemini CLI (the real CLI) committing under `flow run`, against the scripted model server. Its shell tool runs
// git with GIT_CONFIG_GLOBAL=/dev/null (0.61.0), so the person's ~/.gitconfig is out of its reach: flow hands the
// agent the person's identity as GIT_AUTHOR_* and GIT_COMMITTER_* (lib/git/identity.ts).
import { afterAll, expect, test } from "bun:test"
import { e2eProject } from "./agent-e2e"
import { gemini } from "./agent-e2e-gemini-setup"
import { startModelServer } from "./fixtures/model-server/server"
import { flow, git } from "./helpers"

const TIMEOUT = 400_000
const server = startModelServer()
afterAll(() => server.stop())

test(
  "gemini: the agent's commit carries the person's identity from the repository's effective git config, and a variable the person set wins",
  async () => {
    server.model.script("signed", [
      {
        commands: [
          "printf 'signed\\n' > signed.txt && git add signed.txt && git commit -qm 'signed by the agent' && git log -1 --format='%an <%ae>'",
          "flow done signed",
        ],
      },
    ])
    // The person: a name in ~/.gitconfig (e2eProject's HOME: Agent User), an email of this repository's own.
    await using p = await e2eProject(gemini, server, [{ id: "signed", title: "Signed", status: "todo", instructions: "Commit signed.txt." }])
    await git(p.dir.path, ["config", "user.email", "repo@flow.invalid"])
    const r = await flow(p.dir.path, ["run", "--headless"], { env: { ...p.env, GIT_COMMITTER_NAME: "Env Committer" } })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    const results = server.model
      .requests("signed")
      .flatMap((q) => q.toolResults ?? [])
      .join("\n")
    expect(results).not.toContain("Author identity unknown")
    expect(results).toContain("Agent User <repo@flow.invalid>")
    expect(await git(p.dir.path, ["log", "--format=%an|%ae|%cn|%ce|%s", "main"])).toContain(
      "Agent User|repo@flow.invalid|Env Committer|repo@flow.invalid|signed by the agent\n",
    )
    expect(p.dir.read("signed.txt")).toBe("signed\n")
  },
  TIMEOUT,
)
