// Recovery of the moves of a person's checkout (lib/landing/checkout-move.ts) that a kill cut off, at a run's start
// (lib/run/recovery.ts): each journaled move not ended is finished or undone, so that no checkout is left
// with its branch at one commit and its index at another, nor with files a killed two-tree read half wrote
// (docs/RUN.md, "What happens at each kill point").
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs"
import { join } from "node:path"
import { GIT_ENV, gitDirs, revParse } from "../git/git"
import * as clock from "../cli/clock"
import { fileAgeMs } from "../cli/file-age"
import { run } from "../cli/proc"
import { list, shown, worktreeHead } from "./checkout-move"
import type { CheckoutMove, MoveJournal } from "./merge-journal"

/**
 * The lock files of a move's git (the checkout's index and HEAD, the ref's) that a kill of flow's process
 * group left: the move was under way (journaled, not ended), the lock is no older than the move, and no git
 * is alive any more in that repository (the reaper waited for the gits flow started). Anything else is the
 * person's, and is named, never removed (moveTarget).
 */
function clearOwnLocks(m: CheckoutMove): string[] {
  const cd = gitDirs(m.checkout)
  const rd = gitDirs(m.repo)
  if (!cd || !rd || gitAliveIn([m.checkout, m.repo])) return []
  // The move's start is on flow's clock, a lock's mtime on the file system's: the move is placed on the file
  // system's clock by how long ago it started (lib/cli/file-age.ts), with a second's slack.
  const started = m.started_at ? Date.parse(m.started_at) : Number.NaN
  const ago = Number.isNaN(started) ? Number.NEGATIVE_INFINITY : clock.now() - started
  const cleared: string[] = []
  for (const lock of [join(cd.gitdir, "index.lock"), join(cd.gitdir, "HEAD.lock"), join(rd.common, `${m.ref}.lock`)]) {
    try {
      if (fileAgeMs(lock) > ago + 1000) continue
      rmSync(lock)
      cleared.push(shown(lock, m.checkout))
    } catch {}
  }
  return cleared
}

/** Whether any live git process works in one of `dirs` (its cwd there), from /proc; without /proc, assume so. */
function gitAliveIn(dirs: string[]): boolean {
  if (!existsSync("/proc/self/cwd")) return true
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "git") continue
      const cwd = readlinkSync(`/proc/${pid}/cwd`)
      if (dirs.some((d) => cwd === d || cwd.startsWith(`${d}/`))) return true
    } catch {}
  }
  return false
}

/**
 * Finishes or undoes the moves a killed run left half done (journaled, not ended), so that no checkout is
 * left with its branch at one commit and its index at another:
 * - the ref moved (at `new`): the checkout is made to follow if its index still holds `old`'s version of the
 *   moved paths (the two-tree read again);
 * - the ref did not move (at `old`): if the index already holds `new`'s version of the moved paths (the read
 *   was made), the ref is moved; if it holds `old`'s, nothing happened and nothing is done;
 * - the ref is somewhere else (the person committed or reset since): their doing, left alone.
 * Returns one line per move, for the run's notices.
 */
export async function recoverMoves(journal: MoveJournal): Promise<string[]> {
  const said: string[] = []
  for (const m of await journal.open()) {
    said.push(await recoverMove(m))
    await journal.end(m.id, "recovered")
  }
  return said
}

