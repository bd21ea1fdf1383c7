// What each command of a compiled flow loads before it runs, read from the module graph of its build (Bun's
// metafile, `buildBinary({ metafile })` in scripts/build.ts). The binary is split into chunks (--splitting):
// a process loads the entry chunk and every chunk it imports statically; a command adds the chunk flow.ts's
// table imports for it, and that chunk's static imports. What a command imports dynamically later (the YAML
// editor when a write edits tasks.yaml) is not start-up, and is not listed.
// Usage: bun scripts/startup-modules.ts [command ...]   (builds into a temp folder and prints each list)
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildBinary } from "./build"

type Output = { inputs: Record<string, unknown>; imports?: { path: string; kind: string; external?: boolean }[]; entryPoint?: string }
type Input = { imports?: { path: string; kind: string; external?: boolean; entryPoint?: string; original?: string }[] }
export type Metafile = { inputs: Record<string, Input>; outputs: Record<string, Output> }

/** The module file each command's table entry in flow.ts imports; `--version` is flow.ts alone. */
export const COMMAND_MODULES: Record<string, string | undefined> = {
  "--version": undefined,
  list: "commands/list.ts",
  show: "commands/show.ts",
  next: "commands/next.ts",
  done: "commands/status.ts",
  note: "commands/note.ts",
}

/** The source modules (repository paths, node_modules included) and runtime modules (node:fs, bun:sqlite) loaded. */
export function startupModules(meta: Metafile, commandModule: string | undefined): { sources: string[]; runtime: string[] } {
  // The chunk a module starts: its own with --splitting, else (one file) the chunk that holds it.
  const byEntry = (entry: string) => {
    const keys = Object.keys(meta.outputs)
    const key = keys.find((k) => meta.outputs[k].entryPoint === entry) ?? keys.find((k) => entry in meta.outputs[k].inputs)
    if (!key) throw new Error(`the build holds no module ${entry}`)
    return key
  }
  const chunks = new Set<string>()
  const runtime = new Set<string>()
  const visit = (key: string) => {
    if (chunks.has(key)) return
    chunks.add(key)
    for (const i of meta.outputs[key].imports ?? []) {
      if (i.kind !== "import-statement") continue
      const target = resolveChunk(meta, key, i.path)
      if (target) visit(target)
    }
  }
  visit(byEntry("flow.ts"))
  if (commandModule) visit(byEntry(commandModule))
  const sources = new Set<string>()
  for (const c of chunks) for (const input of Object.keys(meta.outputs[c].inputs)) sources.add(input)
  // The runtime's own modules are external to the bundle: the outputs do not list them, their importers do.
  for (const s of sources)
    for (const i of meta.inputs[s]?.imports ?? []) if (i.external && i.kind === "import-statement" && !i.entryPoint) runtime.add(i.original ?? i.path)
  return { sources: [...sources].sort(), runtime: [...runtime].sort() }
}

/** The npm package a source module belongs to ("@ark/schema", "yaml"); undefined for flow's own modules. */
export function packageOf(source: string): string | undefined {
  const rest = source.split("node_modules/")[1]
  if (!rest) return undefined
  const parts = rest.split("/")
  return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]
}

/** The output key an import path of chunk `from` names (chunks import each other as "./flow-abc123.js"). */
function resolveChunk(meta: Metafile, from: string, path: string): string | undefined {
  if (meta.outputs[path]) return path
  const dir = from.slice(0, from.lastIndexOf("/") + 1)
  const joined = `./${join(dir, path)}`
  return meta.outputs[joined] ? joined : undefined
}

/** Builds flow like `npm run build` into a temp folder and returns its module graph. */
export async function buildGraph(): Promise<Metafile> {
  const dir = mkdtempSync(join(tmpdir(), "flow-startup-"))
  try {
    const metafile = join(dir, "meta.json")
    await buildBinary({ outfile: join(dir, "flow"), metafile })
    return JSON.parse(readFileSync(metafile, "utf8")) as Metafile
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const meta = await buildGraph()
  const wanted = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(COMMAND_MODULES)
  for (const name of wanted) {
    if (!(name in COMMAND_MODULES)) throw new Error(`unknown command '${name}': one of ${Object.keys(COMMAND_MODULES).join(", ")}`)
    const { sources, runtime } = startupModules(meta, COMMAND_MODULES[name])
    const packages = [...new Set(sources.map(packageOf).filter(Boolean))].join(", ") || "none"
    const own = sources.filter((s) => !packageOf(s)).length
    console.log(`flow ${name}: ${own} flow modules; packages: ${packages}; runtime: ${runtime.join(", ") || "none"}`)
    if (process.env.VERBOSE) for (const s of sources) console.log(`  ${s}`)
  }
}
