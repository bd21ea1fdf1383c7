// Worktrees made ready before the agent (docs/RUN.md, "Preparing worktrees"), in real repositories under
// `flow run`: files copied from the checkout and kept out of every commit, the setup once per worktree (its
// failure and its time limit block the task), each task's block of free ports, the teardown before removal,
// and what the agent's prompt says of it.
import { expect, test } from "bun:test"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bindable, PORT_RANGE } from "../lib/worktree/ports"
import { background, flow, git, tasksYaml, tempRepo, until } from "./helpers"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const notes = (yaml: string, id: string) =>
  (Bun.YAML.parse(yaml) as { tasks: { id: string; ai_notes?: string[] }[] }).tasks.find((t) => t.id === id)?.ai_notes ?? []
const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))

/** A folder outside every repository, removed when disposed. */
function scratch() {
  const path = mkdtempSync(join(tmpdir(), "flow-prepare-"))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

test.concurrent("copy: the checkout's .env and config/*.local.json reach the worktree; neither the agent's 'git add -A' nor flow's commit takes them; a link and a tracked file are left alone", async () => {
  using out = scratch()
  writeFileSync(join(out.path, "secret"), "outside the repository\n")
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "config/tracked.local.json": "git's version\n",
    "flow.yaml": `copy: [".env", "config/*.local.json", "secrets/*"]\n`,
    "tasks.yaml": tasksYaml([
      {
        id: "a",
        title: "A",
        status: "todo",
        instructions: sh(
          [
            "cat .env config/dev.local.json config/tracked.local.json > seen.txt",
            "test -e secrets/key || echo 'no link' >> seen.txt",
            "git add -A",
            "git -c user.name=agent -c user.email=agent@flow.invalid commit -qm 'the agent commits everything'",
            "echo left > left.txt",
          ].join("\n"),
        ),
      },
    ]),
  })
  // The person's own files: not tracked, and not ignored by the repository either.
  dir.write(".env", "SECRET=1\n")
  dir.write("config/dev.local.json", '{"dev":true}\n')
  dir.write("config/tracked.local.json", "the person's edit\n")
  dir.write("secrets/.keep", "")
  symlinkSync(join(out.path, "secret"), dir.file("secrets/key"))
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toContain("a: copied .env, config/dev.local.json, secrets/.keep; not copied: secrets/key (a symbolic link)\n")
  expect(dir.read("seen.txt")).toBe('SECRET=1\n{"dev":true}\ngit\'s version\nno link\n')
  // Every file any commit of main ever held: the agent's commit and flow's (left.txt) took no copy.
  const committed = (await git(dir.path, ["log", "--format=", "--name-only", "main"])).split("\n").filter(Boolean)
  expect([...new Set(committed)].sort()).toEqual([".gitignore", "config/tracked.local.json", "flow.yaml", "left.txt", "seen.txt", "tasks.yaml"])
  // The copies did not make the worktree dirty to git: it was removed after the merge.
  expect(existsSync(dir.file(".flow/worktrees/a"))).toBe(false)
  expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
  // The person's checkout is as it was, with main's new files.
  expect(dir.read(".env")).toBe("SECRET=1\n")
  expect((await git(dir.path, ["status", "--porcelain"])).split("\n").filter(Boolean).sort()).toEqual([
    " M config/tracked.local.json",
    " M tasks.yaml",
    "?? .env",
    "?? config/dev.local.json",
    "?? secrets/",
  ])
})