async function recoverMove(m: CheckoutMove): Promise<string> {
  const cleared = clearOwnLocks(m)
  const [at] = await revParse(m.repo, m.ref)
  const name = m.ref.replace(/^refs\/heads\//, "")
  const head = existsSync(m.checkout) ? worktreeHead(m.checkout) : undefined
  const said = await recoverMoveState(m, at, name, head)
  return cleared.length ? `${said} (removed ${cleared.join(", ")}, left by its git, killed with it)` : said
}

async function recoverMoveState(m: CheckoutMove, at: string | undefined, name: string, head: ReturnType<typeof worktreeHead>): Promise<string> {
  if (!head || !("branch" in head) || head.branch !== name) return `a move of ${name} was cut off; ${m.checkout} is no longer on it: left as it is`
  const moved = (await run(["git", "diff", "--name-only", "--no-renames", m.old, m.new], { cwd: m.repo, env: GIT_ENV })).stdout.split("\n").filter(Boolean)
  if (moved.length === 0) {
    if (at === m.old) await run(["git", "update-ref", m.ref, m.new, m.old], { cwd: m.repo, env: GIT_ENV })
    return `a move of ${name} was cut off: finished`
  }
  const indexAt = async (commit: string) =>
    (await run(["git", "diff-index", "--cached", "--quiet", "--no-renames", commit, "--", ...moved], { cwd: m.checkout, env: GIT_ENV })).code === 0
  if (at === m.new) {
    if (await indexAt(m.old)) {
      const read = await finishRead(m, await halfRead(m, moved))
      return read === undefined
        ? `a move of ${name} was cut off after the branch moved: ${m.checkout} made to follow`
        : `a move of ${name} was cut off after the branch moved, and ${m.checkout} could not follow: ${read}; 'git status' there shows the difference`
    }
    return `a move of ${name} was cut off: it had finished`
  }
  if (at === m.old) {
    const half = (await indexAt(m.new)) ? undefined : await halfRead(m, moved)
    if (half && !half.touched && half.other.length === 0) return `a move of ${name} was cut off before it started: nothing changed`
    // Cut off half way through the read: the read is finished first, then the ref moves as after a whole read.
    const read = half && (await finishRead(m, half))
    if (read !== undefined)
      return `a move of ${name} was cut off while ${m.checkout} was being updated, and could not be finished: ${read}; 'git status' there shows the difference`
    const r = await run(["git", "update-ref", m.ref, m.new, m.old], { cwd: m.repo, env: GIT_ENV })
    if (r.code === 0)
      return half
        ? `a move of ${name} was cut off while ${m.checkout} was being updated: finished`
        : `a move of ${name} was cut off after ${m.checkout} was updated: the branch moved to match`
    await run(["git", "read-tree", "-m", "-u", m.new, m.old], { cwd: m.checkout, env: GIT_ENV })
    return `a move of ${name} was cut off and could not be finished: ${m.checkout} put back`
  }
  return `a move of ${name} was cut off; ${name} was moved since by someone else: left as it is`
}

/** A moved path's entry in a commit: its mode and blob. */
type Entry = { mode: string; blob: string }

/**
 * What a two-tree read of `old` → `new` killed half way left of the moved paths (git writes the checkout's
 * files first and its index last, so the index still holds `old`'s; before it started, every moved path
 * was as in `old`, or git would have refused): `set`, the paths whose file is `new`'s (git wrote it) or gone
 * where `new` has it (git unlinks a file before writing it again), to record at `new`'s version; `remove`,
 * the paths gone where `new` has none; `write`, the gone ones to write once the read is done; `partial`, the
 * files git had begun to write (the first bytes of `new`'s and fewer than all: removed, then written whole);
 * `other`, the paths in any other state (changed by the person since), which nothing may touch.
 */
type HalfRead = { touched: boolean; set: [string, Entry][]; remove: string[]; write: string[]; partial: string[]; other: string[] }

async function halfRead(m: CheckoutMove, moved: string[]): Promise<HalfRead> {
  const [before, after] = await Promise.all([entriesOf(m, m.old, moved), entriesOf(m, m.new, moved)])
  const half: HalfRead = { touched: false, set: [], remove: [], write: [], partial: [], other: [] }
  const files: string[] = []
  for (const path of moved) {
    let stat: ReturnType<typeof lstatSync> | undefined
    try {
      stat = lstatSync(join(m.checkout, path))
    } catch {}
    const next = after.get(path)
    if (stat === undefined) {
      if (!before.has(path)) continue // an addition not written yet
      if (!next) half.remove.push(path)
      else {
        half.set.push([path, next])
        half.write.push(path)
      }
    } else if (stat.isFile() && !path.includes("\n")) files.push(path)
    else half.other.push(path)
  }
  const hashes = files.length
    ? (await run(["git", "hash-object", "--stdin-paths"], { cwd: m.checkout, env: GIT_ENV, stdin: `${files.join("\n")}\n` })).stdout.split("\n")
    : []
  files.forEach((path, i) => {
    const next = after.get(path)
    if (next && hashes[i] === next.blob) half.set.push([path, next])
    else if (next && before.get(path)?.blob !== hashes[i] && writtenInPart(m, path, next.blob)) {
      // Killed while git wrote it (created, its bytes not all there): it goes, and is written whole.
      half.partial.push(path)
      half.set.push([path, next])
      half.write.push(path)
    } else if (before.get(path)?.blob !== hashes[i]) half.other.push(path)
  })
  half.touched = half.set.length + half.remove.length > 0
  return half
}

/** Whether the checkout's file at `path` holds the first bytes of `blob`, and fewer than all: git's write cut off. */
function writtenInPart(m: CheckoutMove, path: string, blob: string): boolean {
  const file = readFileSync(join(m.checkout, path))
  const whole = Bun.spawnSync(["git", "cat-file", "blob", blob], { cwd: m.checkout, env: { ...process.env, ...GIT_ENV } })
  return whole.exitCode === 0 && file.length < whole.stdout.length && whole.stdout.subarray(0, file.length).equals(file)
}

/** The entries of `paths` in `commit` (`git ls-tree`), by path. */
async function entriesOf(m: CheckoutMove, commit: string, paths: string[]): Promise<Map<string, Entry>> {
  const out = (await run(["git", "ls-tree", "-r", "-z", "--full-tree", commit, "--", ...paths], { cwd: m.checkout, env: GIT_ENV })).stdout
  const entries = new Map<string, Entry>()
  for (const line of out.split("\0").filter(Boolean)) {
    const [meta, path] = [line.slice(0, line.indexOf("\t")), line.slice(line.indexOf("\t") + 1)]
    const [mode, , blob] = meta.split(" ")
    entries.set(path, { mode, blob })
  }
  return entries
}

/**
 * Finishes a two-tree read of the checkout: the paths a killed read already changed recorded in the index as
 * it wrote them (`new`'s), the read of the rest (which git refuses when anything would be lost), then the
 * files it had unlinked written by `git checkout-index` (which never overwrites a file). Undefined when done;
 * else why not, with nothing touched when a path is in neither move's state.
 */
async function finishRead(m: CheckoutMove, half: HalfRead): Promise<string | undefined> {
  if (half.other.length) return `${list(half.other)} ${half.other.length === 1 ? "is" : "are"} neither as before the move nor as after it`
  const opts = { cwd: m.checkout, env: GIT_ENV }
  for (const path of half.partial) rmSync(join(m.checkout, path), { force: true })
  const info = [...half.set.map(([path, e]) => `${e.mode} ${e.blob}\t${path}`), ...half.remove.map((path) => `0 ${"0".repeat(40)}\t${path}`)]
  if (info.length) {
    const r = await run(["git", "update-index", "-z", "--index-info"], { ...opts, stdin: `${info.join("\0")}\0` })
    if (r.code !== 0) return r.stderr.trim().split("\n")[0]
  }
  const read = await run(["git", "read-tree", "-m", "-u", m.old, m.new], opts)
  if (read.code !== 0) return read.stderr.trim().split("\n")[0]
  if (half.write.length) {
    const r = await run(["git", "checkout-index", "--", ...half.write], opts)
    if (r.code !== 0) return r.stderr.trim().split("\n")[0]
  }
  return undefined
}
