// The terminal UI of `flow run` in a real terminal (a private tmux server per test, 120x40): agent panes
// with live output, the question queue answered from the screen, `q` to stop, the summary left behind on the
// normal screen; and the headless log wherever the UI does not belong. Scripts wait on gate files the test
// creates, not on sleeps, so what the screen shows does not depend on the machine's speed.
import { expect, test } from "bun:test"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { createColors } from "picocolors"
import { Screen, parseKeys, sanitize, truncate, textWidth, type TtyInput, type TtyOutput } from "../lib/terminal/screen"
import { renderRun, shareHeight } from "../lib/tui/tui"
import { RunView } from "../lib/tui/tui-state"
import { flow, git, tasksYaml, tempRepo } from "./helpers"
import { terminal } from "./terminal"

const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const SIZE = { columns: 120, rows: 40 }
const SCREEN_MS = 60_000
/** A script line that waits until the test creates `<project>/<name>`. */
const gate = (name: string) => `while [ ! -e "$FLOW_PROJECT/${name}" ]; do sleep 0.1; done`

test.concurrent("in a terminal: agent panes with live output, the question queue, an answer typed on the screen; the summary stays after exit", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      {
        id: "alpha",
        title: "Alpha work",
        status: "todo",
        instructions: sh(`echo "alpha line 1"\necho "alpha 漢字 line 2"\n${gate("alpha.go")}\necho done > alpha.txt`),
      },
      {
        id: "beta",
        title: "Beta asks",
        status: "todo",
        instructions: sh(
          `echo "beta asks"\nanswer=$(flow ask --wait "$FLOW_TASK_ID" "Which colour should beta use?")\necho "beta got: $answer"\necho "$answer" > beta.txt`,
        ),
      },
      { id: "gamma", title: "Gamma after alpha", status: "todo", depends_on: ["alpha"], instructions: sh(`echo "gamma line"\necho ok > gamma.txt`) },
    ]),
  })
  using t = await terminal(dir.path, ["run", "--agents", "2", "--cli", "script"], { USER: "tester" }, SIZE)
  const screen = await t.waitFor("q-1  beta  Which colour should beta use?", SCREEN_MS)
  await t.waitFor("alpha 漢字 line 2", SCREEN_MS)
  const lines = t.screen().split("\n")
  // The header, a titled pane per agent (each with its task, state and elapsed time), the queue, the log, the keys.
  expect(lines[0]).toMatch(/^flow run: flow-test-\w+ · 2 agents · .*in_progress.* · \d+s · merging into main$/)
  expect(lines.filter((l) => /^── \d script-\d · (alpha Alpha work · running|beta Beta asks · waiting for an answer) · \d+s ─+$/.test(l))).toHaveLength(2)
  expect(screen).toContain("  beta asks")
  expect(screen).toContain("── Questions (1): a answers the oldest ─")
  expect(screen).toContain("── Log ─")
  expect(screen).toContain("q stop · a answer · Tab/1-9 focus")
  // No line wraps: every row fits the 120 columns, wide characters counted twice.
  expect(lines.filter((l) => textWidth(l) > SIZE.columns)).toEqual([])

  t.keys("a")
  await t.waitFor("Answer q-1 (task beta): ", SCREEN_MS)
  t.type("deep blue")
  await t.waitFor("Answer q-1 (task beta): deep blue", SCREEN_MS)
  t.keys("Enter")
  await t.waitFor("── Questions: none ─", SCREEN_MS)
  writeFileSync(dir.file("alpha.go"), "")

  const end = await t.waitFor("EXIT=", SCREEN_MS)
  // Back on the normal screen: the summary line of the headless log, where the whole log is, the exit code.
  expect(end).not.toContain("── Log")
  expect(end.trim().split("\n")).toEqual([
    expect.stringMatching(/^\d\d:\d\d:\d\d run: finished after [\d.]+ s: 3 done, 0 not done$/),
    expect.stringMatching(/^the run's log: 'flow log' \(\.flow\/runs\/\d{8}-\d{6}-\d+\.log\)$/),
    "EXIT=0",
  ])
  // The screen is gone, its lines are not: every pane's output and the summary, as the headless log words them.
  const log = await flow(dir.path, ["log"])
  expect(log.code).toBe(0)
  expect(log.stdout).toContain(" alpha | alpha 漢字 line 2\n")
  expect(log.stdout).toContain(" beta | beta got: deep blue\n")
  expect(log.stdout.trimEnd().split("\n").at(-1)).toMatch(/^\d\d:\d\d:\d\d run: finished after [\d.]+ s: 3 done, 0 not done$/)
  const answered = JSON.parse((await flow(dir.path, ["questions", "--all", "--json"])).stdout).questions
  expect(answered.map((q: Record<string, unknown>) => [q.id, q.answer, q.answered_by])).toEqual([["q-1", "deep blue", "tester"]])
  expect(await git(dir.path, ["show", "main:beta.txt"])).toBe("deep blue\n")
})

