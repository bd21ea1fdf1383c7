// The built-in offline agent `script`: it runs the fenced ```sh (or ```bash) blocks of a task's or step's
// instructions in the worktree, one after another, and stops at the first that fails. No network, no AI:
// it makes the demo and the tests real.
import { existsSync, mkdirSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { lines, spawnGroup } from "../cli/proc"

export { shellBlocks } from "../model/shell-blocks"

export type ScriptResult = { code: number; output: string; blocks: number }

export type ScriptOptions = {
  signal?: AbortSignal
  /**
   * A file the script's shell creates the moment its last block exits 0, with a builtin (no fork): the
   * script agent's `flow done`. A run killed after the script's work but before flow saw its exit finds it
   * and lands the task instead of running the script again (docs/RUN.md, kill points).
   */
  doneMark?: string
  /** called with each started process group (the reaper records it) */
  onGroup?: (pid: number, exited: Promise<number>) => void
  /** the sandbox each block's shell runs in (lib/sandbox/sandbox.ts): its argv and environment, wrapped */
  wrap?: { argv(argv: readonly string[]): string[]; env(env: Record<string, string | undefined>): Record<string, string | undefined> }
}

/** Larger blocks would exceed the kernel's limit on one argument (128 KB). */
const MAX_BLOCK = 100_000

/** Runs the blocks with bash -e in `cwd`; output lines go to `onLine` as they come. No temp files. */
export async function runScript(
  blocks: string[],
  cwd: string,
  env: Record<string, string | undefined>,
  onLine: (line: string) => void,
  opts: ScriptOptions = {},
): Promise<ScriptResult> {
  const tail: string[] = []
  for (const [i, block] of blocks.entries()) {
    if (block.length > MAX_BLOCK)
      return {
        code: 126,
        output: `block ${i + 1} is larger than ${MAX_BLOCK / 1000} KB: put the script in a file of the repository and run that`,
        blocks: i + 1,
      }
    const last = i === blocks.length - 1 && opts.doneMark !== undefined
    if (last) mkdirSync(join(opts.doneMark!, ".."), { recursive: true })
    // The traps are on the block's first line, so bash's line numbers in errors stay the block's own. A
    // stop (SIGTERM, SIGINT, SIGHUP) must not pass for success: bash runs the EXIT trap then too, with the
    // status of the last command, so those signals exit non-zero first.
    const text = last ? `trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM; trap '[ $? -ne 0 ] || : > "$FLOW_DONE_MARK"' EXIT; ${block}` : block
    const argv = ["bash", "-e", "-o", "pipefail", "-c", text, `block-${i + 1}.sh`]
    const blockEnv = last ? { ...env, FLOW_DONE_MARK: opts.doneMark } : env
    const proc = spawnGroup(opts.wrap ? opts.wrap.argv(argv) : argv, {
      cwd,
      env: opts.wrap ? opts.wrap.env(blockEnv) : blockEnv,
      signal: opts.signal,
    })
    opts.onGroup?.(proc.pid, proc.exited)
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
}

/** Where the script of a task (or of one of its steps) marks its success. */
export function doneMark(stateDir: string, taskId: string, stepId?: string): string {
  return join(stateDir, "finished", stepId === undefined ? taskId : `${taskId}@${stepId}`)
}

/** Every mark of a task (the whole task's and its steps'). */
export function doneMarks(stateDir: string, taskId: string): string[] {
  const dir = join(stateDir, "finished")
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((n) => n === taskId || n.startsWith(`${taskId}@`))
    .map((n) => join(dir, n))
}
