// What a compiled flow loads before a command runs (docs/PERFORMANCE.md, "Start-up"): agents call these
// commands many times a minute, and each must not pay for the libraries only other commands use. Read from
// the module graph of a real build (scripts/build.ts, the flags of dist/flow), chunk by chunk.
import { beforeAll, describe, expect, test } from "bun:test"
import { buildGraph, COMMAND_MODULES, packageOf, startupModules, type Metafile } from "../scripts/startup-modules"

// The YAML editor, the schema library, the MCP SDK, the HTTP server, the graph layout, the git client (with
// debug, node:child_process and node:events; flow show's one `git diff` runs git directly).
const HEAVY = ["yaml", "arktype", "arkregex", "@ark/schema", "@ark/util", "@modelcontextprotocol/sdk", "hono", "elkjs", "simple-git", "debug"]
// Runtime modules these commands leave until they need them: node:util's parseArgs (about 225 page faults;
// lib/cli/args.ts parses plain arguments itself), bun:sqlite (only once state.db is known to exist).
const LATE_RUNTIME = ["node:util", "node:child_process", "node:events", "bun:sqlite"]

let meta: Metafile

describe("start-up modules of the compiled binary", () => {
  beforeAll(async () => {
    meta = await buildGraph()
  })

  for (const [command, module] of Object.entries(COMMAND_MODULES)) {
    test(`flow ${command} loads none of ${HEAVY.join(", ")} before it runs`, () => {
      const { sources } = startupModules(meta, module)
      // Not vacuous: the entry and the command's own module are in the list.
      expect(sources).toContain("flow.ts")
      if (module) expect(sources).toContain(module)
      const heavy = sources.filter((s) => HEAVY.includes(packageOf(s) ?? ""))
      expect(heavy).toEqual([])
    })

    test(`flow ${command} loads none of ${LATE_RUNTIME.join(", ")} before it runs`, () => {
      const { runtime } = startupModules(meta, module)
      // Not vacuous: a command reads its files with node:fs (flow --version loads no runtime module at all).
      if (module) expect(runtime).toContain("node:fs")
      expect(runtime.filter((r) => LATE_RUNTIME.includes(r))).toEqual([])
    })
  }

  test("flow --version loads only the entry and what it prints: no node:fs, node:util, node:path, picocolors or tasks.yaml code", () => {
    const { sources, runtime } = startupModules(meta, undefined)
    expect(sources.filter((s) => s.includes("node_modules/"))).toEqual([])
    // flow.yaml (for `flow help config`) is imported when asked for, not in the entry chunk.
    expect(sources.filter((s) => s.startsWith("lib/") && !s.startsWith("lib/cli/"))).toEqual([])
    // node:fs neither (about 125 page faults): it prints through Bun's own writer (lib/cli/context.ts, `only`).
    expect(runtime).toEqual([])
  })

  test("the commands that load them still do: the check sees a package a chunk holds", () => {
    const packages = (module: string) => new Set(startupModules(meta, module).sources.map(packageOf))
    expect(packages("commands/view.ts").has("hono")).toBe(true)
    expect(packages("commands/validate.ts").has("yaml")).toBe(true)
    expect(packages("commands/validate.ts").has("arktype")).toBe(true)
  })
})
