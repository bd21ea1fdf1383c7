// The Node.js the README promises: every package npm installs must accept it, or `npm ci` warns EBADENGINE
// (as chokidar 6 did on Node 20). Read from package-lock.json, so a dependency update that raises the floor
// fails here, before anyone's Quick start prints a warning.
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { ROOT } from "./helpers"

type Version = [number, number, number]

/** The `engines.node` ranges npm uses: `||` alternatives of space-separated comparators (>=, >, <=, <, =, ^, ~, x). */
function satisfies(version: Version, range: string): boolean {
  return range.split("||").some((alternative) =>
    alternative
      .trim()
      .replace(/(>=|<=|[<>=^~])\s+/g, "$1")
      .split(/\s+/)
      .filter(Boolean)
      .every((comparator) => {
        const m = comparator.match(/^(>=|<=|[<>=^~])?v?(\d+|[x*])(?:\.(\d+|[x*]))?(?:\.(\d+|[x*]))?$/)
        if (!m) throw new Error(`engines range '${range}': '${comparator}' is not understood; extend test/engines.test.ts`)
        const parts = [m[2], m[3], m[4]]
        const given = parts.findIndex((p) => p === undefined || p === "x" || p === "*")
        const exact = given === -1 ? 3 : given
        const low = parts.map((p, i) => (i < exact ? Number(p) : 0)) as Version
        const c = compare(version, low)
        switch (m[1] ?? "=") {
          case ">=":
            return c >= 0
          case ">":
            return c > 0
          case "<=":
            return c <= 0
          case "<":
            return c < 0
          case "^": {
            const lead = low.findIndex((n, i) => n !== 0 || i === exact - 1)
            return c >= 0 && version.slice(0, lead + 1).every((n, i) => n === low[i])
          }
          case "~":
            return c >= 0 && version.slice(0, Math.min(2, exact)).every((n, i) => n === low[i])
          default:
            return version.slice(0, exact).every((n, i) => n === low[i])
        }
      }),
  )
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i]
  return 0
}

function parse(text: string): Version {
  const [major, minor = 0, patch = 0] = text.replace(/^v/, "").split(".").map(Number)
  return [major, minor, patch]
}

test("the range reader agrees with npm on the forms package-lock.json holds", () => {
  const cases: [string, string, boolean][] = [
    ["20.19.0", ">= 20.19.0", true],
    ["20.18.9", ">=20.19", false],
    ["22.0.0", ">=18.0.0", true],
    ["20.0.0", "^20.19.0 || >=22.12.0", false],
    ["21.0.0", "^20.19.0 || >=22.12.0", false],
    ["22.12.0", "^20.19.0 || >=22.12.0", true],
    ["20.20.2", "^20.19.0 || >=22.12.0", true],
    ["14.6.0", ">= 14.6", true],
    ["18.0.0", "18.x", true],
    ["19.0.0", "18.x", false],
    ["18.3.0", "~18.2", false],
    ["18.2.5", "~18.2", true],
    ["0.11.0", ">= 0.8 < 0.12", true],
    ["20.0.0", "*", true],
  ]
  expect(cases.map(([v, r]) => satisfies(parse(v), r))).toEqual(cases.map(([, , ok]) => ok))
})

test("every package npm installs accepts the Node.js the README names, and the node on this machine", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const named = readme.match(/Node\.js (\d+\.\d+(?:\.\d+)?) or later/)
  if (!named) throw new Error("README.md must name the Node.js it needs as 'Node.js <major>.<minor> or later'")
  const versions = [named[1]]
  // The Quick start runs on the machine's node, not on the Bun that runs this test.
  const node = Bun.which("node")
  if (node) versions.push(Bun.spawnSync([node, "--version"]).stdout.toString().trim())
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, { engines?: { node?: string } | string[] }>
  }
  const refused: string[] = []
  for (const version of versions) {
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node
      if (range !== undefined && !satisfies(parse(version), range)) refused.push(`${path || "(root)"} wants node ${range}, not ${version}`)
    }
  }
  expect(refused).toEqual([])
})
