// The sandbox an agent's process group runs in (docs/SANDBOX.md): bubblewrap, driven with an argv array. The
// root filesystem read-only, a private /tmp, and writable only what the task's work needs: its worktree, the
// git files its commits write, the CLI's own folders, the package caches, the task's folders of flow's. The
// environment is cut to an allow list. Processes die with their leader (--die-with-parent, a PID namespace).
import { existsSync, mkdirSync, realpathSync } from "node:fs"
import { dirname, join } from "node:path"
import type { AgentSandbox } from "../agents/types"
import type { SandboxSettings } from "../config/sandbox-config"
import { gitFiles } from "./git-files"

/** Every sandboxed process keeps these (besides FLOW_*): where to find programs, the home, the locale and terminal. */
const BASE_ENV = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "NO_COLOR", "TZ", "FLOW_*"]

/** The package managers' shared caches under HOME (npm, bun, pnpm, yarn, pip, cargo, go), writable where they exist. */
const CACHES = [".npm", ".bun/install/cache", ".cache", ".local/share/pnpm", ".yarn/berry/cache", ".cargo/registry", ".cargo/git", "go/pkg/mod"]

/** The folder the sandbox hides behind a private tmpfs; what flow needs from it is bound back in. */
const TMP = "/tmp"

export type SandboxInput = {
  settings: SandboxSettings
  /** the task's worktree: writable, and where the agent starts */
  worktree: string
  /** the CLI's own folders and variables (lib/agents/*.ts), none for the script agent */
  agent: AgentSandbox
  /** folders of the task's own outside the worktree (its session store, its MCP config, its finished mark) */
  own: readonly string[]
  /** the unix socket of the flow command door (lib/sandbox/door.ts) */
  door?: string
  /** the environment the process would get without the sandbox, for its PATH and HOME */
  env: Record<string, string | undefined>
  /** what the `flow` launcher inside runs (the compiled binary, or bun and flow's source folder) */
  programs?: readonly string[]
}

/**
 * How a sandboxed process is started: `wrap` turns its argv into bwrap's; `env` lays over flow's own variables
 * for it (`own`: the task's, its ports, the git identity, which pass) every inherited one off the allow list
 * as undefined (removed). The cut is made before bwrap starts: a value put on bwrap's argv would show in ps.
 */
export type Sandbox = { wrap(argv: readonly string[]): string[]; env(env: Record<string, string | undefined>): Record<string, string | undefined> }

export function sandbox(input: SandboxInput): Sandbox {
  const home = input.env.HOME
  const git = gitFiles(input.worktree)
  const inHome = (paths: readonly string[]) => (home ? paths.map((p) => join(home, p)) : [])
  // The CLI's own folder (its first), when not there yet, is made now so the CLI can write into it (made by the
  // CLI itself it would land in a read-only HOME); the others are bound only where they exist.
  const [main] = inHome(input.agent.home)
  if (main) mkdirSync(main, { recursive: true })
  const writable = [input.worktree, ...git.writable, ...inHome(input.agent.home), ...inHome(CACHES), ...input.own].filter((p) => existsSync(p))
  if (input.door) writable.push(dirname(input.door))
  // Under /tmp (the tests' homes and projects, a checkout of flow), what is read must be bound back over the
  // private tmpfs: PATH's folders, and where their programs really are (a node_modules/.bin links into its
  // node_modules, which the CLI's own packages need whole).
  const path = (input.env.PATH ?? "").split(":").filter((p) => p.startsWith("/"))
  const seen = [...(home ? [home] : []), ...git.readable, ...path, ...path.map(realFolder), ...(input.programs ?? []).map(realFolder)]
  const readable = seen.map(packages).filter((p) => p.startsWith(`${TMP}/`) && existsSync(p))
  // The program started, given by its path (a CLI's configured command), is read where it really is too.
  const mounts = (program: string | undefined) => [
    ...byDepth(
      [...readable, ...(program?.startsWith("/") ? [packages(realFolder(program))] : [])].filter((p) => p.startsWith(`${TMP}/`) && existsSync(p)),
    ).flatMap((p) => ["--ro-bind", p, p]),
    ...byDepth(writable).flatMap((p) => ["--bind", p, p]),
    ...git.pinned.flatMap((p) => ["--ro-bind", p, p]),
  ]
  const base = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
  if (input.settings.network === "none") base.push("--unshare-net")
  base.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", TMP)
  const allowed = [...BASE_ENV, ...input.agent.env, ...input.settings.env]
  return {
    wrap: (argv) => [...base, ...mounts(argv[0]), "--chdir", input.worktree, "--", ...argv],
    env: (own) => {
      const out: Record<string, string | undefined> = {}
      for (const name of Object.keys(process.env)) if (!envAllowed(name, allowed)) out[name] = undefined
      return { ...out, ...own }
    },
  }
}

/** A name on the allow list: equal to an entry, or beginning with one that ends in `*`. */
export function envAllowed(name: string, allowed: readonly string[]): boolean {
  return allowed.some((a) => (a.endsWith("*") ? name.startsWith(a.slice(0, -1)) : name === a))
}

/** `p` with its links resolved (itself when it does not exist). */
function realFolder(p: string): string {
  try {
    return realpathSync(p)
  } catch {
    return p
  }
}

/** The outermost node_modules folder `p` is in (a CLI's packages, read whole), or `p` itself. */
function packages(p: string): string {
  const at = p.indexOf("/node_modules/")
  return at < 0 ? p : p.slice(0, at + "/node_modules".length)
}

/** Parents before children, so a bind inside another is made after it (and not hidden by it). */
function byDepth(paths: readonly string[]): string[] {
  return [...new Set(paths)].sort((a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b))
}
