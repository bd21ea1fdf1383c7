// flow.yaml's push and pull_request: a real bare remote receives the pushes; `gh` is a small script on
// PATH that records its argv and prints a pull request URL the way the real one does.
import { expect, test } from "bun:test"
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { flow, git, tasksYaml, tempRepo } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const TASKS = tasksYaml([
  { id: "api", title: "The API", status: "todo", instructions: sh("echo api > api.txt"), acceptance_criteria: ["api.txt exists"] },
  { id: "docs", title: "The docs", status: "todo", depends_on: ["api"], instructions: sh("echo docs > docs.txt") },
])

async function withRemote(flowYaml: string) {
  const remote = mkdtempSync(join(tmpdir(), "flow-remote-"))
  await git(remote, ["init", "-q", "--bare", "-b", "main"])
  const dir = await tempRepo({ "tasks.yaml": TASKS, "flow.yaml": flowYaml })
  await git(dir.path, ["remote", "add", "origin", remote])
  return { dir, remote, [Symbol.asyncDispose]: async () => (rmSync(remote, { recursive: true, force: true }), await dir[Symbol.asyncDispose]()) }
}

test.concurrent("push: the merge target reaches the remote after the merges", async () => {
  await using t = await withRemote("push: true\n")
  const r = await flow(t.dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toMatch(/ docs: pushed main to origin\n/)
  expect(await git(t.remote, ["rev-parse", "main"])).toBe(await git(t.dir.path, ["rev-parse", "main"]))
  expect(await git(t.remote, ["show", "main:docs.txt"])).toBe("docs\n")
})

test.concurrent("pull_request: each task's branch is pushed and gh opens a pull request, noted on the task", async () => {
  await using t = await withRemote("pull_request: { draft: true }\n")
  const bin = mkdtempSync(join(tmpdir(), "flow-gh-"))
  try {
    const calls = join(bin, "calls.jsonl")
    writeFileSync(
      join(bin, "gh"),
      `#!/usr/bin/env bun
const { appendFileSync } = require("node:fs")
appendFileSync(${JSON.stringify(calls)}, JSON.stringify({ argv: process.argv.slice(2), prompt: process.env.GH_PROMPT_DISABLED }) + "\\n")
const head = process.argv[process.argv.indexOf("--head") + 1]
console.log("https://github.com/acme/shorty/pull/" + (head === "flow/api" ? 1 : 2))
`,
    )
    chmodSync(join(bin, "gh"), 0o755)
    const r = await flow(t.dir.path, ["run", "--agents", "1", "--cli", "script"], { env: { PATH: `${bin}:${process.env.PATH}` } })
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout).toContain(" api: pull request https://github.com/acme/shorty/pull/1\n")
    const argvs = readFileSync(calls, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
    expect(argvs).toContainEqual({
      argv: [
        "pr",
        "create",
        "--base",
        "main",
        "--head",
        "flow/api",
        "--title",
        "api: The API",
        "--body",
        "```sh\necho api > api.txt\n```\n\nAcceptance criteria:\n- api.txt exists\n\nTask `api`, done by script-1 (script) under `flow run`.",
        "--draft",
      ],
      prompt: "1",
    })
    expect(argvs).toHaveLength(2)
    // The branches are on the remote; main is not pushed (only the pull requests carry the work there).
    expect(await git(t.remote, ["show", "flow/docs:docs.txt"])).toBe("docs\n")
    expect((await git(t.remote, ["branch", "--format=%(refname:short)"])).trim().split("\n").sort()).toEqual(["flow/api", "flow/docs"])
    expect(t.dir.read("tasks.yaml")).toContain("Pull request: https://github.com/acme/shorty/pull/2")
  } finally {
    rmSync(bin, { recursive: true, force: true })
  }
})

test.concurrent("a push that fails is logged and noted, the local merge stands, and no credential is printed", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS, "flow.yaml": "push: true\nremote: upstream\n" })
  await git(dir.path, ["remote", "add", "upstream", "https://flow-user:s3cret-token@127.0.0.1:9/acme/shorty.git"])
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toMatch(/ api: push of main to upstream failed: .+\n/)
  expect(await git(dir.path, ["show", "main:docs.txt"])).toBe("docs\n")
  const yaml = dir.read("tasks.yaml")
  expect(yaml).toContain("push of main to upstream failed")
  expect(yaml).toContain("(the local merge stands)")
  expect(r.stdout + yaml).not.toContain("s3cret-token")
})

test.concurrent("no gh on PATH: the pull request fails with a hint to install it; the run still finishes", async () => {
  await using t = await withRemote("pull_request: true\n")
  const r = await flow(t.dir.path, ["run", "--agents", "1", "--cli", "script"], { env: { PATH: "/usr/bin:/bin" } })
  expect(r.code).toBe(0)
  expect(r.stdout).toContain(" api: pull request not opened: 'gh' (GitHub CLI) was not found on PATH; install it and run 'gh auth login'\n")
})

test.concurrent("push and pull_request into the same branch is a flow.yaml error, before any work", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS, "flow.yaml": "push: true\npull_request: true\n" })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect(r).toEqual({
    code: 3,
    stdout: "",
    stderr:
      "error: flow.yaml sets both 'push' and 'pull_request' into the merge target: every pull request would already be merged\n" +
      "hint: open pull requests into another branch (pull_request: { base: main }) with merge_target an integration branch, or drop one of them\n",
  })
  expect(dir.read("tasks.yaml")).toBe(TASKS)
  const bad = await tempRepo({ "tasks.yaml": TASKS, "flow.yaml": "remote: --upload-pack=evil\n" })
  try {
    const r2 = await flow(bad.path, ["run", "--agents", "1", "--cli", "script"])
    expect(r2.code).toBe(3)
    expect(r2.stderr).toContain("flow.yaml:1:")
  } finally {
    await bad[Symbol.asyncDispose]()
  }
})

test("credentials in URLs are masked in anything a push or gh prints", async () => {
  const { lastLines } = await import("../lib/git/publish")
  expect(lastLines("remote: x\nfatal: unable to access 'https://bot:ghp_abc123@github.com/acme/x.git/': 403\n")).toBe(
    "remote: x / fatal: unable to access 'https://***@github.com/acme/x.git/': 403",
  )
})
