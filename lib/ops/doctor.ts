// What a run needs before it starts (`flow doctor`, and `flow run` first of all): git new enough for the merge
// queue, each agent CLI installed (and not older than flow's adapter was checked against), the programs of
// flow.yaml's commands on PATH, flow reachable from the agents' worktrees, a state folder that takes writes.
// Each check says what to fix. The list is open: another part of flow adds its check to DOCTOR_CHECKS (the
// fleet mode's database, issue 22, goes there).
import { accessSync, constants, existsSync, readFileSync, realpathSync, statfsSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { adapterFor, type Adapter } from "../agents"
import { compareVersions, installedVersion, OLDEST_CHECKED, parseVersion, versionWarning } from "../agents/versions"
import { FlowError } from "../cli/errors"
import type { Project } from "../cli/project"
import { run } from "../cli/proc"
import type { AgentConfig, FlowConfig } from "../config/config"
import { GIT_ENV, repoRoot, revParse } from "../git/git"
import { indexTasks, type Task } from "../model/task-index"
import { openStore } from "../store/open"
import { storeSetting } from "../store/setting"
import { redact } from "../git/publish"
import { remoteUrl } from "../git/remote-git"
import { insideProject, Workspaces } from "../git/workspace"
import { commandPrograms, type DoctorLine, repoOf } from "../worktree/command-programs"
import { sandboxOf } from "../config/sandbox-config"
import { probeSandbox } from "../sandbox/probe"

/** What every check is given: the run as `flow run` would start it. */
export type DoctorInput = {
  project: Project
  config: FlowConfig
  /** the agents the run would start (flow.yaml's, or those of --agents and --cli) */
  agents: readonly AgentConfig[]
  env: Record<string, string | undefined>
  /** how the agents start flow (lib/run/flow-shim.ts) */
  flowArgv: readonly string[]
}

/** One check: its findings (none when it has nothing to say, as a fleet database check without a database). */
export type DoctorCheck = (input: DoctorInput) => Promise<DoctorLine[]>

/** The merge queue makes merges with `git merge-tree --write-tree`, new in git 2.38. */
export const GIT_MINIMUM = "2.38.0"

/**
 * Every check, in the order they are told; each runs at once with the others. A check of another part of
 * flow is a function of the input added here (issue 22: the fleet mode's database, [] without one).
 */
export const DOCTOR_CHECKS: readonly DoctorCheck[] = [
  gitVersion,
  taskRepositories,
  agentClis,
  commandPrograms,
  flowOnPath,
  stateFolder,
  sharedRemote,
  sandboxReady,
]

/** The findings of every check, in the list's order. */
export async function doctor(input: DoctorInput, checks: readonly DoctorCheck[] = DOCTOR_CHECKS): Promise<DoctorLine[]> {
  return (await Promise.all(checks.map((c) => c(input)))).flat()
}

/**
 * With a sandbox for any agent, or for flow.yaml's own commands (the top-level `sandbox`): bubblewrap there and
 * able to make one (lib/sandbox/probe.ts).
 */
async function sandboxReady(i: DoctorInput): Promise<DoctorLine[]> {
  const boxed = [...i.agents.map((a) => sandboxOf(a)), sandboxOf({}, i.config.sandbox)].filter((s) => s !== undefined)
  if (boxed.length === 0) return []
  const probe = await probeSandbox(
    i.env,
    boxed.some((s) => s.network === "none"),
  )
  if (!probe.ok) return [{ state: "fail", what: probe.what, hint: probe.hint }]
  return [{ state: "ok", what: `agents run sandboxed (${probe.version})` }]
}

async function gitVersion(i: DoctorInput): Promise<DoctorLine[]> {
  const r = await run(["git", "--version"], { cwd: i.project.dir, env: { ...i.env, ...GIT_ENV } }).catch(() => undefined)
  const version = r?.code === 0 ? parseVersion(r.stdout) : undefined
  if (!r) return [{ state: "fail", what: "git is not on PATH", hint: `install git ${GIT_MINIMUM.replace(/\.0$/, "")} or newer` }]
  if (!version) return [{ state: "warn", what: `cannot tell git's version from '${r.stdout.trim() || r.stderr.trim()}'` }]
  if (compareVersions(version, GIT_MINIMUM) < 0)
    return [
      {
        state: "fail",
        what: `git ${version} is older than ${GIT_MINIMUM.replace(/\.0$/, "")}, which flow's merge queue needs (git merge-tree --write-tree)`,
        hint: "update git (https://git-scm.com/downloads)",
      },
    ]
  return [{ state: "ok", what: `git ${version}` }]
}

/**
 * The repositories the tasks left to do work in (a task's repo, else flow.yaml's, else the one holding the project
 * folder; with no tasks.yaml yet, the default one): each there, with a commit on its merge target for the tasks'
 * branches to start from. Outside any repository the run would start, then block its first task.
 */
async function taskRepositories(i: DoctorInput): Promise<DoctorLine[]> {
  const store = await openStore(i.project)
  // An invalid tasks.yaml is the run's to say (exit 3), and flow validate's.
  const data = (await store.exists())
    ? await store.read().then(
        (r) => r.data,
        () => undefined,
      )
    : { tasks: [] }
  if (!data) return []
  const todo = [...indexTasks(data).values()].map((e) => e.task).filter((t) => t.status !== "done" && t.checkpoint !== true && !t.subtasks?.length)
  const workspaces = new Workspaces(i.project, { repo: i.config.repo, target: i.config.merge_target })
  const found = new Map<string, { ids: string[]; repo?: string; error?: FlowError }>()
  // No task yet (no tasks.yaml, or an empty one): the default repository, where the first tasks will work.
  const looked = todo.length > 0 ? todo : data.tasks.length === 0 ? [{} as Task] : []
  for (const task of looked) {
    const at: { key: string; repo?: string; error?: FlowError } = await workspaces.repoOf(task).then(
      (repo) => ({ key: repo, repo }),
      (e) => {
        if (!(e instanceof FlowError)) throw e
        return { key: `! ${e.message}`, error: e }
      },
    )
    const entry = found.get(at.key) ?? { ids: [], repo: at.repo, error: at.error }
    if (task.id) entry.ids.push(task.id)
    found.set(at.key, entry)
  }
  const shared = store.shared
  const own = await repoRoot(i.project.dir).catch(() => undefined)
  return Promise.all(
    [...found.values()].map(async ({ ids, repo, error }): Promise<DoctorLine> => {
      if (!repo) {
        const which = ids.length === 0 ? "" : ` (${ids.length === 1 ? "task" : "tasks"} ${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", ..." : ""})`
        return { state: "fail", what: `${error!.message}${which}`, hint: error!.hint }
      }
      const name = repo === own ? "the project's repository" : `the repository ${relative(i.project.dir, repo) || "."}`
      const target = await workspaces.targetOf(repo).catch((e: unknown) => {
        if (e instanceof FlowError) return e
        throw e
      })
      if (target instanceof FlowError) return { state: "fail", what: `${name}: ${target.message}`, hint: target.hint }
      // A shared project's tasks branch from the remote's target, which the shared remote's check looks at.
      if (!shared && !(await revParse(repo, `refs/heads/${target}`))[0])
        return {
          state: "fail",
          what: `${name} has no commit on ${target} yet: the tasks' branches start from one`,
          hint: `commit what is there first: git -C ${repo} add -A && git -C ${repo} commit -m 'first commit'`,
        }
      return { state: "ok", what: `${name}: tasks branch from ${target}${ids.length ? ` (${ids.length} to do)` : ""}` }
    }),
  )
}

/** Each CLI once, however many agents use it: found on PATH, and its version when flow knows the CLI's. */
async function agentClis(i: DoctorInput): Promise<DoctorLine[]> {
  const byCli = new Map<string, { adapter: Adapter; agents: AgentConfig[] }>()
  const unknown: DoctorLine[] = []
  for (const agent of i.agents) {
    if (agent.cli === "script") continue // built in
    let adapter: Adapter
    try {
      adapter = adapterFor(agent.cli, { command: agent.command })
    } catch (e) {
      if (!(e instanceof FlowError)) throw e
      unknown.push({ state: "fail", what: `agent ${agent.name}: ${e.message}`, hint: e.hint })
      continue
    }
    const key = `${adapter.cli} ${adapter.binary}`
    byCli.set(key, { adapter, agents: [...(byCli.get(key)?.agents ?? []), agent] })
  }
  if (i.agents.length === 0) return [{ state: "ok", what: "no agents in flow.yaml ('flow doctor --cli <cli>' checks one CLI)" }]
  const lines = await Promise.all(
    [...byCli.values()].map(async ({ adapter, agents }): Promise<DoctorLine> => {
      const names = agents.map((a) => a.name).join(", ")
      const binary = adapter.binary
      // A path in a command template is resolved in the worktree when the agent starts; only bare names are looked up.
      if (binary.includes("/")) return { state: "ok", what: `${names}: ${binary} (a path, found in the worktree when the agent starts)` }
      const found = Bun.which(binary, { PATH: i.env.PATH ?? "" })
      if (!found) return { state: "fail", what: `agent ${agents[0].name} needs '${binary}', which is not on PATH`, hint: adapter.install }
      if (OLDEST_CHECKED[adapter.cli] === undefined) return { state: "ok", what: `${binary} for ${names} (${found})` }
      const version = await installedVersion(adapter, i.env, i.project.dir)
      const warning = versionWarning(adapter, version)
      if (warning) return { state: "warn", what: warning }
      return { state: "ok", what: `${binary} ${version ?? "(version not told)"} for ${names}` }
    }),
  )
  return [...unknown, ...lines]
}

/**
 * A shared project's machines share their git work through a remote (flow.yaml `remote:`, default origin):
 * every repository its tasks work in needs it (docs/FLEET.md, "Git across machines"). Nothing to say in files.
 */
async function sharedRemote(i: DoctorInput): Promise<DoctorLine[]> {
  if ((await storeSetting(i.project)).kind === "file") return []
  const remote = i.config.remote ?? "origin"
  const named = new Set<string | undefined>([undefined])
  for (const { task } of indexTasks((await (await openStore(i.project)).read()).data).values()) named.add(task.repo)
  const repos = new Set<string>()
  for (const repo of named) {
    const root = await (repo === undefined ? repoOf(i, undefined) : repoRoot(insideProject(i.project.dir, repo, "repo")).catch(() => undefined))
    if (root) repos.add(root)
  }
  return Promise.all(
    [...repos].map(async (repo): Promise<DoctorLine> => {
      try {
        return { state: "ok", what: `the shared remote of ${repo}: ${remote} (${redact(await remoteUrl(repo, remote))})` }
      } catch (e) {
        const err = e as FlowError
        return { state: "fail", what: err.message, hint: err.hint }
      }
    }),
  )
}

/** The agents run `flow` from .flow/bin (lib/run/flow-shim.ts): a shell script that starts this program. */
async function flowOnPath(i: DoctorInput): Promise<DoctorLine[]> {
  const shim = relative(i.project.dir, join(i.project.stateDir, "bin", "flow"))
  const missing = i.flowArgv.find((part, n) => (n === 0 ? !executable(part) : part.endsWith(".ts") && !existsSync(part)))
  if (missing) return [{ state: "fail", what: `the agents could not start flow: ${missing} cannot be run`, hint: "run flow from where it is installed" }]
  if (!executable("/bin/sh")) return [{ state: "fail", what: `the agents could not start flow: ${shim} is a /bin/sh script and there is no /bin/sh` }]
  const mount = mountOf(i.project.stateDir)
  if (mount?.options.includes("noexec"))
    return [
      {
        state: "fail",
        what: `the agents could not start flow: ${shim} would be on ${mount.point}, mounted noexec`,
        hint: "keep the project on a file system that allows running programs",
      },
    ]
  return [{ state: "ok", what: `flow on the agents' PATH: ${shim} starts ${i.flowArgv.join(" ")}` }]
}

/** The state folder (.flow, or the project folder it will be made in) takes writes; how much room it has is said. */
async function stateFolder(i: DoctorInput): Promise<DoctorLine[]> {
  const name = relative(i.project.dir, i.project.stateDir) || i.project.stateDir
  const dir = existsSync(i.project.stateDir) ? i.project.stateDir : i.project.dir
  try {
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error("not a folder"), { code: "ENOTDIR" })
    accessSync(dir, constants.W_OK)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    return [
      {
        state: "fail",
        what: `the state folder ${name} cannot be written (${code ?? (e as Error).message})`,
        hint:
          code === "ENOTDIR"
            ? `${dir} is a file: move it away, flow makes its folder there`
            : `flow keeps its worktrees, state and logs there: make ${dir} writable`,
      },
    ]
  }
  // Room is said, not judged: a full disk during the run is waited out (lib/run/space-wait.ts).
  const free = freeBytes(dir)
  return [{ state: "ok", what: `the state folder ${name} is writable${free === undefined ? "" : ` (${(free / 1e9).toFixed(1)} GB free)`}` }]
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

function freeBytes(dir: string): number | undefined {
  try {
    const s = statfsSync(dir)
    return s.bavail * s.bsize
  } catch {
    return undefined
  }
}

/** The mount holding `path` (its nearest existing folder), from /proc/self/mountinfo; undefined off Linux. */
function mountOf(path: string): { point: string; options: string[] } | undefined {
  let dir = path
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir)
  let text: string
  try {
    text = readFileSync("/proc/self/mountinfo", "utf8")
    dir = realpathSync(dir)
  } catch {
    return undefined
  }
  let best: { point: string; options: string[] } | undefined
  for (const line of text.split("\n")) {
    const f = line.split(" ")
    if (f.length < 6) continue
    const point = f[4].replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(Number.parseInt(o, 8)))
    const inside = point === "/" || dir === point || dir.startsWith(`${point}/`)
    if (inside && (!best || point.length >= best.point.length)) best = { point, options: f[5].split(",") }
  }
  return best
}
