// The folder tree is the architecture: lib/'s folders in one declared order, every import pointing down
// (to an earlier folder) or sideways (within its own folder), and no import cycle anywhere. docs/ARCHITECTURE.md
// explains the order; this test keeps the code to it.
import { expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { ROOT } from "./helpers"

/** lib/'s folders, lowest first: a folder may import only itself and the folders before it. */
export const LAYERS = [
  "cli",
  "model",
  "graph",
  "terminal",
  "validation",
  "config",
  "store",
  "state",
  "git",
  "worktree",
  "queue-batch",
  "landing",
  "agents",
  "sandbox",
  "budget",
  "prompts",
  "markdown",
  "prd",
  "plan",
  "run",
  "tui",
  "ops",
  "dashboard",
  "view",
  "notify",
  "mcp",
] as const

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`
    if (statSync(join(ROOT, rel)).isDirectory()) return name === "templates" ? [] : sources(rel)
    return /\.(ts|js)$/.test(name) && !name.endsWith(".d.ts") ? [rel] : []
  })
}

// Static, dynamic and type-position imports and re-exports: a type import ties modules as much as a value one.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g

function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8")
  const out: string[] = []
  for (const m of text.matchAll(SPECIFIER)) {
    const base = join(dirname(file), m[1])
    const target = [base, `${base}.ts`, `${base}.js`, `${base}/index.ts`].find((c) => existsSync(join(ROOT, c)) && statSync(join(ROOT, c)).isFile())
    if (target && /\.(ts|js)$/.test(target)) out.push(target)
  }
  return out
}

const files = ["flow.ts", ...sources("commands"), ...sources("lib"), ...sources("web")]
const graph = new Map(files.map((f) => [f, importsOf(f)]))

/** The layer of a lib/ file, -1 outside lib/ folders. */
function layerOf(file: string): number {
  const m = /^lib\/([^/]+)\//.exec(file)
  return m ? LAYERS.indexOf(m[1] as (typeof LAYERS)[number]) : -1
}

test("every file in lib/ lives in a declared folder", () => {
  const stray = files.filter((f) => f.startsWith("lib/") && layerOf(f) < 0)
  expect(stray).toEqual([])
})

test("imports point down or sideways: lib/ never imports commands/, web/ or a later folder", () => {
  const wrong: string[] = []
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (from.startsWith("lib/") && (to.startsWith("commands/") || to === "flow.ts")) wrong.push(`${from} → ${to}`)
      if (from.startsWith("commands/") && to === "flow.ts") wrong.push(`${from} → ${to}`)
      if (from.startsWith("lib/") && layerOf(to) > layerOf(from)) wrong.push(`${from} → ${to} (${LAYERS[layerOf(from)]} may not import ${LAYERS[layerOf(to)]})`)
    }
  }
  expect(wrong).toEqual([])
})

test("no import cycles", () => {
  const cycles: string[] = []
  const state = new Map<string, "open" | "closed">()
  const stack: string[] = []
  const visit = (f: string) => {
    state.set(f, "open")
    stack.push(f)
    for (const to of graph.get(f) ?? []) {
      if (state.get(to) === "open") cycles.push([...stack.slice(stack.indexOf(to)), to].map((x) => relative(".", x)).join(" → "))
      else if (!state.has(to)) visit(to)
    }
    stack.pop()
    state.set(f, "closed")
  }
  for (const f of graph.keys()) if (!state.has(f)) visit(f)
  expect(cycles).toEqual([])
})

/**
 * The store seam's backends (docs/ARCHITECTURE.md, "The store seam"): each is reached only from inside itself,
 * from the other backend of its kind (the shared run state uses the shared store's connection), from the
 * seam's factories, and from the commands that move a project between backends; never across kinds.
 */
const BACKENDS = { file: ["lib/store/file/", "lib/state/sqlite/"], postgres: ["lib/store/postgres/", "lib/state/postgres/"] } as const
const SEAM = ["lib/store/open.ts", "lib/store/setting.ts", "lib/state/state.ts", "lib/ops/share.ts"]

test("a backend is reached only through the seam, and never from the other kind of backend", () => {
  const kindOf = (f: string) => (Object.keys(BACKENDS) as (keyof typeof BACKENDS)[]).find((k) => BACKENDS[k].some((dir) => f.startsWith(dir)))
  const wrong: string[] = []
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const [a, b] = [kindOf(from), kindOf(to)]
      if (b === undefined || a === b || SEAM.includes(from)) continue
      wrong.push(`${from} → ${to}`)
    }
  }
  expect(wrong).toEqual([])
})
