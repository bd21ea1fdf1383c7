// Which `flow view` serves the project now: `.flow/view.json` names its address (never its token) and its
// process, so that other commands (a run's notifications, docs/NOTIFY.md) can link to the inspector. Written
// when a view starts, removed when it stops; a record whose process is gone is a killed view's and is ignored.
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { isRecordedProcessGone, processStartTime, bootId } from "../cli/pid"
import { writeFileAtomic } from "../store/atomic-write"
import { ensureStateDir } from "../store/valid-cache"

type Serving = { address: string; pid: number; start?: string; boot?: string }

function servingFile(stateDir: string): string {
  return join(stateDir, "view.json")
}

/** Records that this process serves the inspector at `address`; returns what removes the record (if still ours). */
export function recordServing(stateDir: string, address: string): () => void {
  const file = servingFile(stateDir)
  const record: Serving = { address, pid: process.pid, start: processStartTime(process.pid), boot: bootId() }
  try {
    ensureStateDir(stateDir)
    writeFileAtomic(file, `${JSON.stringify(record)}\n`)
  } catch {
    return () => {} // a read-only .flow costs the links, never the view
  }
  return () => {
    if (readServing(stateDir)?.pid === process.pid) rmSync(file, { force: true })
  }
}

/** The address of the inspector a live `flow view` serves for the project, or undefined. */
export function servingAddress(stateDir: string): string | undefined {
  const record = readServing(stateDir)
  if (!record || isRecordedProcessGone(record.pid, record.start, record.boot)) return undefined
  return record.address
}

function readServing(stateDir: string): Serving | undefined {
  try {
    const data = JSON.parse(readFileSync(servingFile(stateDir), "utf8")) as Partial<Serving>
    return typeof data.address === "string" && /^http:\/\/127\.0\.0\.1:\d+\/$/.test(data.address) && typeof data.pid === "number"
      ? (data as Serving)
      : undefined
  } catch {
    return undefined
  }
}