test.concurrent("setup runs once per worktree, in the worktree with the agent's environment; a resumed task's worktree is not set up again", async () => {
  using out = scratch()
  const count = join(out.path, "setups")
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": `setup: { command: 'echo "$FLOW_TASK_ID $(basename "$PWD") $FLOW_RUN_ID" >> ${count}; echo installed' }\n`,
    "tasks.yaml": tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: sh(`test -e ${join(out.path, "go")} || exit 5\necho a > a.txt`) },
      { id: "b", title: "B", status: "todo", instructions: sh("echo b > b.txt") },
    ]),
  })
  const first = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
  expect(first.code).toBe(4)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "blocked", b: "done" })
  expect(first.stdout).toContain("a | setup: installed\n")
  expect(first.stdout).toMatch(/a: setup done after [\d.]+ s\n/)
  const lines = readFileSync(count, "utf8").trim().split("\n").sort()
  expect(lines.map((l) => l.split(" ").slice(0, 2).join(" "))).toEqual(["a a", "b b"])
  expect(lines.every((l) => /^\w \w \d+-\d+$/.test(l))).toBe(true) // FLOW_RUN_ID: the reaper finds what it started
  // The task goes again in the same worktree: no second setup there.
  writeFileSync(join(out.path, "go"), "")
  expect((await flow(dir.path, ["ready", "a"])).code).toBe(0)
  const second = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" })
  expect(second.stdout).toContain("a: resumed by script-1 on flow/a")
  expect(second.stdout).not.toContain("setup")
  expect(readFileSync(count, "utf8").trim().split("\n")).toHaveLength(2)
  expect(dir.read("a.txt")).toBe("a\n")
})

test.concurrent("a failed setup blocks the task with its command, exit code and last lines, in the note and the run's log; the agent never starts", async () => {
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": `setup: { command: "echo resolving; echo 'ERR! 404 left-pad' >&2; exit 7" }\n`,
    "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("echo ran > ran.txt") }]),
  })
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect(r.code).toBe(4)
  expect(r.stdout).toContain("a: setup 'echo resolving; echo 'ERR! 404 left-pad' >&2; exit 7'\n")
  expect(r.stdout).toContain("a | setup: ERR! 404 left-pad\n")
  expect(r.stdout).toMatch(/a: setup failed \(exit 7\) after [\d.]+ s\n/)
  expect(r.stdout).not.toContain("script-1 exited")
  expect(notes(dir.read("tasks.yaml"), "a")).toEqual([
    `the setup 'echo resolving; echo 'ERR! 404 left-pad' >&2; exit 7' failed (exit 7); the agent was not started. Its output:\nresolving\nERR! 404 left-pad\nFix what it needs (or flow.yaml's setup), then 'flow ready a' and run again: the setup runs again in the same worktree (${dir.file(".flow/worktrees/a")}).`,
  ])
  expect(existsSync(dir.file(".flow/worktrees/a/ran.txt"))).toBe(false)
  const [log] = readdirSync(dir.file(".flow/runs"))
  expect(readFileSync(dir.file(`.flow/runs/${log}`), "utf8")).toContain("a | setup: resolving\n")
})

test.concurrent("a setup past its timeout is killed with its children while the run goes on; the task is blocked saying so", async () => {
  using out = scratch()
  const pid = join(out.path, "child.pid")
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": `setup:\n  - { repo: ., command: 'if [ "$FLOW_TASK_ID" = hangs ]; then sleep 300 & echo $! > ${pid}; echo started; sleep 301; fi', timeout: 1s }\n`,
    "tasks.yaml": tasksYaml([
      { id: "hangs", title: "Hangs", status: "todo", instructions: sh("true") },
      // Runs beside it, and watches the setup's child from the same run: gone well before the run ends.
      {
        id: "watch",
        title: "Watch",
        status: "todo",
        instructions: sh(
          `for i in $(seq 600); do [ -s ${pid} ] && ! kill -0 $(cat ${pid}) 2>/dev/null && { echo gone > gone.txt; exit 0; }; sleep 0.1; done; exit 9`,
        ),
      },
    ]),
  })
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
  expect(r.code).toBe(4)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ hangs: "blocked", watch: "done" })
  expect(r.stdout).toMatch(/hangs: setup timed out and was stopped after [\d.]+ s\n/)
  expect(notes(dir.read("tasks.yaml"), "hangs")[0]).toStartWith(
    `the setup 'if [ "$FLOW_TASK_ID" = hangs ]; then sleep 300 & echo $! > ${pid}; echo started; sleep 301; fi' timed out after 1 s and was killed; the agent was not started. Its output:\nstarted\n`,
  )
  expect(dir.read("gone.txt")).toBe("gone\n")
})

