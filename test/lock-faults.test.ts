// The lock under what people and full disks do to it (issue 21 items 3, 4 and the lock's part of 1): a lock
// path that is a directory, a FIFO or a dangling symlink; a lock deleted while its holder is stopped; a disk
// with no room for the lock's record. docs/RELIABILITY.md.
import { expect, test } from "bun:test"
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { genTasks, stoppedHolder } from "../bench/soak-common"
import { FlowError } from "../lib/cli/errors"
import { acquire } from "../lib/store/lock"
import { flow, ROOT, tempRepo } from "./helpers"

const TASKS = "tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: x\n"
const leftovers = (dir: string) => readdirSync(dir).filter((f) => f.startsWith("tasks.yaml."))

/** Takes and releases the lock of `target` in a process of its own (as `flow run` takes .flow/run.lock). */
async function lockInProcess(target: string, timeoutMs: number): Promise<{ out: string; code: number }> {
  const script = `import { acquire } from "${ROOT}/lib/store/lock"
try { (await acquire(process.argv[1], { timeoutMs: ${timeoutMs}, command: "flow run" }))(); console.log("ok") }
catch (e) { console.log(e.message); console.log(e.hint); process.exit(1) }`
  const p = Bun.spawn([process.execPath, "-e", script, target], { stdout: "pipe", stderr: "pipe" })
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited])
  return { out, code }
}

test.concurrent("a lock path that is a directory fails every writer at once, naming it and how to fix it, with nothing left behind", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  mkdirSync(dir.file("tasks.yaml.lock"))
  const r = await flow(dir.path, ["note", "a", "n"], { env: { FLOW_LOCK_TIMEOUT: "60" } })
  expect(r).toEqual({
    code: 1,
    stdout: "",
    stderr: `error: ${dir.file("tasks.yaml.lock")} is a directory, not a lock file: flow cannot lock tasks.yaml while it is there\nhint: remove it (rmdir ${dir.file("tasks.yaml.lock")}, after moving out anything of yours in it): flow creates the lock file itself, then try again\n`,
  })
  expect([dir.read("tasks.yaml"), leftovers(dir.path)]).toEqual([TASKS, ["tasks.yaml.lock"]])
  // .flow/run.lock goes through the same code.
  mkdirSync(dir.file(".flow/run.lock"), { recursive: true })
  const run = await lockInProcess(dir.file(".flow/run"), 0)
  expect(run).toEqual({
    code: 1,
    out: expect.stringMatching(/\/\.flow\/run\.lock is a directory, not a lock file: flow cannot lock run while it is there\nremove it/),
  })
})

test.concurrent("a lock path that is a FIFO is named in an error, never read (reading would block)", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  expect(spawnSync("mkfifo", [dir.file("tasks.yaml.lock")]).status).toBe(0)
  const r = await flow(dir.path, ["done", "a"])
  expect([r.code, r.stderr.split("\n")[0]]).toEqual([
    1,
    `error: ${dir.file("tasks.yaml.lock")} is a FIFO, not a lock file: flow cannot lock tasks.yaml while it is there`,
  ])
  expect(dir.read("tasks.yaml")).toBe(TASKS)
})

test.concurrent("a dangling symlink as the lock is removed like a dead owner's lock, for tasks.yaml and for .flow/run", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  symlinkSync("nowhere/at/all", dir.file("tasks.yaml.lock"))
  expect(await flow(dir.path, ["note", "a", "after the link"])).toEqual({ code: 0, stdout: "Added a note to a\n", stderr: "" })
  expect([dir.read("tasks.yaml").includes("- after the link"), leftovers(dir.path)]).toEqual([true, []])
  mkdirSync(dir.file(".flow"), { recursive: true })
  symlinkSync("../gone", dir.file(".flow/run.lock"))
  expect(await lockInProcess(dir.file(".flow/run"), 0)).toEqual({ code: 0, out: "ok\n" })
  expect(readdirSync(dir.file(".flow")).filter((f) => f.startsWith("run.lock"))).toEqual([])
})