test.concurrent("q stops a run in progress: exit 130, the task stays in_progress, and the next run finishes it", async () => {
  await using dir = await tempRepo({
    "tasks.yaml": tasksYaml([
      { id: "slow", title: "Slow work", status: "todo", instructions: sh(`echo "slow started"\n${gate("slow.go")}\necho ok > slow.txt`) },
    ]),
  })
  {
    using t = await terminal(dir.path, ["run", "--agents", "1", "--cli", "script"], {}, SIZE)
    await t.waitFor("  slow started", SCREEN_MS)
    t.keys("q")
    const end = await t.waitFor("EXIT=", SCREEN_MS)
    expect(end.trim().split("\n")).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d run: stopped after [\d.]+ s: 0 done, 1 not done$/),
      expect.stringMatching(/^the run's log: 'flow log' \(\.flow\/runs\/\S+\.log\)$/),
      "EXIT=130",
    ])
  }
  expect(dir.read("tasks.yaml")).toContain("status: in_progress")
  writeFileSync(dir.file("slow.go"), "")
  const again = await flow(dir.path, ["run", "--agents", "1", "--cli", "script"])
  expect(again.code).toBe(0)
  expect(again.stdout).toContain("slow: resumed by script-1 on flow/slow")
})

test.concurrent("--headless in a terminal, and any piped run, print the timestamped log instead of the screen", async () => {
  const files = { "tasks.yaml": tasksYaml([{ id: "one", title: "One", status: "todo", instructions: sh("echo hello from one") }]) }
  await using dir = await tempRepo(files)
  {
    using t = await terminal(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"], {}, SIZE)
    const end = await t.waitFor("EXIT=", SCREEN_MS)
    expect(end).toMatch(/^\d\d:\d\d:\d\d run: 1 task, agents script-1, merging into main$/m)
    expect(end).toMatch(/^\d\d:\d\d:\d\d one \| hello from one$/m)
    expect(end).not.toContain("── Questions")
    expect(end).toContain("EXIT=0")
  }
  await using piped = await tempRepo(files)
  const r = await flow(piped.path, ["run", "--agents", "1", "--cli", "script"])
  expect(r.code).toBe(0)
  expect(r.stdout.split("\n").slice(0, 4)).toEqual([
    expect.stringMatching(/^\d\d:\d\d:\d\d run: 1 task, agents script-1, merging into main$/),
    expect.stringMatching(/^\d\d:\d\d:\d\d one: todo → assigned$/),
    expect.stringMatching(/^\d\d:\d\d:\d\d one: assigned → in_progress$/),
    expect.stringMatching(/^\d\d:\d\d:\d\d one: started by script-1 on flow\/one$/),
  ])
  expect(existsSync(join(piped.path, ".flow"))).toBe(true)
})

test("lines are cut to the width by columns: wide characters count two, colour codes none and are never split", () => {
  expect(truncate("abcdef", 4)).toBe("abc…")
  expect(truncate("abcd", 4)).toBe("abcd")
  expect(truncate("漢字漢字", 5)).toBe("漢字…")
  expect(truncate("a漢字", 4)).toBe("a漢…")
  expect(truncate("\x1b[31mred text\x1b[0m", 4)).toBe("\x1b[31mred…\x1b[0m")
  expect(textWidth("\x1b[1m漢\x1b[0mx")).toBe(3)
  expect(truncate("anything", 0)).toBe("")
})

test("output is made safe to draw: colours stay; resets, cursor moves, charsets, strings and C1 codes go", () => {
  expect(sanitize("\x1b[32mok\x1b[0m")).toBe("\x1b[32mok\x1b[0m")
  expect(sanitize("reset \x1bc after")).toBe("reset  after")
  expect(sanitize("decaln \x1b#8 after")).toBe("decaln  after")
  expect(sanitize("lines \x1b(0qqq\x1b(B")).toBe("lines qqq")
  expect(sanitize("keypad \x1b= \x1b> save \x1b7 back \x1b8")).toBe("keypad   save  back ")
  expect(sanitize("dcs \x1bPq#0;2;0\x1b\\ end")).toBe("dcs  end")
  expect(sanitize("title \x1b]0;evil\x07 end, unterminated \x1b]2;rest")).toBe("title  end, unterminated ")
  expect(sanitize("clear \x1b[2J\x1b[H home, c1 \u009b2J, lone \x1b")).toBe("clear  home, c1 2J, lone ")
  expect(sanitize("50%\r100%\tdone")).toBe("100%    done")
})

test("any size of screen draws: tiny windows, many agents, long titles keep state and time in sight", () => {
  const c = createColors(false)
  const view = new RunView("p", ["a-1", "a-2", "a-3", "a-4"], 0)
  view.tasks = new Map([["t", { title: "A very long title ".repeat(10), status: "in_progress", steps: [] }]])
  view.apply({ type: "task-start", taskId: "t", agent: "a-1", branch: "flow/t", worktree: "/w", resumed: false }, new Date(0))
  for (let i = 0; i < 30; i++) view.apply({ type: "agent", taskId: "t", agent: "a-1", event: { type: "text", text: `line ${i}` } }, new Date(0))
  view.questions = [1, 2].map((n) => ({
    id: `q-${n}`,
    task_id: "t",
    agent: "a-1",
    kind: null,
    text: `question ${n}?`,
    asked_at: "",
    answer: null,
    answered_at: null,
    answered_by: null,
  }))
  for (const rows of [1, 2, 3, 4, 5, 8, 13, 18, 25, 40]) {
    for (const columns of [1, 10, 30, 60, 120]) {
      for (const focus of [undefined, "a-3"]) {
        const lines = renderRun(view, { focus }, { columns, rows }, c, 5000)
        expect(lines.length).toBeLessThanOrEqual(rows)
      }
    }
  }
  const small = renderRun(view, {}, { columns: 100, rows: 18 }, c, 5000)
  expect(small.some((l) => l.includes("q-1") && l.includes("question 1?"))).toBe(true) // the one `a` answers
  const title = renderRun(view, {}, { columns: 80, rows: 40 }, c, 5000).find((l) => l.includes("a-1"))!
  expect(title).toEndWith("· waiting for an answer · 5s ──")
  expect(textWidth(title)).toBeLessThanOrEqual(80)
})

test("raw input becomes keys, several per chunk: Ctrl-C, Esc, Tab, Enter, arrows, and characters beyond ASCII", () => {
  expect(parseKeys("a\x03\x1b\t\r\x7fé漢\x1b[A")).toEqual([
    { name: "char", char: "a" },
    { name: "ctrl-c" },
    { name: "escape" },
    { name: "tab" },
    { name: "enter" },
    { name: "backspace" },
    { name: "char", char: "é" },
    { name: "char", char: "漢" },
    { name: "up" },
  ])
})

test("panes share the height; a focused pane takes most of it and the others keep two rows", () => {
  expect(shareHeight(20, 3, -1)).toEqual([7, 7, 6])
  expect(shareHeight(20, 3, 1)).toEqual([4, 12, 4])
  expect(shareHeight(7, 3, 0)).toEqual([3, 2, 2])
})

test("the screen rewrites only the rows that changed and gives the terminal back on close, once", () => {
  const written: string[] = []
  const modes: boolean[] = []
  const input: TtyInput = { setRawMode: (m) => modes.push(m), setEncoding: () => {}, resume: () => {}, pause: () => {}, on: () => {}, off: () => {} }
  const output: TtyOutput = { columns: 10, rows: 3, write: (s) => written.push(s), on: () => {}, off: () => {} }
  const screen = new Screen(input, output)
  screen.open(
    () => {},
    () => {},
  )
  screen.draw(["one", "two"])
  screen.draw(["one", "2"])
  screen.close()
  screen.close()
  expect(modes).toEqual([true, false])
  expect(written.at(-2)).toBe("\x1b[?2026h\x1b[2;1H\x1b[2K2\x1b[0m\x1b[?2026l")
  expect(written.at(-1)).toBe("\x1b[0m\x1b[?25h\x1b[?1049l")
  expect(written.filter((w) => w.includes("?1049l"))).toHaveLength(1)
})

test("a setup's lines go to its agent's pane, its end and what was prepared to the footer; a teardown's lines to neither pane", () => {
  const view = new RunView("p", ["a-1"], 0)
  // Midnight in the zone the test runs in: the log's stamps are local time (docs/CLI.md, "Time").
  const at = new Date(2026, 0, 1)
  view.apply({ type: "task-start", taskId: "t", agent: "a-1", branch: "flow/t", worktree: "/w", resumed: false }, at)
  view.apply({ type: "prepared", taskId: "t", agent: "a-1", copied: [".env"], refused: [], ports: [20000] }, at)
  view.apply({ type: "hook-start", taskId: "t", agent: "a-1", hook: "setup", command: "npm ci" }, at)
  view.apply({ type: "hook-output", taskId: "t", agent: "a-1", hook: "setup", line: "added 3 packages \x1b[2J" }, at)
  view.apply({ type: "hook-end", taskId: "t", agent: "a-1", hook: "setup", command: "npm ci", ok: true, code: 0, seconds: 1.25, timedOut: false }, at)
  view.apply({ type: "hook-output", taskId: "u", hook: "teardown", line: "stopped" }, at)
  view.apply({ type: "hook-end", taskId: "u", hook: "teardown", command: "down", ok: false, code: 2, seconds: 0.5, timedOut: false }, at)
  expect(view.panes.get("a-1")!.lines).toEqual(["── t", "── setup: npm ci", "added 3 packages "])
  expect(view.log).toEqual([
    "00:00:00 t: copied .env; ports FLOW_PORT=20000",
    "00:00:00 t: setup done after 1.3 s",
    "00:00:00 u: teardown failed (exit 2) after 0.5 s",
  ])
})
