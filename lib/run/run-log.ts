// Each `flow run`'s log kept on disk: `.flow/runs/<run-id>.log` holds the headless log's lines (lib/run/log.ts)
// whether the run showed them or drew its full screen, so they outlive the screen. The newest KEEP_RUNS logs
// are kept; `flow log` reads them (docs/RUN.md "The run's log").
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, rmSync, statSync, writeSync } from "node:fs"
import { join } from "node:path"
import { runLockTarget, type Project } from "../cli/project"
import { lockHolder } from "../store/lock"
import * as clock from "../cli/clock"

/** How many runs' logs are kept: the oldest go when a run starts. */
export const KEEP_RUNS = 20

// <UTC date>-<UTC time>-<pid>: the name sorts by start time, and the pid tells whether its run is alive.
const LOG_NAME = /^(\d{8}-\d{6})-(\d+)\.log$/

export type RunLogFile = { id: string; file: string; pid: number }

export function runLogDir(project: Project): string {
  return join(project.stateDir, "runs")
}

/** The logs kept, oldest first. */
export function runLogs(project: Project): RunLogFile[] {
  const dir = runLogDir(project)
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .flatMap((name) => {
      const m = LOG_NAME.exec(name)
      return m ? [{ id: name.slice(0, -".log".length), file: join(dir, name), pid: Number(m[2]), key: m[1] }] : []
    })
    .sort((a, b) => (a.key === b.key ? a.pid - b.pid : a.key < b.key ? -1 : 1))
    .map(({ key: _, ...log }) => log)
}

/** A run's log being written: one line per call, each written through to the file at once. */
export type RunLog = RunLogFile & { write(line: string): void; close(): void }

/**
 * Starts the log of the run started now by this process, after removing the oldest logs so that KEEP_RUNS
 * remain with it. A log that cannot be written (a full disk, a read-only .flow) never stops the run: it
 * stops being written.
 */
export function startRunLog(project: Project, now = clock.nowDate(), pid = process.pid): RunLog {
  const dir = runLogDir(project)
  mkdirSync(dir, { recursive: true })
  for (const old of runLogs(project).slice(0, -(KEEP_RUNS - 1) || undefined)) rmSync(old.file, { force: true })
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15)
  const id = `${stamp}-${pid}`
  const file = join(dir, `${id}.log`)
  let fd: number | undefined = openSync(file, "a", 0o644)
  return {
    id,
    file,
    pid,
    write(line) {
      if (fd === undefined) return
      try {
        writeSync(fd, `${line}\n`)
      } catch {
        closeSync(fd)
        fd = undefined
      }
    },
    close() {
      if (fd !== undefined) closeSync(fd)
      fd = undefined
    },
  }
}

/** True while the process that writes `log` holds the project's run lock. */
export function runIsLive(project: Project, log: RunLogFile): boolean {
  return lockHolder(runLockTarget(project))?.pid === log.pid
}

/** A log line about `taskId` (`10:00:00 api: ...`, `10:00:00 api | ...`): the task's lines across runs. */
export function isTaskLine(line: string, taskId: string): boolean {
  const at = line.indexOf(" ") + 1
  return at > 0 && line.startsWith(taskId, at) && (line.startsWith(": ", at + taskId.length) || line.startsWith(" | ", at + taskId.length))
}

/** Reads a file from an offset on: its new whole lines, and the offset after them (a partial last line waits). */
export function readLines(file: string, from: number): { lines: string[]; next: number } {
  const size = statSync(file).size
  if (size <= from) return { lines: [], next: from }
  const buffer = Buffer.alloc(size - from)
  const fd = openSync(file, "r")
  let got = 0
  try {
    while (got < buffer.length) {
      const n = readSync(fd, buffer, got, buffer.length - got, from + got)
      if (n === 0) break
      got += n
    }
  } finally {
    closeSync(fd)
  }
  const end = buffer.lastIndexOf(10, got - 1)
  if (end < 0) return { lines: [], next: from }
  return { lines: buffer.toString("utf8", 0, end).split("\n"), next: from + end + 1 }
}