test.concurrent("a lock deleted while its holder is stopped: the other writer's change stays, the holder writes nothing and fails loudly", async () => {
  await using dir = await tempRepo({ "tasks.yaml": genTasks(3_000) })
  // Stopped the moment its lock appears; tried again on a rare run where it wrote before the signal landed.
  const holder = await stoppedHolder(dir.path, ["note", "task-00001", "from the stopped holder"])
  if (!holder) throw new Error("the holder was never stopped while it held the lock")
  unlinkSync(dir.file("tasks.yaml.lock"))
  expect(await flow(dir.path, ["note", "task-00002", "from the other writer"])).toEqual({ code: 0, stdout: "Added a note to task-00002\n", stderr: "" })
  holder.kill("SIGCONT")
  const [code, stderr] = await Promise.all([holder.exited, new Response(holder.stderr).text()])
  expect({ code, stderr }).toEqual({
    code: 1,
    stderr: expect.stringMatching(
      /^error: \S+tasks\.yaml\.lock was deleted while this process \(flow note task-00001\) held it: another writer may have changed tasks\.yaml meanwhile, so nothing was written\nhint: run the command again/,
    ),
  })
  const now = dir.read("tasks.yaml")
  expect([now.includes("- from the other writer"), now.includes("from the stopped holder"), leftovers(dir.path)]).toEqual([true, false, []])
})

test.concurrent("waiters give up on a stopped holder with how to resume it, and never advise deleting the lock of a live process", async () => {
  await using dir = await tempRepo({ "tasks.yaml": TASKS })
  const holder = Bun.spawn([process.execPath, `${ROOT}/test/fixtures/hold-lock.ts`, dir.file("tasks.yaml")], { stdout: "pipe" })
  await holder.stdout.getReader().read()
  holder.kill("SIGSTOP")
  try {
    const r = await flow(dir.path, ["note", "a", "x"], { env: { FLOW_LOCK_TIMEOUT: "0.3" } })
    expect({ code: r.code, hint: r.stderr.split("\n")[1] }).toEqual({
      code: 1,
      hint: `hint: process ${holder.pid} is stopped (kill -STOP, Ctrl-Z): resume it (kill -CONT ${holder.pid}) or end it (kill ${holder.pid}): flow takes over the lock of a process that has ended; do not delete ${dir.file("tasks.yaml.lock")} while its process runs; FLOW_LOCK_TIMEOUT (seconds) sets how long to wait`,
    })
    expect(dir.read("tasks.yaml")).toBe(TASKS)
  } finally {
    holder.kill("SIGKILL")
  }
})

const root = process.getuid?.() === 0
test.skipIf(!root)(
  "a full disk: taking the lock fails at once with 'the disk is full', where, and the ENOSPC as its cause (needs root to mount a tmpfs; skipped otherwise)",
  async () => {
    const mnt = mkdtempSync(join(tmpdir(), "flow-lock-tmpfs-"))
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt])
    if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`)
    try {
      writeFileSync(join(mnt, "tasks.yaml"), TASKS)
      // Fill every block: the lock's record (about 200 bytes) cannot be written, though its file can be created.
      try {
        for (;;) writeFileSync(join(mnt, "filler"), Buffer.alloc(4096), { flag: "a" })
      } catch {}
      const e = await acquire(join(mnt, "tasks.yaml"), { timeoutMs: 60_000 }).then(
        (release) => release(),
        (err) => err,
      )
      expect(e).toBeInstanceOf(FlowError)
      expect({ exit: e.exit, message: e.message, hint: e.hint, cause: e.cause?.code }).toEqual({
        exit: 1,
        message: `cannot create the lock file ${mnt}/tasks.yaml.lock: the disk is full (ENOSPC); nothing was changed`,
        hint: "free some space and try again",
        cause: "ENOSPC",
      })
      const r = await flow(mnt, ["note", "a", "n"], { env: { FLOW_LOCK_TIMEOUT: "60" } })
      expect([r.code, r.stderr.split("\n")[0]]).toEqual([
        1,
        `error: cannot create the lock file ${mnt}/tasks.yaml.lock: the disk is full (ENOSPC); nothing was changed`,
      ])
      expect([readFileSync(join(mnt, "tasks.yaml"), "utf8"), readdirSync(mnt).filter((f) => f.startsWith("tasks.yaml."))]).toEqual([TASKS, []])
    } finally {
      spawnSync("umount", [mnt])
      rmSync(mnt, { recursive: true, force: true })
    }
  },
)
