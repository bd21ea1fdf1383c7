// `flow doctor`, and `flow run` stopping on the same checks with the same words: git too old for the merge
// queue, an agent CLI missing or older than checked, flow.yaml's commands' programs, the state folder.
import { expect, test } from "bun:test"
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { programsOf } from "../lib/worktree/shell-programs"
import { flow, git, ROOT, snapshot, tasksYaml, tempRepo } from "./helpers"

const TASKS = tasksYaml([{ id: "a", title: "A", status: "todo", instructions: "```sh\necho a > a.txt\n```" }])

/** A folder of fake programs first on PATH: `claude` says it is `version`; `git --version` says `git` when given. */
function fakeBin(dir: string, opts: { claude?: string; git?: string }) {
  const bin = join(dir, ".test-bin")
  mkdirSync(bin, { recursive: true })
  if (opts.claude) symlinkSync(join(ROOT, "test", "fixtures", "fake-agents", "fake-claude.ts"), join(bin, "claude"))
  if (opts.git) {
    const real = Bun.which("git") as string
    writeFileSync(join(bin, "git"), `#!/bin/sh\n[ "$1" = --version ] && { echo "git version ${opts.git}"; exit 0; }\nexec ${real} "$@"\n`)
    chmodSync(join(bin, "git"), 0o755)
  }
  return { PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`, FAKE_CLAUDE_VERSION: opts.claude ?? "" }
}

/** Doctor's lines with what differs by machine (versions, paths, free space) put in words. */
const plain = (out: string) =>
  out
    .replace(/^ok {4}git [\d.]+$/m, "ok    git <version>")
    .replace(/starts .*$/m, "starts <flow>")
    .replace(/writable \([\d.]+ GB free\)/, "writable (<free>)")

test.concurrent("flow doctor says what is fine and what to fix; flow run stops on the failures with the same words and touches nothing", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\n.test-bin/\n", "tasks.yaml": TASKS })
  dir.write(
    "flow.yaml",
    [
      "agents:",
      "  - { name: c1, cli: claude }",
      "  - { name: c2, cli: claude }",
      "  - { name: g1, cli: gemini }",
      "setup: { command: 'no-such-tool install && ./scripts/seed.sh' }",
      "teardown: { command: [sh, -c, 'true'] }",
      "",
    ].join("\n"),
  )
  const env = fakeBin(dir.path, { claude: "2.1.100" })
  const r = await flow(dir.path, ["doctor"], { env })
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 1, stderr: "" })
  expect(plain(r.stdout)).toBe(
    [
      "ok    git <version>",
      "ok    the project's repository: tasks branch from main (1 to do)",
      "warn  claude 2.1.100 is older than 2.1.197, the oldest version flow's claude adapter was checked against (flags, output, tokens and cost may differ); to update: npm install -g @anthropic-ai/claude-code",
      "FAIL  agent g1 needs 'gemini', which is not on PATH",
      "      hint: install Gemini CLI: npm install -g @google/gemini-cli",
      "FAIL  setup 'no-such-tool install && ./scripts/seed.sh' needs 'no-such-tool', not on PATH",
      "      hint: install it, or change flow.yaml's setup",
      "ok    teardown 'sh -c true': sh found",
      "ok    flow on the agents' PATH: .flow/bin/flow starts <flow>",
      "ok    the state folder .flow is writable (<free>)",
      "2 checks failed: fix what FAIL names, then run 'flow doctor' again",
      "",
    ].join("\n"),
  )
  const before = snapshot(dir.path)
  const run = await flow(dir.path, ["run", "--headless"], { env })
  expect(run).toEqual({
    code: 1,
    stdout: "",
    stderr: [
      "warning: claude 2.1.100 is older than 2.1.197, the oldest version flow's claude adapter was checked against (flags, output, tokens and cost may differ); to update: npm install -g @anthropic-ai/claude-code",
      "error: flow run cannot start:",
      "  agent g1 needs 'gemini', which is not on PATH",
      "  setup 'no-such-tool install && ./scripts/seed.sh' needs 'no-such-tool', not on PATH",
      "hint: 'flow doctor' lists each check with what to fix",
      "",
    ].join("\n"),
  })
  expect(snapshot(dir.path)).toEqual(before)
  // One failure: its own words and fix, as before flow doctor existed.
  const one = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"], { env })
  expect(one).toEqual({
    code: 1,
    stdout: "",
    stderr: "error: setup 'no-such-tool install && ./scripts/seed.sh' needs 'no-such-tool', not on PATH\nhint: install it, or change flow.yaml's setup\n",
  })
})

test.concurrent("a git older than 2.38 stops flow run before anything starts; flow doctor --cli checks one CLI; a file for .flow fails", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\n.test-bin/\n", "tasks.yaml": TASKS })
  const env = fakeBin(dir.path, { git: "2.37.1", claude: "2.1.330" })
  const words = "git 2.37.1 is older than 2.38, which flow's merge queue needs (git merge-tree --write-tree)"
  expect(await flow(dir.path, ["run", "--agents", "1", "--cli", "script"], { env })).toEqual({
    code: 1,
    stdout: "",
    stderr: `error: ${words}\nhint: update git (https://git-scm.com/downloads)\n`,
  })
  const r = await flow(dir.path, ["doctor", "--cli", "claude"], { env })
  expect(r.code).toBe(1)
  expect(r.stdout).toStartWith(
    `FAIL  ${words}\n      hint: update git (https://git-scm.com/downloads)\nok    the project's repository: tasks branch from main (1 to do)\nok    claude 2.1.330 for claude-1\n`,
  )
  rmSync(dir.file(".flow"), { recursive: true }) // made by the reads above (their validation cache)
  writeFileSync(dir.file(".flow"), "not a folder\n")
  const file = await flow(dir.path, ["doctor"], { env: fakeBin(dir.path, {}) })
  expect(file.stdout).toContain(
    `FAIL  the state folder .flow cannot be written (ENOTDIR)\n      hint: ${dir.file(".flow")} is a file: move it away, flow makes its folder there\n`,
  )
  expect(file.code).toBe(1)
})