test.concurrent("two tasks of one run and a task of another project's run at the same time get disjoint blocks of free ports", async () => {
  using sync = scratch()
  // A port in use on the machine is never handed out: the first free one of the range is taken here.
  let taken = PORT_RANGE.first
  while (!bindable(taken)) taken++
  const listener = Bun.listen({ hostname: "0.0.0.0", port: taken, socket: { data() {} } })
  try {
    const script = sh(
      `echo "$FLOW_PORT,$FLOW_PORT_1,$FLOW_PORT_2" > ${sync.path}/$FLOW_TASK_ID\nfor i in $(seq 600); do [ $(ls ${sync.path} | wc -l) -ge 3 ] && exit 0; sleep 0.1; done; exit 9`,
    )
    const project = (ids: string[]) =>
      tempRepo({
        ".gitignore": ".flow/\n",
        "flow.yaml": "ports: 2\n",
        "tasks.yaml": tasksYaml(ids.map((id) => ({ id, title: id, status: "todo", instructions: script }))),
      })
    await using one = await project(["a", "b"])
    await using two = await project(["c"])
    const runs = [
      background(one.path, ["run", "--agents", "2", "--cli", "script", "--headless"]),
      background(two.path, ["run", "--agents", "1", "--cli", "script", "--headless"]),
    ]
    const ends = await Promise.all(runs.map((r) => r.done()))
    expect(ends.map((e) => e.code)).toEqual([0, 0])
    const blocks = ["a", "b", "c"].map((id) => readFileSync(join(sync.path, id), "utf8").trim().split(",").map(Number))
    for (const [first, second, third] of blocks) expect([second - first, third]).toEqual([1, 0]) // two consecutive, no third
    const all = blocks.flat().filter((p) => p > 0)
    expect(new Set(all).size).toBe(6)
    expect(all.every((p) => p >= PORT_RANGE.first && p <= PORT_RANGE.last && p !== taken)).toBe(true)
    expect(ends[0].stdout).toContain(`a: ports FLOW_PORT=${blocks[0][0]}, FLOW_PORT_1=${blocks[0][1]}\n`)
  } finally {
    listener.stop(true)
  }
})

test.concurrent("teardown runs in each worktree before it is removed, with the copies still there", async () => {
  using out = scratch()
  const record = join(out.path, "teardowns")
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": `copy: [.env]\nteardown: { command: 'echo "$FLOW_TASK_ID $(cat .env) $PWD" >> ${record}' }\n`,
    "tasks.yaml": tasksYaml([
      { id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") },
      { id: "b", title: "B", status: "todo", instructions: sh("echo b > b.txt") },
    ]),
  })
  dir.write(".env", "KEY=2\n")
  const r = await flow(dir.path, ["run", "--agents", "2", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(readFileSync(record, "utf8").trim().split("\n").sort()).toEqual([
    `a KEY=2 ${dir.file(".flow/worktrees/a")}`,
    `b KEY=2 ${dir.file(".flow/worktrees/b")}`,
  ])
  expect(r.stdout).toMatch(/a: teardown done after [\d.]+ s\n/)
  expect(readdirSync(dir.file(".flow/worktrees"))).toEqual([])
})

test.concurrent("the prompt says what was prepared: the setup, the copied files, the ports; flow prompt shows it before the run", async () => {
  await using dir = await tempRepo({ ".gitignore": ".flow/\nprompt.txt\n" })
  dir.write("agent.sh", `printf '%s' "$1" > "${dir.file("prompt.txt")}"\necho "$FLOW_PORT" > "${dir.file("port.txt")}"\nflow done "$FLOW_TASK_ID"\n`)
  dir.write(
    "flow.yaml",
    `agents:\n  - name: cmd\n    cli: command\n    command: ["bash", "${dir.file("agent.sh")}", "{prompt}"]\nsetup: { command: "true" }\ncopy: [.env]\nports: 1\n`,
  )
  dir.write("tasks.yaml", tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "Build the API." }]))
  await git(dir.path, ["add", "-A"])
  await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "project"])
  dir.write(".env", "KEY=1\n")
  const preview = await flow(dir.path, ["prompt", "api"])
  expect(preview.stdout).toContain(
    [
      "## Your worktree is prepared",
      "",
      "- The setup command `true` ran in it before you started: do not run it again.",
      "- Copied from the main checkout, and kept out of every commit (do not add them): `.env`.",
      "- Your TCP port: FLOW_PORT (handed out when the run starts the task; in your environment). Other agents work beside you: start servers on this port, not on a default one.",
      "",
    ].join("\n"),
  )
  const r = await flow(dir.path, ["run", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  const port = dir.read("port.txt").trim()
  expect(dir.read("prompt.txt")).toContain(
    `- Your TCP port: FLOW_PORT=${port} (in your environment too). Other agents work beside you: start servers on this port, not on a default one.\n`,
  )
  expect(dir.read("prompt.txt")).toContain("- Copied from the main checkout, and kept out of every commit (do not add them): `.env`.\n")
})

