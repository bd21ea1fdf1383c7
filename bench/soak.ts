// `npm run soak`: the store under faults, through the real CLI (docs/RELIABILITY.md keeps the latest table).
// Cases: a full disk (a small tmpfs; root only) for the write commands and during `flow run` (soak-run.ts), kill -9
// during writes, broken locks, locks that are not files (bench/soak-locks.ts), a lock deleted under a stopped
// holder, a symlinked and a read-only tasks.yaml, many concurrent writers on a large file, and a fuzz corpus
// through validate/list/done.
// Prints one table: case, runs, failures, lost updates. `--small` runs smaller counts (test/soak.test.ts).
// Usage: bun bench/soak.ts [--small] [--only <case function, e.g. writers>]   (FLOW_BIN=dist/flow uses the compiled binary)
import { chmodSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { acquire } from "../lib/store/lock"
import { env, FULL, fillDisk, flow, flowArgv, genTasks, leftovers, project, type Row, SMALL, type Sizes, taskCount, withTmpfs } from "./soak-common"
import { corpus, fuzz } from "./soak-fuzz"
import { runOnFullDisk } from "./soak-run"
import { danglingLinks, deletedUnderStoppedHolder, lockDiskFull, lockNotAFile } from "./soak-locks"

export { FULL, genTasks, type Row, SMALL, type Sizes }

/** A write on a disk with too little room, then one on a 100% full disk: refused, file untouched, nothing left; then it works again. */
async function diskFull(s: Sizes): Promise<Row> {
  const name = "disk full (6 MB tmpfs)"
  return withTmpfs("6m", name, async (mnt) => {
    const row: Row = { name, runs: 0, failures: 0, lost: 0 }
    const text = genTasks(4_000)
    const dir = project(text, mnt)
    const filler = join(mnt, "filler")
    for (const fill of ["leave 600 KB", "leave nothing"]) {
      for (let t = 0; t < s.diskTries; t++) {
        row.runs++
        fillDisk(filler, fill === "leave nothing" ? 0 : 600 * 1024)
        const r = await flow(dir, ["note", "task-00003", `note ${fill} ${t}`])
        const now = readFileSync(join(dir, "tasks.yaml"), "utf8")
        if (now !== text) row.lost += taskCount(now) === 4_000 ? 0 : 1
        if (r.code !== 1 || !/disk is full|no space/i.test(r.stderr) || now !== text || leftovers(dir).length > 0) row.failures++
        unlinkSync(filler)
        // Space is back: the next write must work (no lock left behind to lock everyone out).
        const after = await flow(dir, ["note", "task-00003", "space is back"])
        if (after.code !== 0) row.failures++
        writeFileSync(join(dir, "tasks.yaml"), text)
      }
    }
    return row
  })
}

/** `flow run` on a disk that is full, nearly full or filling (bench/soak-run.ts). */
function diskFullRun(s: Sizes): Promise<Row> {
  return runOnFullDisk(s, { argv: flowArgv, env })
}

/** kill -9 of writers at random moments: the file is never torn, every acknowledged note is there, leftovers are cleaned. */
async function kills(s: Sizes): Promise<Row> {
  const row: Row = { name: "kill -9 during writes", runs: s.kills, failures: 0, lost: 0 }
  const n = Math.min(s.tasks, 2_000)
  const dir = project(genTasks(n))
  const acknowledged: string[] = []
  // Kill points spread over a whole write, as long as one takes on this machine now.
  const t0 = performance.now()
  await flow(dir, ["note", "task-00001", "timing"])
  const writeMs = performance.now() - t0
  for (let k = 0; k < s.kills; k++) {
    const note = `kill-note-${k}`
    const p = Bun.spawn([...flowArgv(), "note", `task-${String(k % n).padStart(5, "0")}`, note], { cwd: dir, env: env(), stdout: "pipe", stderr: "ignore" })
    await Bun.sleep(Math.random() * writeMs * 1.2)
    p.kill("SIGKILL")
    const code = await p.exited
    if (code === 0) acknowledged.push(note)
    const text = readFileSync(join(dir, "tasks.yaml"), "utf8")
    if (taskCount(text) !== n) row.failures++
  }
  const last = await flow(dir, ["note", "task-00000", "after the kills"])
  const text = readFileSync(join(dir, "tasks.yaml"), "utf8")
  row.lost = acknowledged.filter((note) => !text.includes(note)).length
  if (last.code !== 0 || leftovers(dir).length > 0) row.failures++
  row.note = `${acknowledged.length} writes finished before their kill (one write: ${Math.round(writeMs)} ms)`
  rmSync(dir, { recursive: true, force: true })
  return row
}

/** Lock files as crashes and full disks leave them: empty, garbage, half-written, a dead pid; tasks.yaml's and .flow/run's. */
async function brokenLocks(s: Sizes): Promise<Row> {
  const row: Row = { name: "empty and garbage locks", runs: 0, failures: 0, lost: 0 }
  const dead = Bun.spawn(["true"])
  await dead.exited
  const contents = [
    "",
    "\0\0garbage",
    '{"pid": 1',
    JSON.stringify({ pid: dead.pid, host: (await import("node:os")).hostname(), command: "x", since: "", token: "t" }),
  ]
  for (let i = 0; i < s.lockRuns; i++) {
    for (const content of contents) {
      const dir = project(genTasks(20))
      for (const target of [join(dir, "tasks.yaml"), join(dir, ".flow", "run")]) {
        row.runs++
        mkdirSync(join(dir, ".flow"), { recursive: true })
        writeFileSync(`${target}.lock`, content)
        // Half the runs date the lock back; the others make the lock wait out its short grace period.
        // A minute old on the file system's clock, which flow reads a lock's age on (not this process's).
        if (i % 2 === 0) {
          const past = new Date(statSync(`${target}.lock`).mtimeMs - 60_000)
          utimesSync(`${target}.lock`, past, past)
        }
        if (target.endsWith("tasks.yaml")) {
          const r = await flow(dir, ["note", "task-00001", "after a broken lock"])
          if (r.code !== 0) row.failures++
        } else {
          try {
            ;(await acquire(target, { timeoutMs: 0, command: "flow run" }))()
          } catch {
            row.failures++
          }
        }
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return row
}

async function symlinked(s: Sizes): Promise<Row> {
  const row: Row = { name: "symlinked tasks.yaml", runs: s.lockRuns, failures: 0, lost: 0 }
  for (let i = 0; i < s.lockRuns; i++) {
    const dir = project("")
    unlinkSync(join(dir, "tasks.yaml"))
    mkdirSync(join(dir, "real"))
    writeFileSync(join(dir, "real", "tasks.yaml"), genTasks(20))
    symlinkSync("real/tasks.yaml", join(dir, "tasks.yaml"))
    const r = await flow(dir, ["note", "task-00002", `through ${i}`])
    const ok =
      r.code === 0 && lstatSync(join(dir, "tasks.yaml")).isSymbolicLink() && readFileSync(join(dir, "real", "tasks.yaml"), "utf8").includes(`through ${i}`)
    if (!ok) row.failures++
    rmSync(dir, { recursive: true, force: true })
  }
  return row
}

async function readOnly(s: Sizes): Promise<Row> {
  const row: Row = { name: "read-only tasks.yaml (0444)", runs: s.lockRuns, failures: 0, lost: 0 }
  for (let i = 0; i < s.lockRuns; i++) {
    const text = genTasks(20)
    const dir = project(text)
    chmodSync(join(dir, "tasks.yaml"), 0o444)
    const r = await flow(dir, ["done", "task-00000"])
    if (r.code !== 1 || !r.stderr.includes("read-only") || readFileSync(join(dir, "tasks.yaml"), "utf8") !== text || leftovers(dir).length > 0) row.failures++
    rmSync(dir, { recursive: true, force: true })
  }
  return row
}

/** Many `flow note` at once on a large file: every one succeeds and every note lands. */
async function writers(s: Sizes): Promise<Row & { seconds: number }> {
  const dir = project(genTasks(s.tasks))
  const start = performance.now()
  const results = await Promise.all(
    Array.from({ length: s.writers }, (_, i) => flow(dir, ["note", `task-${String((i * 37) % s.tasks).padStart(5, "0")}`, `writer-${i}`])),
  )
  const seconds = (performance.now() - start) / 1000
  const text = readFileSync(join(dir, "tasks.yaml"), "utf8")
  const failed = results.filter((r) => r.code !== 0)
  const lost = results.filter((_, i) => !text.includes(`- writer-${i}\n`)).length - failed.length
  rmSync(dir, { recursive: true, force: true })
  return {
    name: `${s.writers} writers on ${s.tasks.toLocaleString("en")} tasks`,
    runs: s.writers,
    failures: failed.length,
    lost,
    seconds,
    note: `${seconds.toFixed(1)} s for all${failed[0] ? `; first failure: ${failed[0].stderr.split("\n")[0]}` : ""}`,
  }
}

/** The fuzz corpus in process, plus a sample through the real CLI: validate's verdict must be done's. */
async function fuzzCase(s: Sizes): Promise<Row> {
  const files = corpus(s.fuzz)
  const r = await fuzz(files)
  let failures = r.failures
  for (const text of files.slice(0, s.cliSample)) {
    const dir = project(text)
    const v = await flow(dir, ["validate"])
    const l = await flow(dir, ["list"])
    const id = /id: ([a-z0-9-]+)/.exec(text)?.[1] ?? "setup"
    const d = await flow(dir, ["done", id])
    // Valid: list works and done either works or refuses by rule (exit 1, never "internal error"); invalid: both exit 3.
    const agree = v.code === 0 ? l.code === 0 && d.code !== 3 && !d.stderr.includes("internal error") : l.code === 3 && d.code === 3
    if (!agree || [v, l, d].some((x) => x.stderr.includes("    at "))) failures++
    rmSync(dir, { recursive: true, force: true })
  }
  return {
    name: `fuzz corpus (validate/list/done)`,
    runs: files.length + s.cliSample,
    failures,
    lost: 0,
    note: `${r.accepted} accepted by validate; ${s.cliSample} also through the CLI${r.examples[0] ? `; e.g. ${r.examples[0]}` : ""}`,
  }
}

/** All cases, or with `only` the one whose function is named so (e.g. `--only writers`). */
export async function soak(s: Sizes, only?: string): Promise<Row[]> {
  const rows: Row[] = []
  const cases = [
    diskFull,
    diskFullRun,
    lockDiskFull,
    kills,
    brokenLocks,
    lockNotAFile,
    danglingLinks,
    deletedUnderStoppedHolder,
    symlinked,
    readOnly,
    writers,
    fuzzCase,
  ]
  for (const c of cases) if (!only || c.name === only) rows.push(await c(s))
  return rows
}

export function table(rows: Row[]): string {
  const lines = ["| case | runs | failures | lost updates | notes |", "|---|---:|---:|---:|---|"]
  for (const r of rows) lines.push(`| ${r.name} | ${r.runs} | ${r.failures} | ${r.lost} | ${r.note ?? ""} |`)
  return `${lines.join("\n")}\n`
}

if (import.meta.main) {
  const at = process.argv.indexOf("--only")
  const rows = await soak(process.argv.includes("--small") ? SMALL : FULL, at > 0 ? process.argv[at + 1] : undefined)
  process.stdout.write(table(rows))
  process.exit(rows.some((r) => r.failures > 0 || r.lost > 0) ? 1 : 0)
}
