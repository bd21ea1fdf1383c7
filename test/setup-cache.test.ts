// The fast path of a setup that installs dependencies (docs/RUN.md, "Preparing worktrees"): every worktree's
// install reads the package manager's one shared cache or store, so only the first worktree downloads and
// later ones take the packages from disk. Real package managers against a local registry
// (test/fixtures/npm-registry.ts) that counts the tarballs it serves; a manager that is not installed is skipped.
import { expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startRegistry } from "./fixtures/npm-registry"
import { flow, git, ROOT, tasksYaml, tempRepo } from "./helpers"

const PACKAGES = {
  "flow-fixture-pad": { "1.0.0": "module.exports = (s, n) => String(s).padStart(n, '.')\n" },
  "flow-fixture-greet": { "1.0.0": "module.exports = (name) => 'hello ' + name\n" },
}

type Manager = {
  name: string
  /** makes the lockfile in the person's checkout (with a cache of its own: the shared one stays cold) */
  lock: string[]
  /** the setup command */
  setup: string
  /** the environment that points every install at one shared cache or store under `dir` */
  cacheEnv: (dir: string) => Record<string, string>
}

const MANAGERS: Manager[] = [
  {
    name: "npm",
    lock: ["npm", "install", "--package-lock-only", "--no-audit", "--no-fund"],
    setup: "npm ci --prefer-offline --no-audit --no-fund",
    cacheEnv: (dir) => ({ npm_config_cache: dir }),
  },
  {
    name: "bun",
    lock: [process.execPath, "install", "--lockfile-only"],
    setup: `${process.execPath} install --frozen-lockfile`,
    cacheEnv: (dir) => ({ BUN_INSTALL_CACHE_DIR: dir }),
  },
  {
    name: "pnpm",
    lock: ["pnpm", "install", "--lockfile-only"],
    setup: "pnpm install --frozen-lockfile --prefer-offline",
    cacheEnv: (dir) => ({ npm_config_store_dir: join(dir, "store"), npm_config_cache_dir: join(dir, "cache") }),
  },
]

// pnpm is a devDependency (node_modules/.bin), so that a fresh clone runs this test too: a manager missing
// here fails it, never skips it.
const PATH = `${join(ROOT, "node_modules", ".bin")}:${process.env.PATH}`

for (const m of MANAGERS) {
  test.concurrent(`${m.name}: later worktrees install from the shared cache; only the first downloads`, async () => {
    for (const tool of [m.lock[0], "npm"])
      if (Bun.which(tool, { PATH }) === null) throw new Error(`${tool} is not installed: the test needs it (npm ci installs pnpm)`)
    using registry = startRegistry(PACKAGES)
    const shared = mkdtempSync(join(tmpdir(), `flow-${m.name}-cache-`))
    const own = mkdtempSync(join(tmpdir(), `flow-${m.name}-own-`))
    try {
      const check = "node -e \"console.log(require('flow-fixture-pad')(require('flow-fixture-greet')(process.env.FLOW_TASK_ID), 10))\" > out.txt"
      await using dir = await tempRepo({
        ".gitignore": ".flow/\nnode_modules/\n",
        ".npmrc": `registry=${registry.url}/\n`,
        "package.json": `${JSON.stringify({ name: "app", version: "1.0.0", private: true, dependencies: { "flow-fixture-pad": "1.0.0", "flow-fixture-greet": "1.0.0" } }, null, 2)}\n`,
        "flow.yaml": `setup: { command: "${m.setup}", timeout: 2m }\n`,
        // A chain: each task writes out.txt, and with one agent a task's successor would otherwise start while
        // it waits to land (docs/RUN.md: the agent is free then) and conflict with it.
        "tasks.yaml": tasksYaml(
          ["a", "b", "c"].map((id, i) => ({
            id,
            title: id,
            status: "todo",
            ...(i ? { depends_on: [["a", "b"][i - 1]] } : {}),
            instructions: `\`\`\`sh\n${check}\n\`\`\``,
          })),
        ),
      })
      // Not spawnSync: the registry answers from this process's event loop.
      const locked = Bun.spawn(m.lock, { cwd: dir.path, env: { ...process.env, PATH, ...m.cacheEnv(own) }, stdout: "ignore", stderr: "pipe" })
      const [code, stderr] = await Promise.all([locked.exited, new Response(locked.stderr).text()])
      expect({ code, stderr: code ? stderr : "" }).toEqual({ code: 0, stderr: "" })
      await git(dir.path, ["add", "-A"])
      await git(dir.path, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lockfile"])
      const before = registry.tarballs()
      // One agent, a chain: the worktrees are set up one after another, the first with the shared cache cold.
      const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"], { env: { PATH, ...m.cacheEnv(shared) } })
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
      expect(r.stdout.match(/: setup done after/g)).toHaveLength(3)
      expect(dir.read("out.txt")).toBe("...hello c\n")
      expect(registry.tarballs() - before).toBe(2) // each package once, for the first worktree
    } finally {
      rmSync(shared, { recursive: true, force: true })
      rmSync(own, { recursive: true, force: true })
    }
  })
}