test.concurrent("a '**' pattern never reaches into the state folder, where the other tasks' worktrees are", async () => {
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": `copy: ["**/.env"]\n`,
    "tasks.yaml": tasksYaml(
      ["a", "b", "c"].map((id) => ({ id, title: id, status: "todo", instructions: sh(`find . -name .env -not -path './.git/*' | sort > ${id}.txt`) })),
    ),
  })
  dir.write(".env", "ROOT=1\n")
  dir.write("app/.env", "APP=1\n")
  const r = await flow(dir.path, ["run", "--agents", "3", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  for (const id of ["a", "b", "c"]) {
    expect(r.stdout).toContain(`${id}: copied .env, app/.env\n`)
    expect(dir.read(`${id}.txt`)).toBe("./.env\n./app/.env\n")
  }
})

test.concurrent("a copy stays out of the agent's commits after a resume, even once the checkout no longer has it", async () => {
  using out = scratch()
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": "copy: [.env]\n",
    "tasks.yaml": tasksYaml([
      {
        id: "a",
        title: "A",
        status: "todo",
        instructions: sh(`test -e ${join(out.path, "go")} || exit 5\ncat .env > seen.txt\ngit add -A\ngit -c user.name=a -c user.email=a@a commit -qm work`),
      },
    ]),
  })
  dir.write(".env", "KEY=3\n")
  expect((await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])).code).toBe(4)
  rmSync(dir.file(".env"))
  writeFileSync(join(out.path, "go"), "")
  expect((await flow(dir.path, ["ready", "a"])).code).toBe(0)
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toContain("a: copied .env\n")
  expect(dir.read("seen.txt")).toBe("KEY=3\n")
  expect((await git(dir.path, ["log", "--format=", "--name-only", "main"])).split("\n")).not.toContain(".env")
})

test.concurrent("the check's scratch worktree is prepared as the task's: the copies, the setup's files and the ports are there for verify; torn down before it is removed", async () => {
  using out = scratch()
  const record = join(out.path, "teardowns")
  await using dir = await tempRepo({
    ".gitignore": ".flow/\nready.txt\n.env\n",
    "flow.yaml": [
      "copy: [.env]",
      "setup: { command: 'echo made > ready.txt' }",
      "ports: 1",
      `teardown: { command: 'echo "$PWD" >> ${record}' }`,
      `verify: { command: 'test -f ready.txt && test "$(cat .env)" = KEY=3 && test -n "$FLOW_PORT" && echo "port $FLOW_PORT"' }`,
      "fix_attempts: 0",
      "",
    ].join("\n"),
    "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") }]),
  })
  dir.write(".env", "KEY=3\n")
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: r.code, stderr: r.stderr, out: r.code ? r.stdout : "" }).toEqual({ code: 0, stderr: "", out: "" })
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done" })
  expect(r.stdout).toContain("a: queue main #1 passed")
  expect((await git(dir.path, ["show", "main:a.txt"])).trim()).toBe("a")
  // The setup ran twice: in the task's worktree, then in the check's.
  expect(r.stdout.match(/a: setup done after/g)).toHaveLength(2)
  // Both worktrees were torn down before their removal; neither is left.
  const torn = readFileSync(record, "utf8").trim().split("\n").sort()
  expect(torn).toHaveLength(2)
  expect(torn[0]).toStartWith(dir.file(".flow/verify/"))
  expect(torn[1]).toBe(dir.file(".flow/worktrees/a"))
  expect((await git(dir.path, ["worktree", "list"])).trim().split("\n")).toHaveLength(1)
})

