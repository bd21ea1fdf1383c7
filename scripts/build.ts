// Builds flow into one executable: `npm run build` (dist/flow, for this machine) and scripts/release.ts (every
// platform). The git commit and the target are compiled in with --define, for `flow --version`.
import { resolve } from "node:path"
import { check } from "../lib/cli/proc"
import { hostTarget } from "../lib/cli/version"

const ROOT = resolve(import.meta.dir, "..")

/** The commit of the working tree, with "-dirty" when it has uncommitted changes; "unknown" outside git. */
export async function sourceCommit(): Promise<string> {
  try {
    const commit = (await check(["git", "rev-parse", "--short=12", "HEAD"], { cwd: ROOT })).trim()
    const dirty = (await check(["git", "status", "--porcelain", "--untracked-files=no"], { cwd: ROOT })).trim() !== ""
    return dirty ? `${commit}-dirty` : commit
  } catch {
    return "unknown"
  }
}

/**
 * The flags of every flow binary; bench/ compiles its floors with them too. --splitting makes each lazily
 * loaded command its own chunk with its own imports: in one file, Bun hoists every node: and bun: import of
 * every command (node:readline, bun:sql, node:crypto, ...) to the top, and `flow --version` loaded them all
 * (docs/PERFORMANCE.md, "Start-up"). --bytecode covers every chunk.
 */
export const BUILD_FLAGS = ["--compile", "--minify", "--bytecode", "--splitting", "--format=esm"]

/** `target` is a release name (linux-x64-musl, windows-x64, ...); undefined builds for this machine. */
/** metafile: also write Bun's module graph of the build there (test/startup-modules.test.ts reads it). */
export async function buildBinary(opts: { outfile: string; target?: string; commit?: string; metafile?: string }): Promise<void> {
  const commit = opts.commit ?? (await sourceCommit())
  await check(
    [
      process.execPath,
      "build",
      ...BUILD_FLAGS,
      ...(opts.target ? [`--target=bun-${opts.target}`] : []),
      ...(opts.metafile ? [`--metafile=${opts.metafile}`] : []),
      "--define",
      `FLOW_BUILD_COMMIT=${JSON.stringify(commit)}`,
      "--define",
      `FLOW_BUILD_TARGET=${JSON.stringify(opts.target ?? hostTarget())}`,
      "flow.ts",
      "lib/view/layout-worker.ts",
      "--outfile",
      opts.outfile,
    ],
    { cwd: ROOT },
  )
}

if (import.meta.main) {
  const outfile = process.argv[2] ?? "dist/flow"
  await buildBinary({ outfile })
  console.log(`built ${outfile}`)
}
