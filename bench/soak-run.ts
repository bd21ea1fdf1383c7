// The soak's `flow run` cases (bench/soak.ts): a disk that is full, nearly full or filling while a run works.
// As root on a 16 MB tmpfs, each try fills the disk to a different level (or lets a task's own script fill
// it) and checks what docs/RUN.md "A full disk" promises: a clean error before the agents start, or one
// "waiting for room" line and a wait that uses almost no CPU and ends on SIGTERM (exit 130) or when space is
// freed; never a stack trace, a task blocked for the disk, or a task merged twice.
import { spawnSync } from "node:child_process"
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { processCpuTicks } from "../lib/cli/pid"
import type { Row, Sizes } from "./soak"

type Tools = { argv: () => string[]; env: () => Record<string, string> }

/** Free bytes left before the run starts; "task": the first task's script fills the disk during the run. */
const LEVELS = ["task", 0, 40_000, 120_000, 300_000, 600_000] as const
const IDS = ["a", "b", "c", "d"]

export async function runOnFullDisk(s: Sizes, tools: Tools): Promise<Row> {
  const name = "disk full during flow run (16 MB tmpfs)"
  if (process.getuid?.() !== 0) return { name, runs: 0, failures: 0, lost: 0, note: "skipped: needs root to mount a tmpfs" }
  const row: Row = { name, runs: 0, failures: 0, lost: 0 }
  const seen = { refused: 0, waited: 0, unaffected: 0, maxCpu: 0 }
  const problems: string[] = []
  for (let t = 0; t < s.diskTries * 2; t++) {
    const mnt = mkdtempSync(join(tmpdir(), "flow-soak-run-"))
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt])
    if (mounted.status !== 0) {
      rmSync(mnt, { recursive: true, force: true })
      return { name, runs: 0, failures: 0, lost: 0, note: `skipped: mount failed (${mounted.stderr.toString().trim()})` }
    }
    const mark = mkdtempSync(join(tmpdir(), "flow-soak-mark-"))
    try {
      row.runs++
      const level = LEVELS[t % LEVELS.length]
      const problem = await oneTry(mnt, mark, level, t % 2 === 0 ? "stop" : "free", tools, seen)
      if (problem) {
        row.failures++
        problems.push(`${level}: ${problem}`)
      }
    } finally {
      spawnSync("umount", ["-l", mnt])
      rmSync(mnt, { recursive: true, force: true })
      rmSync(mark, { recursive: true, force: true })
    }
  }
  row.note = `${seen.refused} refused at the start (clean error), ${seen.waited} waited (CPU while waiting at most ${Math.round(seen.maxCpu * 100)}% of a core), ${seen.unaffected} had room enough${problems[0] ? `; first failure: ${problems[0]}` : ""}`
  return row
}

