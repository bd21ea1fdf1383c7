// The built-in offline agent `script`: it runs the fenced ```sh (or ```bash) blocks of a task's or step's
// instructions in the worktree, one after another, and stops at the first that fails. No network, no AI:
// it makes the demo and the tests real.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { spawnGroup } from "../proc"

/**
 * The shell blocks of a Markdown text, in order: the plain ones (```sh), or with `label` only those
 * labelled so (```sh fix: what the script agent runs when its merge is sent back, docs/RUN.md).
 */
export function shellBlocks(markdown: string, label?: string): string[] {
  const blocks: string[] = []
  const fence = /^([ \t]*)(`{3,}|~{3,})[ \t]*(sh|bash|shell)(?:[ \t]+([A-Za-z][\w-]*))?[ \t]*\r?\n([\s\S]*?)^\1\2[ \t]*$/gm
  for (const m of markdown.matchAll(fence)) if (m[4] === label) blocks.push(m[5])
  return blocks
}

export type ScriptResult = { code: number; output: string; blocks: number }

/** Runs the blocks with bash -e in `cwd`; output lines go to `onLine` as they come. */
export async function runScript(
  blocks: string[],
  cwd: string,
  env: Record<string, string | undefined>,
  onLine: (line: string) => void,
  signal?: AbortSignal,
): Promise<ScriptResult> {
  const dir = mkdtempSync(join(tmpdir(), "flow-script-"))
  const tail: string[] = []
  try {
    for (const [i, block] of blocks.entries()) {
      const file = join(dir, `block-${i + 1}.sh`)
      writeFileSync(file, block)
      const proc = spawnGroup(["bash", "-e", "-o", "pipefail", file], { cwd, env, signal })
      const collect = async (stream: ReadableStream<Uint8Array>) => {
        for await (const line of lines(stream)) {
          onLine(line)
          tail.push(line)
          if (tail.length > 40) tail.shift()
        }
      }
      await Promise.all([collect(proc.stdout), collect(proc.stderr)])
      const code = await proc.exited
      if (code !== 0) return { code, output: tail.join("\n"), blocks: i + 1 }
    }
    return { code: 0, output: tail.join("\n"), blocks: blocks.length }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The lines of a byte stream, as they arrive. */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true })
    let nl = buffer.indexOf("\n")
    while (nl >= 0) {
      yield buffer.slice(0, nl).replace(/\r$/, "")
      buffer = buffer.slice(nl + 1)
      nl = buffer.indexOf("\n")
    }
  }
  buffer += decoder.decode()
  if (buffer) yield buffer
}
