// Setting up worktrees at the package manager's cost, and the tenth at a fraction of the first's (issue 24):
// `flow run` on ten tasks of a real small Node project (express, dotenv, zod, picocolors and what they pull
// in, from the npm registry), one agent, so the ten setups run one after another, the first with the package
// manager's cache cold and the nine later ones from that one shared cache (docs/RUN.md, "Preparing worktrees").
// Each setup's time is flow's own record of it (the `hook.end` events of .flow/state.db).
// The floor, measured in the same run: `cp -R` of the installed node_modules into a new folder, the least any
// setup must do to put those files in a worktree without links. Per manager: the first setup and the median
// of the later nine, each against the floor; the goal (GOALS) is on the later ones.
// Usage: bun bench/setup.ts   (needs dist/flow: npm run bench builds it; and the npm registry)
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Database } from "bun:sqlite"
import { benchEnv, median, printHeader, printRow, ROOT, type Row } from "./lib"

/**
 * How far above the floor a later setup may be: npm ci unpacks every package from its cache (more than a copy);
 * pnpm and bun link the files from their store or cache.
 */
const GOALS: Record<string, number> = { npm: 10, pnpm: 5, bun: 3 }

const FLOW = join(ROOT, "dist", "flow")
if (!existsSync(FLOW)) throw new Error(`${FLOW} is missing: run 'npm run build' first`)
const TASKS = 10

const DEPENDENCIES = { express: "4.21.2", dotenv: "16.4.7", zod: "3.24.1", picocolors: "1.1.1" }

type Manager = {
  name: string
  /** makes the lockfile, with a cache of its own (the run's shared cache stays cold) */
  lock: string[]
  setup: string
  /** installs once in a checkout (for the floor's node_modules) */
  install: string[]
  cacheEnv: (dir: string) => Record<string, string>
}

const MANAGERS: Manager[] = [
  {
    name: "npm",
    lock: ["npm", "install", "--package-lock-only", "--no-audit", "--no-fund"],
    setup: "npm ci --prefer-offline --no-audit --no-fund",
    install: ["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"],
    cacheEnv: (dir) => ({ npm_config_cache: dir }),
  },
  {
    name: "bun",
    lock: [process.execPath, "install", "--lockfile-only"],
    setup: `${process.execPath} install --frozen-lockfile`,
    install: [process.execPath, "install", "--frozen-lockfile"],
    cacheEnv: (dir) => ({ BUN_INSTALL_CACHE_DIR: dir }),
  },
  {
    name: "pnpm",
    lock: ["pnpm", "install", "--lockfile-only"],
    setup: "pnpm install --frozen-lockfile --prefer-offline",
    install: ["pnpm", "install", "--frozen-lockfile", "--prefer-offline"],
    cacheEnv: (dir) => ({ npm_config_store_dir: join(dir, "store"), npm_config_cache_dir: join(dir, "cache") }),
  },
]

function sh(argv: string[], cwd: string, env: Record<string, string> = {}): void {
  const r = Bun.spawnSync(argv, { cwd, env: { ...benchEnv(), ...env }, stdout: "pipe", stderr: "pipe" })
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} failed (${r.exitCode}):\n${r.stderr.toString().slice(-2000)}`)
}

/** A repository of the small project, its lockfile committed, and ten tasks that load its dependencies. */
function project(m: Manager, scratch: string): string {
  const dir = mkdtempSync(join(tmpdir(), `flow-bench-setup-${m.name}-`))
  const task = (i: number) =>
    `  - id: t${i}\n    title: Task ${i}\n    status: todo\n    instructions: |\n      \`\`\`sh\n      node -e "require('express'); require('zod'); require('dotenv')"\n      \`\`\``
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "app", version: "1.0.0", private: true, dependencies: DEPENDENCIES }, null, 2)}\n`)
  writeFileSync(join(dir, "index.js"), "const express = require('express')\nexpress().listen(Number(process.env.FLOW_PORT ?? 3000))\n")
  writeFileSync(join(dir, ".gitignore"), ".flow/\nnode_modules/\n")
  writeFileSync(join(dir, "flow.yaml"), `setup: { command: "${m.setup}", timeout: 10m }\n`)
  writeFileSync(join(dir, "tasks.yaml"), `tasks:\n${Array.from({ length: TASKS }, (_, i) => task(i)).join("\n")}\n`)
  sh(m.lock, dir, m.cacheEnv(join(scratch, "lock-cache")))
  sh(["git", "init", "-q", "-b", "main"], dir)
  sh(["git", "add", "-A"], dir)
  sh(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "project"], dir)
  return dir
}

/** The ten setups' times in ms, in the order they ran, as flow recorded them. */
function setupTimes(dir: string): number[] {
  const db = new Database(join(dir, ".flow", "state.db"), { readonly: true })
  try {
    const rows = db.query<{ data: string }, []>("SELECT data FROM events WHERE kind = 'hook.end' ORDER BY id").all()
    return rows.map((r) => (JSON.parse(r.data) as { seconds: number; ok: boolean }).seconds * 1000)
  } finally {
    db.close()
  }
}

/** `cp -R` of an installed node_modules into a new folder: the median of 7 after one untimed, in ms. */
function copyFloor(dir: string, m: Manager, cache: string): number {
  sh(m.install, dir, m.cacheEnv(cache))
  const times: number[] = []
  for (let i = 0; i < 8; i++) {
    const to = join(dir, `copy-${i}`)
    const start = performance.now()
    sh(["cp", "-R", join(dir, "node_modules"), to], dir)
    if (i > 0) times.push(performance.now() - start)
    rmSync(to, { recursive: true, force: true })
  }
  return median(times)
}

const rows: Row[] = []
const details: string[] = []
for (const m of MANAGERS) {
  if (!Bun.which(m.lock[0])) {
    details.push(`${m.name}: not installed, skipped`)
    continue
  }
  const scratch = mkdtempSync(join(tmpdir(), `flow-bench-setup-cache-${m.name}-`))
  const cache = join(scratch, "shared")
  const dir = project(m, scratch)
  try {
    const start = performance.now()
    const proc = Bun.spawn([FLOW, "run", "--agents", "1", "--cli", "script", "--headless"], {
      cwd: dir,
      env: { ...benchEnv(), ...m.cacheEnv(cache) },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) throw new Error(`flow run exited ${code}:\n${err}\n${out.slice(-3000)}`)
    const runMs = performance.now() - start
    const times = setupTimes(dir)
    if (times.length !== TASKS) throw new Error(`expected ${TASKS} setups, flow recorded ${times.length}`)
    const floor = copyFloor(dir, m, cache)
    const later = median(times.slice(1))
    rows.push({ name: `${m.name}: first setup (cold cache)`, flowMs: times[0], floorMs: floor })
    rows.push({ name: `${m.name}: later 9 (median)`, flowMs: later, floorMs: floor, goal: GOALS[m.name] })
    details.push(
      `${m.name}: first ${(times[0] / 1000).toFixed(2)} s, later ${times
        .slice(1)
        .map((t) => (t / 1000).toFixed(2))
        .join(" ")} s; first/later ${(times[0] / later).toFixed(1)}x; whole run ${(runMs / 1000).toFixed(1)} s`,
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
    rmSync(scratch, { recursive: true, force: true })
  }
}
printHeader()
for (const r of rows) printRow(r)
for (const d of details) console.log(d)