/** One run at one fill level; what went wrong, or undefined. `after`: stop the waiting run with SIGTERM, or free space under it. */
async function oneTry(
  mnt: string,
  mark: string,
  level: (typeof LEVELS)[number],
  after: "stop" | "free",
  tools: Tools,
  seen: { refused: number; waited: number; unaffected: number; maxCpu: number },
): Promise<string | undefined> {
  const dir = join(mnt, "p")
  const filler = join(mnt, "filler")
  mkdirSync(dir)
  const fill = level === "task" ? `[ -e ${mark}/filled ] || { touch ${mark}/filled; cat /dev/zero > ${filler} || true; }\n` : ""
  const tasks = IDS.map(
    (id, i) =>
      `  - id: ${id}\n    title: ${id}\n    status: todo\n${i === 2 ? "    depends_on: [a]\n" : ""}    instructions: |\n      \`\`\`sh\n      ${i === 0 ? fill.replace(/\n$/, "\n      ") : ""}echo ${id} > ${id}.txt\n      \`\`\`\n`,
  )
  writeFileSync(join(dir, "tasks.yaml"), `tasks:\n${tasks.join("")}`)
  writeFileSync(join(dir, ".gitignore"), ".flow/\n")
  for (const args of [
    ["init", "-q", "-b", "main"],
    ["add", "-A"],
    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "initial"],
  ])
    spawnSync("git", args, { cwd: dir })
  if (level !== "task") fillTo(mnt, filler, level)

  const argv = [...tools.argv(), "run", "--agents", "2", "--cli", "script", "--headless"]
  const first = await start(argv, dir, tools.env())
  if (first.exited) {
    const r = await first.done
    if (r.stderr.includes("    at ")) return `a stack trace: ${r.stderr.slice(0, 200)}`
    if (r.code === 137) return "neither finished nor said it waits for room within 120 s (killed)"
    if (r.code === 1 && /^error: [^\n]*the disk holding [^\n]* is full[^\n]*\nhint: [^\n]+\n$/.test(r.stderr)) seen.refused++
    else if (r.code === 0) seen.unaffected++
    else return `exit ${r.code}: ${r.stderr.slice(0, 200)}`
  } else {
    seen.waited++
    const ticks = () => processCpuTicks(first.proc.pid) ?? 0
    const t0 = performance.now()
    const c0 = ticks()
    await Bun.sleep(2_000)
    const share = ((ticks() - c0) * 10) / (performance.now() - t0)
    seen.maxCpu = Math.max(seen.maxCpu, share)
    if (share > 0.15) return `the waiting run used ${Math.round(share * 100)}% of a core`
    if (after === "stop") first.proc.kill("SIGTERM")
    else unlinkSync(filler)
    const r = await first.done
    if (r.stderr.includes("    at ")) return `a stack trace: ${r.stderr.slice(0, 200)}`
    if (r.stdout.split("waiting for room").length !== 2) return "'waiting for room' not said exactly once"
    if (after === "stop" && r.code !== 130) return `exit ${r.code} after SIGTERM: ${r.stderr.slice(0, 200)}`
    if (after === "free" && r.code !== 0) return `exit ${r.code} after space was freed: ${r.stderr.slice(0, 200)}`
    if (/→ blocked/.test(r.stdout)) return "a task was blocked"
  }
  // Space back: a run finishes whatever is left, and every task was merged exactly once.
  rmSync(filler, { force: true })
  const last = await start(argv, dir, tools.env())
  const r = await last.done
  if (r.code !== 0) return `the run after space was freed: exit ${r.code}: ${r.stderr.slice(0, 200)}`
  const merges = spawnSync("git", ["log", "--merges", "--format=%s"], { cwd: dir }).stdout.toString()
  const wrong = IDS.filter((id) => merges.split(`Merge flow/${id}: ${id}\n`).length !== 2)
  return wrong.length ? `merged other than once: ${wrong.join(", ")}` : undefined
}

/** Starts the run; `exited` tells, once known, whether it ended before saying it waits for room. */
async function start(argv: string[], cwd: string, env: Record<string, string>) {
  const proc = Bun.spawn(argv, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
  let stdout = ""
  const { promise: waiting, resolve } = Promise.withResolvers<void>()
  const pump = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout) {
      stdout += decoder.decode(chunk, { stream: true })
      if (stdout.includes("waiting for room")) resolve()
    }
  })()
  const stderr = new Response(proc.stderr).text()
  const done = (async () => ({ code: await proc.exited, stdout: (await pump, stdout), stderr: await stderr }))()
  // A run that neither ends nor says it waits (the spin this case was written for) is killed and named.
  const hung = setTimeout(() => proc.kill("SIGKILL"), 120_000)
  void done.then(() => clearTimeout(hung))
  const exited = await Promise.race([waiting.then(() => false), done.then(() => true)])
  if (exited) clearTimeout(hung)
  return { proc, exited, done }
}

function fillTo(mnt: string, filler: string, leave: number): void {
  const free = Number(spawnSync("df", ["--output=avail", "-B1", mnt]).stdout.toString().trim().split("\n")[1])
  try {
    writeFileSync(filler, Buffer.alloc(Math.max(0, free - leave)))
    if (leave === 0) for (;;) appendFileSync(filler, Buffer.alloc(4096))
  } catch {}
}
