// The npm packages, from the binaries of a release folder: a main package (NPM_NAME) whose `flow` is a small
// Node launcher (npm/launcher.cjs), and one package per platform carrying its executable, with os/cpu (and
// libc) fields so npm installs only the matching one of the main package's optionalDependencies.
// Usage: bun scripts/npm-packages.ts [<release dir> [<out dir>]]   (defaults: dist/release, dist/npm)
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import pkg from "../package.json" with { type: "json" }
import { releaseName, TARGETS } from "./release"

/** The name on the npm registry (free when chosen: `npm view prd-flow` answered E404). */
export const NPM_NAME = "prd-flow"

const ROOT = resolve(import.meta.dir, "..")

function platformFields(target: string): Record<string, string[]> {
  const [os, cpu, libc] = target.split("-")
  const npmOs = os === "windows" ? "win32" : os
  return { os: [npmOs], cpu: [cpu], ...(os === "linux" ? { libc: [libc === "musl" ? "musl" : "glibc"] } : {}) }
}

/** Writes the packages of every target found in `releaseDir`; returns the package folders, platforms first. */
export function npmPackages(releaseDir: string, outDir: string, version = pkg.version): string[] {
  rmSync(outDir, { recursive: true, force: true })
  const common = { version, description: pkg.description }
  const folders: string[] = []
  const optional: Record<string, string> = {}
  for (const target of TARGETS) {
    const binary = join(releaseDir, releaseName(version, target))
    if (!existsSync(binary)) continue
    const name = `${NPM_NAME}-${target}`
    const dir = join(outDir, name)
    const exe = `flow${target.startsWith("windows-") ? ".exe" : ""}`
    mkdirSync(join(dir, "bin"), { recursive: true })
    copyFileSync(binary, join(dir, "bin", exe))
    chmodSync(join(dir, "bin", exe), 0o755)
    writeFileSync(
      join(dir, "package.json"),
      `${JSON.stringify({ name, ...common, description: `The flow executable for ${target} (installed by ${NPM_NAME})`, ...platformFields(target), files: ["bin"], preferUnplugged: true }, null, 2)}\n`,
    )
    writeFileSync(
      join(dir, "README.md"),
      `# ${name}\n\nThe \`flow\` executable for ${target}. Install \`${NPM_NAME}\` instead: it picks this package on this platform.\n`,
    )
    optional[name] = version
    folders.push(dir)
  }
  if (folders.length === 0) throw new Error(`no release binaries of version ${version} in ${releaseDir}: run 'npm run release' first`)
  const main = join(outDir, NPM_NAME)
  mkdirSync(join(main, "bin"), { recursive: true })
  copyFileSync(join(ROOT, "npm", "launcher.cjs"), join(main, "bin", "flow.cjs"))
  chmodSync(join(main, "bin", "flow.cjs"), 0o755)
  writeFileSync(
    join(main, "package.json"),
    `${JSON.stringify(
      {
        name: NPM_NAME,
        ...common,
        bin: { flow: "bin/flow.cjs" },
        files: ["bin"],
        engines: { node: ">=18" },
        optionalDependencies: optional,
      },
      null,
      2,
    )}\n`,
  )
  copyFileSync(join(ROOT, "README.md"), join(main, "README.md"))
  return [...folders, main]
}

if (import.meta.main) {
  const folders = npmPackages(resolve(process.argv[2] ?? "dist/release"), resolve(process.argv[3] ?? "dist/npm"))
  console.log(folders.join("\n"))
}
