// The store under what crashes and users leave behind: broken and stale locks, dead writers' temp files,
// symlinks and read-only files (docs/RELIABILITY.md). Disk-full runs in the soak (bench/soak.ts), which needs root.
import { expect, test } from "bun:test"
import { chmodSync, lstatSync, readdirSync, readlinkSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { flow, ROOT, tempRepo } from "./helpers"

const TASKS = "# keep me\ntasks:\n  - id: a\n    title: A\n    status: in_progress\n    instructions: x\n"

/** A lock file as a crash leaves it, dated a minute back so that no grace period applies. */
function staleLock(path: string, content: string): void {
  writeFileSync(path, content)
  // A minute before it was written, on the file system's clock (flow reads a lock's age on that clock: under
  // CI's faked clock this process's Date.now() is a year ahead of it).
  const past = new Date(statSync(path).mtimeMs - 60_000)
  utimesSync(path, past, past)
}

async function deadPid(): Promise<number> {
  const p = Bun.spawn(["true"])
  await p.exited
  return p.pid
}

for (const [name, content] of [
  ["empty", ""],
  ["garbage", "\x00\x00not json{"],
  ["half-written", '{"pid": 12'],
] as const) {
  test.concurrent(`a lock file left ${name} is taken over and the write succeeds`, async () => {
    await using dir = await tempRepo({ "tasks.yaml": TASKS })
    staleLock(dir.file("tasks.yaml.lock"), content)
    expect(await flow(dir.path, ["note", "a", "n"])).toEqual({ code: 0, stdout: "Added a note to a\n", stderr: "" })
    expect(readdirSync(dir.path).filter((f) => f.startsWith("tasks.yaml."))).toEqual([])
  })
}

test.concurrent("a lock whose pid now belongs to another program (its start time differs) is taken over", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  // The test runner itself is alive: only the recorded start time tells that it is not the lock's owner.
  const record = { pid: process.pid, host: (await import("node:os")).hostname(), command: "flow note", since: "2026-01-01T00:00:00Z", token: "t", start: "1" }
  writeFileSync(dir.file("tasks.yaml.lock"), JSON.stringify(record))
  expect((await flow(dir.path, ["note", "a", "n"])).code).toBe(0)
})

test.concurrent("an empty run lock (.flow/run.lock) is recovered too", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  dir.write(".flow/run.lock", "")
  staleLock(dir.file(".flow/run.lock"), "")
  const script = `import { acquire } from "${ROOT}/lib/store/lock"; const release = await acquire(process.argv[1], { timeoutMs: 0, command: "flow run" }); release(); console.log("ok")`
  const proc = Bun.spawn([process.execPath, "-e", script, dir.file(".flow/run")], { stdout: "pipe", stderr: "pipe" })
  expect([await new Response(proc.stdout).text(), await new Response(proc.stderr).text(), await proc.exited]).toEqual(["ok\n", "", 0])
})

test.concurrent("temp files of dead writers are removed by the next write; a live writer's are kept", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  const dead = `tasks.yaml.${await deadPid()}.abc123.tmp`
  const live = `tasks.yaml.${process.pid}.def456.tmp`
  dir.write(dead, TASKS)
  dir.write(live, TASKS)
  expect((await flow(dir.path, ["note", "a", "n"])).code).toBe(0)
  expect(readdirSync(dir.path).filter((f) => f.endsWith(".tmp"))).toEqual([live])
})

test.concurrent("a symlinked tasks.yaml is written through to its target and stays a link", async () => {
  await using dir = await tempRepo({ "real/tasks.yaml": TASKS })
  symlinkSync("real/tasks.yaml", dir.file("tasks.yaml"))
  expect((await flow(dir.path, ["note", "a", "through the link"])).code).toBe(0)
  expect(lstatSync(dir.file("tasks.yaml")).isSymbolicLink()).toBe(true)
  expect(readlinkSync(dir.file("tasks.yaml"))).toBe("real/tasks.yaml")
  expect(dir.read("real/tasks.yaml")).toContain("- through the link")
  expect(readdirSync(dir.file("real"))).toEqual(["tasks.yaml"])
})

test.concurrent("a read-only tasks.yaml (0444) is refused with a clear error and left exactly as it was", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  chmodSync(dir.file("tasks.yaml"), 0o444)
  const before = statSync(dir.file("tasks.yaml"))
  const r = await flow(dir.path, ["done", "a"])
  expect(r.code).toBe(1)
  expect(r.stderr).toMatch(
    /^error: \S+tasks.yaml is read-only \(mode 0444\): flow does not replace a file that may not be written\nhint: make it writable \(chmod u\+w \S+\) if the change is meant, then try again\n$/,
  )
  const after = statSync(dir.file("tasks.yaml"))
  expect([after.ino, after.mode, dir.read("tasks.yaml")]).toEqual([before.ino, before.mode, TASKS])
  expect(readdirSync(dir.path).filter((f) => f.startsWith("tasks.yaml."))).toEqual([])
})

test.concurrent("started_at and completed_at are taken under the lock: a step never ends before it starts", async () => {
  const steps = "tasks:\n  - id: s\n    title: S\n    status: todo\n    steps:\n      - id: s.1\n        instruction: one\n"
  await using dir = await tempRepo({ "tasks.yaml": steps })
  expect((await flow(dir.path, ["step", "start", "s.1"])).code).toBe(0)
  expect((await flow(dir.path, ["step", "done", "s.1"])).code).toBe(0)
  const step = (Bun.YAML.parse(dir.read("tasks.yaml")) as { tasks: { steps: { started_at: string; completed_at: string }[] }[] }).tasks[0].steps[0]
  expect(step.started_at <= step.completed_at).toBe(true)
})
