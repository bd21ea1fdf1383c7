// The ways in, end to end from one host release binary built once here (`scripts/release.ts --only <host>`;
// the cross-builds of `npm run release` are not part of the tests): the binary under a minimal environment,
// the npm packages packed and installed globally from their tarballs, and install.sh from a loopback server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pkg from "../package.json" with { type: "json" }
import { NPM_NAME, npmPackages } from "../scripts/npm-packages"
import { releaseName } from "../scripts/release"
import { hostTarget } from "../lib/cli/version"
import { ROOT } from "./helpers"

const target = hostTarget()
const name = releaseName(pkg.version, target)
// Made in beforeAll, so that a skipped run (FLOW_BIN) leaves no folder behind.
let work = ""
let release = ""
let binary = ""
const PATH = "/usr/local/bin:/usr/bin:/bin"

type Out = { code: number; stdout: string; stderr: string }
async function exec(argv: string[], cwd: string, env: Record<string, string>, stdin?: string): Promise<Out> {
  const proc = Bun.spawn(argv, { cwd, env, stdin: stdin === undefined ? "ignore" : new Blob([stdin]), stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}
const folder = (label: string) => mkdtempSync(join(work, `${label}-`))
const npmEnv = () => ({
  PATH: `${process.env.PATH}`,
  HOME: join(work, "npm-home"),
  npm_config_cache: join(work, "npm-cache"),
  npm_config_update_notifier: "false",
})
const VERSION_LINE = new RegExp(`^flow ${pkg.version.replaceAll(".", "\\.")} \\(commit [0-9a-f]{12}(-dirty)?, ${target}\\)\\n$`)

// It builds its own binary: the e2e pass against dist/flow (FLOW_BIN) would only build and test it again.
describe.skipIf(Boolean(process.env.FLOW_BIN))("release", () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "flow-release-"))
    release = join(work, "release")
    binary = join(release, name)
    const built = await exec([process.execPath, "scripts/release.ts", "--only", target, "--out", release], ROOT, process.env as Record<string, string>)
    expect({ code: built.code, stderr: built.stderr }).toEqual({ code: 0, stderr: "" })
  })
  afterAll(() => rmSync(work, { recursive: true, force: true }))

  test("the release folder holds flow-<version>-<os>-<arch> and a SHA256SUMS line that matches it", () => {
    expect(readdirSync(release).sort()).toEqual(["SHA256SUMS", name])
    const digest = createHash("sha256").update(readFileSync(binary)).digest("hex")
    expect(readFileSync(join(release, "SHA256SUMS"), "utf8")).toBe(`${digest}  ${name}\n`)
  })

  test("the binary runs --version and flow demo --yes from an empty folder with only PATH and HOME set", async () => {
    const home = folder("home")
    const empty = folder("empty")
    const env = { PATH, HOME: home }
    const version = await exec(["/usr/bin/env", "-i", `PATH=${PATH}`, `HOME=${home}`, binary, "--version"], empty, env)
    expect({ ...version, stdout: VERSION_LINE.test(version.stdout) ? "matches" : version.stdout }).toEqual({ code: 0, stdout: "matches", stderr: "" })
    const demo = await exec(["/usr/bin/env", "-i", `PATH=${PATH}`, `HOME=${home}`, binary, "demo", "--yes"], empty, env)
    expect({ code: demo.code, stderr: demo.stderr }).toEqual({ code: 0, stderr: "" })
    expect(demo.stdout).toContain(`The demo project is in ${join(empty, "flow-demo")}`)
    const list = await exec([binary, "list", "--json"], join(empty, "flow-demo"), env)
    const statuses = (JSON.parse(list.stdout) as { phases: { tasks: { status: string }[] }[] }).phases.flatMap((p) => p.tasks.map((t) => t.status))
    expect(new Set(statuses)).toEqual(new Set(["done"]))
  })

  // Packing (gzip of a 120 MB executable) and installing take most of a minute each on a busy machine: two tests.
  let tarballs = ""
  test("npm pack makes a tarball of the main package and of this platform's", async () => {
    const packages = npmPackages(release, join(work, "npm"))
    expect(packages.map((p) => p.split("/").at(-1))).toEqual([`${NPM_NAME}-${target}`, NPM_NAME])
    tarballs = folder("tarballs")
    for (const dir of packages) {
      const packed = await exec(["npm", "pack", "--pack-destination", tarballs, dir], work, npmEnv())
      // npm pack lists the files on stderr: only a failure's stderr is worth showing.
      expect({ code: packed.code, stderr: packed.code ? packed.stderr : "" }).toEqual({ code: 0, stderr: "" })
    }
    expect(readdirSync(tarballs).sort()).toEqual([`${NPM_NAME}-${pkg.version}.tgz`, `${NPM_NAME}-${target}-${pkg.version}.tgz`])
  })

  test("the tarballs installed with npm install -g --prefix, offline, give a working flow", async () => {
    const prefix = folder("prefix")
    // The platform package's tarball beside the main one: npm resolves the optional dependency to it, offline.
    const installed = await exec(
      ["npm", "install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", ...readdirSync(tarballs).map((t) => join(tarballs, t))],
      work,
      npmEnv(),
    )
    expect({ code: installed.code, stderr: installed.code ? installed.stderr : "" }).toEqual({ code: 0, stderr: "" })
    const version = await exec([join(prefix, "bin", "flow"), "--version"], folder("npm-run"), npmEnv())
    expect({ ...version, stdout: VERSION_LINE.test(version.stdout) ? "matches" : version.stdout }).toEqual({ code: 0, stdout: "matches", stderr: "" })
    const bad = await exec([join(prefix, "bin", "flow"), "no-such-command"], folder("npm-run"), npmEnv())
    expect({ code: bad.code, stderr: bad.stderr.split("\n")[0] }).toEqual({ code: 2, stderr: "error: unknown command 'no-such-command'" })
  })

  /** Serves `files` on loopback (port 0); what install.sh downloads from. */
  function serve(files: Record<string, Uint8Array | string>) {
    return Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) => {
        const file = files[new URL(req.url).pathname.slice(1)]
        return file === undefined ? new Response("not found", { status: 404 }) : new Response(file)
      },
    })
  }

  test("install.sh installs from a loopback server into --prefix, and refuses a binary whose checksum does not match", async () => {
    const bytes = new Uint8Array(readFileSync(binary))
    const sums = readFileSync(join(release, "SHA256SUMS"), "utf8")
    const home = folder("install-home")
    const run = (base: string, prefix: string) =>
      exec(["sh", join(ROOT, "install.sh"), "--prefix", prefix], home, { PATH, HOME: home, FLOW_DOWNLOAD_BASE: base })
    {
      using server = serve({ SHA256SUMS: sums, [name]: bytes })
      const prefix = join(folder("good"), "tools")
      const r = await run(server.url.href, prefix)
      expect(r).toEqual({
        code: 0,
        stderr: "",
        stdout: `installed ${name} as ${prefix}/bin/flow\nnote: ${prefix}/bin is not on your PATH; add it, for example: export PATH="${prefix}/bin:$PATH"\n`,
      })
      const version = await exec([join(prefix, "bin", "flow"), "--version"], home, { PATH, HOME: home })
      expect(VERSION_LINE.test(version.stdout)).toBe(true)
    }
    {
      const tampered = bytes.slice()
      tampered[tampered.length - 1] ^= 1
      using server = serve({ SHA256SUMS: sums, [name]: tampered })
      const prefix = join(folder("bad"), "tools")
      const r = await run(server.url.href, prefix)
      const actual = createHash("sha256").update(tampered).digest("hex")
      expect(r).toEqual({
        code: 1,
        stdout: "",
        stderr: `error: checksum mismatch for ${name}: SHA256SUMS says ${sums.slice(0, 64)}, the download is ${actual}\nhint: nothing was installed; try again, and report it if it persists\n`,
      })
      expect(existsSync(prefix)).toBe(false)
    }
    {
      using server = serve({ SHA256SUMS: sums.replace(target, "plan9-mips") })
      const r = await run(server.url.href, join(folder("none"), "tools"))
      expect({ code: r.code, stderr: r.stderr.split("\n")[0] }).toEqual({
        code: 1,
        stderr: `error: the release at ${server.url.href.replace(/\/$/, "")} has no flow for ${target}`,
      })
    }
  })
})
