// `flow run` and the read commands on a full disk: a small tmpfs mounted by the test (root only; CI runs as
// root). The run says once where the disk is full, waits without spinning, stops cleanly on a signal during
// the wait, blocks no task for it, and finishes every task exactly once when there is room again.
import { afterAll, expect, test } from "bun:test"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { processCpuTicks } from "../lib/cli/pid"
import { background, flow, git, tasksYaml } from "./helpers"

/** Why the tests cannot run here, or undefined: mounting a tmpfs needs root (and the right to mount). */
const skipped = ((): string | undefined => {
  if (process.getuid?.() !== 0) return "needs root to mount a tmpfs"
  const probe = mkdtempSync(join(tmpdir(), "flow-tmpfs-probe-"))
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe])
  if (r.status === 0) spawnSync("umount", [probe])
  rmSync(probe, { recursive: true, force: true })
  return r.status === 0 ? undefined : `mount failed: ${r.stderr.toString().trim()}`
})()
const name = (text: string) => (skipped ? `${text} (skipped: ${skipped})` : text)

const mounts: string[] = []
afterAll(() => {
  for (const m of mounts) {
    spawnSync("umount", ["-l", m])
    rmSync(m, { recursive: true, force: true })
  }
})

/** A git repository holding `files` on a fresh tmpfs of `mb` megabytes; `fill` fills the disk, `free` empties it again. */
async function smallDisk(mb: number, files: (filler: string) => Record<string, string | Uint8Array>) {
  const mnt = mkdtempSync(join(tmpdir(), "flow-full-"))
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${mb}m`, "tmpfs", mnt])
  if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`)
  mounts.push(mnt)
  const dir = join(mnt, "p")
  const filler = join(mnt, "filler")
  mkdirSync(dir)
  for (const [file, content] of Object.entries(files(filler))) writeFileSync(join(dir, file), content)
  await git(dir, ["init", "-q", "-b", "main"])
  await git(dir, ["add", "-A"])
  await git(dir, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "initial"])
  return {
    dir,
    filler,
    /** Fills the disk until `leave` bytes are free (0: every last block). */
    fill(leave = 0) {
      const free = () => Number(spawnSync("df", ["--output=avail", "-B1", mnt]).stdout.toString().trim().split("\n")[1])
      try {
        writeFileSync(filler, Buffer.alloc(Math.max(0, free() - leave)))
        if (leave === 0) for (;;) appendFileSync(filler, Buffer.alloc(4096))
      } catch {}
    },
    free: () => unlinkSync(filler),
  }
}

const statuses = (yaml: string) => Object.fromEntries((Bun.YAML.parse(yaml) as { tasks: { id: string; status: string }[] }).tasks.map((t) => [t.id, t.status]))
const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``
const count = (text: string, part: string) => text.split(part).length - 1