test.concurrent("a setup that fails only in the check's worktree blocks the task with the setup's output, not the check's", async () => {
  using out = scratch()
  const checked = join(out.path, "checked")
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": [
      `setup: { command: "test ! -f broken.txt || { echo 'cannot set up: broken.txt is here' >&2; exit 3; }" }`,
      `verify: { command: 'touch ${checked}' }`,
      "",
    ].join("\n"),
    "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("echo x > broken.txt") }]),
  })
  const before = (await git(dir.path, ["rev-parse", "main"])).trim()
  const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect(r.code).toBe(4)
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "blocked" })
  expect(r.stdout).toContain("a: queue main #1 failed")
  expect(r.stdout).toContain("(the setup of the check's worktree failed (exit 3))")
  const [note] = notes(dir.read("tasks.yaml"), "a")
  expect(note).toStartWith("merge of flow/a into main failed: the setup of the check's worktree failed (exit 3).")
  expect(note).toContain(
    `The check's output:\nthe setup 'test ! -f broken.txt || { echo 'cannot set up: broken.txt is here' >&2; exit 3; }' failed (exit 3)\ncannot set up: broken.txt is here`,
  )
  expect(existsSync(checked)).toBe(false) // the check never ran in a worktree its setup failed in
  expect((await git(dir.path, ["rev-parse", "main"])).trim()).toBe(before)
})

test.concurrent("a run stopped during the setup of the check's worktree stops it with its children and removes the worktree; the next run lands the task", async () => {
  using out = scratch()
  const pid = join(out.path, "setup.pid")
  const hang = join(out.path, "hang")
  writeFileSync(hang, "")
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    "flow.yaml": [
      `setup: { command: 'case "$PWD" in */.flow/verify/*) if [ -e ${hang} ]; then sleep 300 & echo $! > ${pid}; echo waiting; wait; fi;; esac' }`,
      "verify: { command: 'true' }",
      "",
    ].join("\n"),
    "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") }]),
  })
  const before = (await git(dir.path, ["rev-parse", "main"])).trim()
  const run = background(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  await run.waitFor("a | setup: waiting")
  const child = Number(readFileSync(pid, "utf8"))
  run.proc.kill("SIGINT")
  const stopped = await run.done()
  expect(stopped.stdout).not.toContain("a: queue main #1 failed")
  const alive = () => {
    try {
      return process.kill(child, 0)
    } catch {
      return false
    }
  }
  await until(() => !alive())
  expect(alive()).toBe(false)
  expect(statuses(dir.read("tasks.yaml")).a).not.toBe("blocked")
  expect((await git(dir.path, ["rev-parse", "main"])).trim()).toBe(before)
  expect((await git(dir.path, ["worktree", "list"])).split("\n").filter((l) => l.includes("/verify/"))).toEqual([])
  rmSync(hang)
  const again = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"])
  expect({ code: again.code, stderr: again.stderr, out: again.code ? again.stdout : "" }).toEqual({ code: 0, stderr: "", out: "" })
  expect(statuses(dir.read("tasks.yaml"))).toEqual({ a: "done" })
  expect((await git(dir.path, ["show", "main:a.txt"])).trim()).toBe("a")
})
