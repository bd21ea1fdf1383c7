// An agent reviewer of another CLI, for real (docs/REVIEW.md, "Agent reviewers"): Claude Code works on the task,
// Codex reviews it, both against the scripted model server. Codex asks for changes once; the comment reaches
// Claude Code's same session as a fix turn (the server's request log shows it); Codex approves the new work in a
// fresh session, and the task lands once. One script per task: the turns come in that order, one at a time.
import { expect, test } from "bun:test"
import { claude } from "./agent-e2e-claude-setup"
import { userHome } from "./agent-e2e-openai-home"
import { ensureAgentClis } from "./agent-clis/installed"
import { startModelServer } from "./fixtures/model-server/server"
import { flow, git, tasksYaml, tempRepo } from "./helpers"

const COMMENT = "add a second line, bye, to hello.txt"

test("claude's work reviewed by codex: changes once, the fix in the same session, then approved and landed", async () => {
  ensureAgentClis()
  await using server = startModelServer()
  await using home = await userHome("codex", server.url)
  const env = { ...home.env, ...claude.configure(home.path, server.url) }
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "greet", title: "Greet", status: "todo", instructions: "Write hi into hello.txt and commit it." }]),
    "flow.yaml": "agents:\n  - { name: claude-1, cli: claude }\n  - { name: codex-1, cli: codex }\nreview: codex-1\n",
  })
  server.model.script("greet", [
    { commands: ["echo hi > hello.txt", "git add hello.txt && git commit -qm hello", "flow done greet"], text: "Done." },
    { commands: [`flow review greet changes "${COMMENT}"`], text: "Asked for changes." },
    { commands: ["echo bye >> hello.txt", "git commit -qam bye", "flow done greet"], text: "Fixed." },
    { commands: ["flow review greet approve"], text: "Approved." },
  ])
  const r = await flow(dir.path, ["run", "--headless"], { env })
  if (r.code !== 0) console.error(r.stdout, r.stderr)
  expect(r.code).toBe(0)
  expect(r.stdout).toContain("greet: started by claude-1 on flow/greet")
  expect(r.stdout).toContain(`greet: agent codex-1 asked for changes: ${COMMENT}`)
  expect(r.stdout).toContain("greet: agent codex-1 approved it")
  const requests = server.model.requests("greet")
  const turn = (n: number) => requests.filter((q) => q.turn === n)
  // The author's turns are Claude Code's (Anthropic's API), the reviewer's Codex's (OpenAI's Responses API).
  expect([1, 2, 3, 4].map((n) => [...new Set(turn(n).map((q) => q.protocol))])).toEqual([
    ["anthropic"],
    ["openai-responses"],
    ["anthropic"],
    ["openai-responses"],
  ])
  // The reviewer's prompt holds the task, the diff and the commands that decide.
  const review = turn(2)[0].prompt!
  expect(review).toContain("You review another agent's work")
  expect(review).toContain("Write hi into hello.txt and commit it.")
  expect(review).toContain("+hi")
  expect(review).toContain("flow review greet approve")
  // The fix turn resumes the author's session: its conversation holds the task's first prompt, then the comment.
  const fix = turn(3)[0]
  expect(fix.prompts!.length).toBeGreaterThan(1)
  expect(fix.prompts![0]).toContain("Write hi into hello.txt and commit it.")
  expect(fix.prompt).toContain(COMMENT)
  // The second review is a fresh session that sees the new work.
  expect(turn(4)[0].prompts!.length).toBe(1)
  expect(turn(4)[0].prompt).toContain("+bye")
  expect(dir.read("hello.txt")).toBe("hi\nbye\n")
  expect((await git(dir.path, ["log", "--merges", "--first-parent", "--format=%s", "main"])).trim()).toBe("Merge flow/greet: greet")
  const e = JSON.parse((await flow(dir.path, ["show", "greet", "--json"])).stdout).evidence
  expect([e.state, e.agent, e.fix_rounds]).toEqual(["landed", "claude-1", 1])
}, 600_000)
