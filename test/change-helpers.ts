// Helpers of the tests of commands that change tasks.yaml: exact results, untouched files, timestamps.
import { expect } from "bun:test"
import { readFileSync, statSync } from "node:fs"
import { flow, type TempDir } from "./helpers"

/** `2026-11-23T09:15:02Z`: ISO 8601, UTC, to the second. */
export const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/

/** Replaces every timestamp in `text` (they change each run) with <now>, after checking their shape. */
export function stamped(text: string): string {
  return text.replace(/(started_at|completed_at): ([^\s,}]+)/g, (_, key: string, value: string) => {
    expect(value).toMatch(STAMP)
    return `${key}: <now>`
  })
}

/** Runs `flow <args>`, expects exactly this result, and returns tasks.yaml afterwards. */
export async function run(
  dir: TempDir,
  args: string[],
  expected: { code?: number; stdout: string; stderr?: string },
  env?: Record<string, string>,
): Promise<string> {
  expect(await flow(dir.path, args, env && { env })).toEqual({ code: expected.code ?? 0, stdout: expected.stdout, stderr: expected.stderr ?? "" })
  return dir.read("tasks.yaml")
}

/** Runs `flow <args>` and expects `code`, no stdout, this stderr, and tasks.yaml byte for byte with the same mtime. */
export async function refused(dir: TempDir, args: string[], code: number, stderr: string): Promise<void> {
  await unchanged(dir, async () => expect(await flow(dir.path, args)).toEqual({ code, stdout: "", stderr }))
}

/** Runs `fn` and expects tasks.yaml untouched: the same bytes and the same mtime. */
export async function unchanged(dir: TempDir, fn: () => Promise<void>): Promise<void> {
  const before = readFileSync(dir.file("tasks.yaml"))
  const mtime = statSync(dir.file("tasks.yaml")).mtimeMs
  await fn()
  expect(readFileSync(dir.file("tasks.yaml"))).toEqual(before)
  expect(statSync(dir.file("tasks.yaml")).mtimeMs).toBe(mtime)
}