test.skipIf(skipped !== undefined)(
  name("a disk that fills during a run: said once, no spinning, SIGTERM during the wait exits 130; a rerun with room finishes every task exactly once"),
  async () => {
    const outside = mkdtempSync(join(tmpdir(), "flow-full-mark-"))
    try {
      // Task a's own script fills the disk (once: the mark is on another disk), then cannot write its file.
      const disk = await smallDisk(16, (filler) => ({
        ".gitignore": ".flow/\n",
        "tasks.yaml": tasksYaml([
          {
            id: "a",
            title: "A",
            status: "todo",
            instructions: sh(`[ -e ${outside}/filled ] || { touch ${outside}/filled; cat /dev/zero > ${filler} || true; }\necho a > a.txt`),
          },
          { id: "b", title: "B", status: "todo", depends_on: ["a"], instructions: sh("echo b > b.txt") },
        ]),
      }))
      const run = background(disk.dir, ["run", "--agents", "1", "--cli", "script", "--headless"])
      await run.waitFor("waiting for room")
      expect(existsSync(disk.filler)).toBe(true)
      // Waiting is a timer, not a loop: over 3 s the run uses a small part of one core.
      const cpu = () => processCpuTicks(run.proc.pid) ?? 0 // clock ticks of 10 ms
      const before = cpu()
      const t0 = performance.now()
      await Bun.sleep(3_000)
      const share = ((cpu() - before) * 10) / (performance.now() - t0)
      expect(share).toBeLessThan(0.15)
      run.proc.kill("SIGTERM")
      const stopped = await run.done()
      expect({ code: stopped.code, stderr: stopped.stderr }).toEqual({
        code: 130,
        stderr: "stopping: agents are being stopped; their tasks will be resumed by the next 'flow run' (Ctrl-C again to quit at once)\n",
      })
      expect(count(stopped.stdout, "waiting for room")).toBe(1)
      expect(stopped.stdout).toMatch(new RegExp(`run: [^\\n]*the disk holding ${disk.dir}\\S* is full[^\\n]*; waiting for room`))
      expect(statuses(readFileSync(join(disk.dir, "tasks.yaml"), "utf8"))).toEqual({ a: "in_progress", b: "todo" })

      disk.free()
      const again = await flow(disk.dir, ["run", "--agents", "1", "--cli", "script", "--headless"])
      expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "" })
      expect(statuses(readFileSync(join(disk.dir, "tasks.yaml"), "utf8"))).toEqual({ a: "done", b: "done" })
      expect((await git(disk.dir, ["log", "--merges", "--format=%s"])).trim().split("\n")).toEqual(["Merge flow/b: b", "Merge flow/a: a"])
      expect(readFileSync(join(disk.dir, "a.txt"), "utf8")).toBe("a\n")
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  },
)

test.skipIf(skipped !== undefined)(
  name("a task whose worktree could not be made for a full disk is not blocked: it runs in the same run once there is room"),
  async () => {
    // 3 MB that do not compress: the checkout of a worktree needs them again.
    const disk = await smallDisk(16, () => ({
      ".gitignore": ".flow/\n",
      "big.bin": randomBytes(3 << 20),
      "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("echo a > a.txt") }]),
    }))
    disk.fill(600 * 1024)
    const run = background(disk.dir, ["run", "--agents", "1", "--cli", "script", "--headless"])
    await run.waitFor("waiting for room")
    expect(run.output()).toContain("worktree")
    // The claim (assigned) and the worktree go at once: the claim's write may land just after the wait is said.
    await run.waitFor("→ assigned")
    expect(statuses(readFileSync(join(disk.dir, "tasks.yaml"), "utf8"))).toEqual({ a: "assigned" })
    disk.free()
    const r = await run.done()
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    expect(r.stdout).toContain("run: there is room again on the disk")
    expect(count(r.stdout, "waiting for room")).toBe(1)
    expect(statuses(readFileSync(join(disk.dir, "tasks.yaml"), "utf8"))).toEqual({ a: "done" })
    expect(readFileSync(join(disk.dir, "a.txt"), "utf8")).toBe("a\n")
  },
)

test.skipIf(skipped !== undefined)(
  name("on a full disk every command that opens the state database fails with one clean line and exit 1, and so does flow run"),
  async () => {
    const disk = await smallDisk(8, () => ({
      "tasks.yaml": tasksYaml([{ id: "a", title: "A", status: "todo", instructions: sh("true") }]),
    }))
    expect((await flow(disk.dir, ["ask", "a", "which port?"])).code).toBe(0) // the state database exists
    disk.fill(0)
    for (const args of [
      ["show", "a"],
      ["questions"],
      ["agents"],
      ["dashboard", "--once"],
      ["ask", "a", "again?"],
      ["answer", "q-1", "80"],
      ["run", "--agents", "1", "--cli", "script"],
    ]) {
      const r = await flow(disk.dir, args)
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 1, stdout: "" })
      expect({ args, stderr: r.stderr }).toEqual({
        args,
        stderr: expect.stringMatching(
          /^error: [^\n]*the disk holding \/\S+ is full[^\n]*\nhint: free some space on that disk \('df -h \S+' shows how much is left\), then try again\n$/,
        ),
      })
    }
    disk.free()
    expect((await flow(disk.dir, ["questions"])).code).toBe(0)
  },
)
