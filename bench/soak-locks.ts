// The soak's lock cases (issue 21 items 3, 4 and the lock's part of 1): lock paths that are not lock files,
// a lock deleted under a stopped holder, and no room on the disk for the lock's record. docs/RELIABILITY.md.
import { mkdirSync, readFileSync, rmSync, symlinkSync, unlinkSync } from "node:fs"
import { join } from "node:path"
import { spawnSync } from "node:child_process"
import { FlowError } from "../lib/cli/errors"
import { acquire } from "../lib/store/lock"
import { fillDisk, flow, genTasks, leftovers, project, type Row, type Sizes, stoppedHolder, withTmpfs } from "./soak-common"

/** A writer that has not answered in this long is spinning (the bug these cases guard against): killed, and a failure. */
const HANG_MS = 60_000

/** The run lock, taken in process as `flow run` takes it: "ok", or the error's message. */
async function runLock(dir: string): Promise<string> {
  try {
    ;(await acquire(join(dir, ".flow", "run"), { timeoutMs: 0, command: "flow run" }))()
    return "ok"
  } catch (e) {
    return e instanceof FlowError ? e.message : `not a FlowError: ${e}`
  }
}

/** A directory and a FIFO where tasks.yaml.lock and .flow/run.lock go: every writer fails at once naming the path, nothing changes. */
export async function lockNotAFile(s: Sizes): Promise<Row> {
  const row: Row = { name: "lock path a directory or a FIFO", runs: 0, failures: 0, lost: 0 }
  for (let i = 0; i < s.lockRuns; i++) {
    for (const kind of ["directory", "FIFO"]) {
      const text = genTasks(20)
      const dir = project(text)
      mkdirSync(join(dir, ".flow"))
      for (const lock of [join(dir, "tasks.yaml.lock"), join(dir, ".flow", "run.lock")]) {
        if (kind === "directory") mkdirSync(lock)
        else spawnSync("mkfifo", [lock])
      }
      row.runs += 2
      const r = await flow(dir, ["note", "task-00001", "through a bad lock"], HANG_MS)
      const named = `${join(dir, "tasks.yaml.lock")} is a ${kind}, not a lock file`
      if (r.code !== 1 || !r.stderr.includes(named) || readFileSync(join(dir, "tasks.yaml"), "utf8") !== text || leftovers(dir).length !== 1) row.failures++
      if (!(await runLock(dir)).includes(`run.lock is a ${kind}, not a lock file`)) row.failures++
      rmSync(dir, { recursive: true, force: true })
    }
  }
  row.note = "every writer exits 1 naming the path, tasks.yaml unchanged, nothing left but the thing itself"
  return row
}

/** A symlink to nothing as tasks.yaml.lock and .flow/run.lock: removed like a dead owner's lock; the write and the run lock go through. */
export async function danglingLinks(s: Sizes): Promise<Row> {
  const row: Row = { name: "lock a dangling symlink", runs: 0, failures: 0, lost: 0 }
  for (let i = 0; i < s.lockRuns; i++) {
    const dir = project(genTasks(20))
    mkdirSync(join(dir, ".flow"))
    symlinkSync("nowhere", join(dir, "tasks.yaml.lock"))
    symlinkSync("../nowhere", join(dir, ".flow", "run.lock"))
    row.runs += 2
    const r = await flow(dir, ["note", "task-00001", "after a dangling lock"], HANG_MS)
    if (r.code !== 0 || leftovers(dir).length > 0) row.failures++
    else if (!readFileSync(join(dir, "tasks.yaml"), "utf8").includes("- after a dangling lock")) row.lost++
    if ((await runLock(dir)) !== "ok") row.failures++
    rmSync(dir, { recursive: true, force: true })
  }
  return row
}

/**
 * A writer stopped (SIGSTOP) while it holds the lock, the lock deleted by hand, another writer through, then the
 * first continued (SIGCONT): it must write nothing and exit 1; the other's note must stay.
 */
export async function deletedUnderStoppedHolder(s: Sizes): Promise<Row> {
  const row: Row = { name: "lock deleted under a stopped holder", runs: 0, failures: 0, lost: 0 }
  for (let i = 0; i < s.lockRuns; i++) {
    const dir = project(genTasks(2_000))
    const holder = await stoppedHolder(dir, ["note", "task-00001", `stopped ${i}`])
    row.runs++
    if (!holder) {
      row.failures++
      continue
    }
    unlinkSync(join(dir, "tasks.yaml.lock"))
    const other = await flow(dir, ["note", "task-00002", `other ${i}`], HANG_MS)
    holder.kill("SIGCONT")
    const [code, stderr] = await Promise.all([holder.exited, new Response(holder.stderr).text()])
    const text = readFileSync(join(dir, "tasks.yaml"), "utf8")
    if (other.code === 0 && !text.includes(`- other ${i}`)) row.lost++
    if (other.code !== 0 || code !== 1 || !stderr.includes("was deleted while this process") || text.includes(`stopped ${i}`) || leftovers(dir).length > 0)
      row.failures++
    rmSync(dir, { recursive: true, force: true })
  }
  row.note = "the holder exits 1 and writes nothing; the other writer's note stays"
  return row
}

/** No room for the lock's record: tasks.yaml's and the run's lock fail at once, as a FlowError whose cause is the ENOSPC. */
export async function lockDiskFull(s: Sizes): Promise<Row> {
  const name = "disk full at the lock (1 MB tmpfs, 0 free)"
  return withTmpfs("1m", name, async (mnt) => {
    const row: Row = { name, runs: 0, failures: 0, lost: 0 }
    const text = genTasks(20)
    const dir = project(text, mnt)
    mkdirSync(join(dir, ".flow"))
    fillDisk(join(mnt, "filler"), 0)
    for (let t = 0; t < s.diskTries; t++) {
      for (const target of [join(dir, "tasks.yaml"), join(dir, ".flow", "run")]) {
        row.runs++
        const e = await acquire(target, { timeoutMs: HANG_MS }).then(
          (release) => release(),
          (err) => err,
        )
        const ok =
          e instanceof FlowError && e.exit === 1 && e.message.includes(`${target}.lock: the disk is full`) && (e.cause as { code?: string })?.code === "ENOSPC"
        if (!ok) row.failures++
      }
      row.runs++
      const r = await flow(dir, ["done", "task-00001"], HANG_MS)
      if (r.code !== 1 || !r.stderr.includes("the disk is full") || readFileSync(join(dir, "tasks.yaml"), "utf8") !== text || leftovers(dir).length > 0)
        row.failures++
    }
    row.note = "a FlowError (exit 1) naming the lock file, its cause the ENOSPC; no spin, nothing left"
    return row
  })
}
