// lib/store/disk-full.ts: a full disk told apart from other failures however it shows, and named cleanly.
import { expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { FlowError } from "../lib/cli/errors"
import { DiskFull, diskFullError, isDiskFull } from "../lib/store/disk-full"

const errno = (code: string, path?: string) => Object.assign(new Error(`${code}: failed, write '${path}'`), { code, ...(path ? { path } : {}) })
/** An error shaped as bun:sqlite's SQLiteError for `code` (a real one's code cannot be set; SHMSIZE is made for real in run-disk-full.test.ts). */
const sqliteError = (code: string) => Object.assign(new Error("disk I/O error"), { name: "SQLiteError", code })

/** SQLITE_FULL for real: a database not allowed to grow. */
function databaseFull(): unknown {
  const db = new Database(":memory:")
  db.exec("PRAGMA max_page_count = 2; CREATE TABLE t (x TEXT)")
  try {
    for (let i = 0; i < 100; i++) db.query("INSERT INTO t VALUES (?)").run("x".repeat(4000))
  } catch (e) {
    return e
  }
  throw new Error("the database never filled")
}

test("errno, SQLite and git's way of saying the disk is full are all a full disk, through any cause chain", () => {
  const cases: [string, unknown, boolean][] = [
    ["ENOSPC", errno("ENOSPC"), true],
    ["EDQUOT", errno("EDQUOT"), true],
    ["SQLITE_FULL", databaseFull(), true],
    ["SQLITE_IOERR_SHMSIZE", sqliteError("SQLITE_IOERR_SHMSIZE"), true],
    ["git's stderr", new FlowError("'git worktree add' failed (exit 128):\nfatal: could not write index: No space left on device"), true],
    ["a FlowError wrapping ENOSPC", new FlowError("cannot create the lock file", 1, undefined, { cause: errno("ENOSPC") }), true],
    ["two levels down", new Error("outer", { cause: new FlowError("inner", 1, undefined, { cause: databaseFull() }) }), true],
    ["EACCES", errno("EACCES"), false],
    ["SQLITE_BUSY", sqliteError("SQLITE_BUSY"), false],
    ["another I/O error", sqliteError("SQLITE_IOERR_READ"), false],
    ["a string", "No space", false],
    ["undefined", undefined, false],
  ]
  expect(cases.map(([name, e]) => [name, isDiskFull(e)])).toEqual(cases.map(([name, , full]) => [name, full]))
  // A cause chain that loops ends.
  const a = new Error("a") as Error & { cause?: unknown }
  a.cause = new Error("b", { cause: a })
  expect(isDiskFull(a)).toBe(false)
})

test("the clean error names the folder: the failing path's, else the one given; its code; how to go on", () => {
  const fromPath = diskFullError("/p/.flow", errno("ENOSPC", "/p/tasks.yaml.lock.1.x.tmp"), "cannot create the lock file")
  expect(fromPath).toBeInstanceOf(FlowError)
  expect([fromPath.folder, fromPath.message, fromPath.hint, fromPath.exit]).toEqual([
    "/p",
    "cannot create the lock file: the disk holding /p is full (ENOSPC)",
    "free some space on that disk ('df -h /p' shows how much is left), then try again",
    1,
  ])
  expect(diskFullError("/p/.flow", sqliteError("SQLITE_IOERR_SHMSIZE")).message).toBe("the disk holding /p/.flow is full (SQLITE_IOERR_SHMSIZE)")
  expect(diskFullError("/p", errno("EDQUOT")).message).toBe("the disk quota for /p is used up (EDQUOT)")
  // A DiskFull in the chain is kept as it is, folder and all.
  const inner = new DiskFull("/q", "the disk holding /q is full (0 KB free): a was not blocked")
  expect(diskFullError("/p", new Error("x", { cause: inner }))).toBe(inner)
})
