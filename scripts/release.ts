// `npm run release`: one executable per platform, cross-compiled by `bun build --compile --target` (Bun
// fetches each target's runtime from the npm registry, @oven/bun-<os>-<arch>), named
// flow-<version>-<os>-<arch>[.exe], plus SHA256SUMS in sha256sum's format, in dist/release/.
// `--only <target,...>` builds a subset (tests build the host's only); `--out <dir>` writes elsewhere.
import { createHash } from "node:crypto"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import pkg from "../package.json" with { type: "json" }
import { buildBinary, sourceCommit } from "./build"

export const TARGETS = ["linux-x64", "linux-arm64", "linux-x64-musl", "darwin-x64", "darwin-arm64", "windows-x64"] as const

export function releaseName(version: string, target: string): string {
  return `flow-${version}-${target}${target.startsWith("windows-") ? ".exe" : ""}`
}

/** SHA256SUMS: `<hex>  <file>` per line, what `sha256sum -c` and install.sh read. */
export function sha256sums(dir: string, files: string[]): string {
  return files
    .map(
      (f) =>
        `${createHash("sha256")
          .update(readFileSync(join(dir, f)))
          .digest("hex")}  ${f}\n`,
    )
    .join("")
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { only: { type: "string" }, out: { type: "string" } } })
  const targets = values.only ? values.only.split(",") : [...TARGETS]
  const unknown = targets.filter((t) => !(TARGETS as readonly string[]).includes(t))
  if (unknown.length) throw new Error(`unknown target ${unknown.join(", ")}: use ${TARGETS.join(", ")}`)
  const out = resolve(values.out ?? "dist/release")
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  const commit = await sourceCommit()
  const built: string[] = []
  const failed: string[] = []
  // One at a time: each build takes a core and about 100 MB, and the runtime downloads share a cache.
  for (const target of targets) {
    const name = releaseName(pkg.version, target)
    const started = performance.now()
    try {
      await buildBinary({ target, commit, outfile: join(out, name) })
      built.push(name)
      console.log(`${name}  ${((performance.now() - started) / 1000).toFixed(1)} s`)
    } catch (e) {
      failed.push(target)
      console.error(`${target}: ${(e as Error).message}`)
    }
  }
  writeFileSync(join(out, "SHA256SUMS"), sha256sums(out, built))
  console.log(`${built.length} binaries and SHA256SUMS in ${out}${failed.length ? `; failed: ${failed.join(", ")}` : ""}`)
  if (failed.length) process.exitCode = 1
}