test.concurrent("outside a git repository (or one without a commit) doctor fails and run refuses before anything starts, with the fix", async () => {
  const dir = mkdtempSync(join(tmpdir(), "flow-no-git-"))
  try {
    writeFileSync(join(dir, "tasks.yaml"), TASKS)
    const doctor = await flow(dir, ["doctor"])
    expect(doctor.code).toBe(1)
    const outside = `${dir} is not inside a git repository (task a)`
    const fix = "run 'git init' and commit, or set 'repo' in flow.yaml or on the task"
    expect(doctor.stdout).toContain(`FAIL  ${outside}\n      hint: ${fix}\n`)
    expect(doctor.stdout).not.toContain("ready to run")
    const before = snapshot(dir)
    expect(await flow(dir, ["run", "--agents", "1", "--cli", "script", "--headless"])).toEqual({
      code: 1,
      stdout: "",
      stderr: `error: ${outside}\nhint: ${fix}\n`,
    })
    expect(snapshot(dir)).toEqual(before)
    // git init without a commit: no branch to start the tasks' branches from yet.
    await git(dir, ["init", "-q", "-b", "main"])
    const empty = await flow(dir, ["run", "--agents", "1", "--cli", "script", "--headless"])
    expect(empty).toEqual({
      code: 1,
      stdout: "",
      stderr: `error: the project's repository has no commit on main yet: the tasks' branches start from one\nhint: commit what is there first: git -C ${dir} add -A && git -C ${dir} commit -m 'first commit'\n`,
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.concurrent("an invalid flow.yaml is exit 3 for flow doctor too, at its line", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS, "flow.yaml": "setup: { comand: x }\n" })
  const r = await flow(dir.path, ["doctor"])
  expect(r.code).toBe(3)
  expect(r.stderr).toContain("ERROR: unknown field 'setup.comand'")
})

test.concurrent("a shell verify with an assignment and a command substitution passes doctor, and the run checks with it", async () => {
  const verify = 'h=$(git rev-parse HEAD); test -n "$h"'
  await using dir = await tempRepo({ ".gitignore": ".flow/\n", "tasks.yaml": TASKS, "flow.yaml": `verify: { command: '${verify.replaceAll("'", "''")}' }\n` })
  const doctor = await flow(dir.path, ["doctor"])
  expect({ code: doctor.code, line: doctor.stdout.split("\n").find((l) => l.includes("verify")) }).toEqual({
    code: 0,
    line: `ok    verify '${verify}': git found`,
  })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toContain("a: merged flow/a into main")
})

test("the programs of a command are read as sh reads the line; what is not surely a command's name is not named", () => {
  const cases: [string | string[], string[]][] = [
    [["npm", "ci"], ["npm"]],
    ["npm ci --prefer-offline", ["npm"]],
    ["CI=1 pnpm install --frozen-lockfile && pnpm build; ./scripts/seed.sh | tee log", ["pnpm", "pnpm", "./scripts/seed.sh", "tee"]],
    ["cd app && make", ["make"]],
    ['echo "$HOME" && uv sync', ["uv"]],
    ["export A=1", []],
    // issue 31: refused as "needs 'rev-parse', not on PATH".
    ['h=$(git rev-parse HEAD); test -n "$h"', ["git"]],
    ['out="$(jq -r .name package.json)" && [ -n "$out" ] || { echo none >&2; exit 1; }', ["jq"]],
    ["N=`nproc` make -j$N all 2>&1 | tee build.log > /dev/null", ["nproc", "make", "tee"]],
    ["if command -v go >/dev/null; then go test ./...; else (cd web && npm test); fi", ["go", "npm"]],
    ['"$CC" -o app main.c && ./app --selftest', ["./app"]],
    ["echo 'a; rm b' # git is not run here", []],
    ["x=$((1 + 2)) && cargo build &>/dev/null", ["cargo"]],
    // Grammars of their own end the reading: what comes after is not checked, never refused.
    ["make; for f in *.ts; do tsc $f; done", ["make"]],
    ["check() { pytest -q; }; check", []],
    ["cat <<EOF > x\nnot a command\nEOF", []],
    ["ruby -e 'puts 1", ["ruby"]], // a quote never closed: read up to it
  ]
  expect(cases.map(([command]) => [command, programsOf(command)])).toEqual(cases)
})
