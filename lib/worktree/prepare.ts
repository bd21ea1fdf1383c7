// A task's worktree made ready to work in before its agent starts (docs/RUN.md, "Preparing worktrees"):
// the files flow.yaml `copy` names, copied from the person's checkout and kept out of every commit; the
// task's block of free TCP ports (`ports`); and the `setup` command, run once per worktree (again when the
// worktree is made anew) with its output in the run's log. A setup that fails blocks the task and its agent
// never starts. Before a worktree is removed its `teardown` runs (lib/worktree/teardown.ts). The scratch
// worktree a merge's check runs in is prepared the same way (lib/landing/merge-queue.ts): the check must see
// what the agent saw.
//
// What was done is kept in the worktree's git folder (flow-prepared.json), which goes with the worktree: a
// resumed run does not run the setup again, and a new worktree has none of it.
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { FlowError } from "../cli/errors"
import type { Project } from "../cli/project"
import type { Task } from "../model/task-index"
import { loadConfig, repoEntries, type FlowConfig } from "../config/config"
import { excludeEnv, FLOW_EXCLUDE, globalExcludesFile, trackedPaths, worktreeGitDir } from "../git/git"
import { Workspaces, type Workspace } from "../git/workspace"
import { toCheck, type CheckResult } from "./command"
import { copyFiles, ignorePattern, matchFiles } from "./copy"
import { DEFAULTS, entriesOf, runHook, type PrepareSettings, type WorktreeSettings } from "./hooks"
import { leasePorts, portEnv } from "./ports"

const MANIFEST = "flow-prepared.json"

/** What a worktree was given so far: the files copied into it, and the setup command that succeeded there. */
type Manifest = { copied: string[]; setup?: string }

/** flow.yaml's settings in the shape a run holds them. */
export function prepareSettings(config: FlowConfig, portsDir: string): PrepareSettings {
  return {
    setup: repoEntries(config, "setup"),
    teardown: repoEntries(config, "teardown"),
    copy: repoEntries(config, "copy"),
    ports: repoEntries(config, "ports"),
    portsDir,
  }
}

/**
 * What the agent finds prepared: the setup command that ran, the files copied from the person's checkout,
 * its ports (a count when they are not handed out yet: `flow prompt` before a run).
 */
export type Prepared = { setup?: string; copied: readonly string[]; ports: readonly number[] | number }

/** A worktree made ready for work, or why not. */
export type WorktreeReady =
  /** `env`: what the environment adds (ports, the ignore file); `release`: gives the ports back */
  | { ok: true; env: Record<string, string>; release: () => void }
  /** the setup failed (`note`: why, for the task's block note; `failed`: how it ended) or the run stopped (neither) */
  | { ok: false; note?: string; failed?: Extract<CheckResult, { ok: false }> }

/** A task's worktree made ready (`prepared`: what was copied and refused, its ports), or why not. */
export type Preparation = (Extract<WorktreeReady, { ok: true }> & { prepared: Prepared }) | Extract<WorktreeReady, { ok: false }>

/** What preparing one task's worktree (or the scratch worktree of its merge's check) needs to know. */
export type PrepareOptions = {
  taskId: string
  /** undefined: the worktree of the task's check (lib/landing/merge-queue.ts), which no agent works in */
  agent?: string
  ws: Pick<Workspace, "repo" | "path">
  /** the agent's own environment (FLOW_PROJECT, FLOW_TASK_ID, FLOW_RUN_ID, PATH with flow): the setup's too */
  env: Record<string, string | undefined>
  /** each process group the setup starts, recorded for the reaper */
  onGroup: (pid: number) => void
  /** what stops the setup: the run's stop unless given (a check's also stops when its merge is rebuilt) */
  signal?: AbortSignal
}

const NOTHING: Preparation = { ok: true, prepared: { copied: [], ports: [] }, env: {}, release: () => {} }

/** Prepares the task's worktree (the module comment); the ports stay held until `release`. */
export async function prepareWorktree(s: WorktreeSettings, o: PrepareOptions): Promise<Preparation> {
  const { ws, taskId } = o
  const signal = o.signal ?? s.signal
  const r = entriesOf(s.project.dir, s.prepare)
  const [setup, copy, ports] = await Promise.all([r.setup(ws.repo), r.copy(ws.repo), r.ports(ws.repo)])
  if (!setup && !copy && !ports) return NOTHING
  const gitDir = worktreeGitDir(ws.path)
  if (!gitDir) throw new FlowError(`${ws.path} is not a git worktree: it cannot be prepared`)
  const manifest = readManifest(gitDir)
  let copied: string[] = []
  let refused: string[] = []
  if (copy) {
    ;({ copied, refused } = await copyInto(s, ws, copy.files, manifest.copied))
    manifest.copied = copied
    if (copied.length > 0) await writeExclude(gitDir, ws.repo, copied)
    writeManifest(gitDir, manifest)
  }
  const holder = `flow run in ${s.project.dir}: task ${taskId}${o.agent ? "" : "'s check"}`
  const lease = ports ? await leasePorts(s.prepare.portsDir, ports.count, holder) : undefined
  try {
    const env = { ...portEnv(lease?.ports ?? []), ...excludeEnv(ws.path, { ...process.env, ...o.env }) }
    s.bus.emit({ type: "prepared", taskId, agent: o.agent, copied, refused, ports: lease?.ports ?? [] })
    const check = setup && toCheck(setup, "setup", DEFAULTS.setup)
    if (check && manifest.setup !== check.label) {
      const result = await runHook(s, "setup", check, { taskId, agent: o.agent, cwd: ws.path, env: { ...o.env, ...env }, onGroup: o.onGroup, signal })
      if (!result.ok) {
        lease?.release()
        if (signal.aborted) return { ok: false }
        return {
          ok: false,
          failed: result,
          note: `${result.output.replace(/\n/, "; the agent was not started. Its output:\n")}\nFix what it needs (or flow.yaml's setup), then 'flow ready ${taskId}' and run again: the setup runs again in the same worktree (${ws.path}).`,
        }
      }
      manifest.setup = check.label
      writeManifest(gitDir, manifest)
    }
    return { ok: true, prepared: { setup: check?.label, copied, ports: lease?.ports ?? [] }, env, release: () => lease?.release() }
  } catch (e) {
    lease?.release()
    throw e
  }
}

/**
 * What flow.yaml would prepare for `task` (for `flow prompt` before a run): its setup, the files of the
 * checkout that would be copied now, how many ports. Undefined when flow.yaml or the task's repository
 * cannot be read: a preview leaves that to `flow run`, which stops on it with the reason.
 */
export async function previewPrepared(project: Project, task: Task): Promise<Prepared | undefined> {
  let config: FlowConfig
  let repo: string
  try {
    config = loadConfig(project.dir)
    repo = await new Workspaces(project, { repo: config.repo }).repoOf(task)
  } catch (e) {
    if (e instanceof FlowError) return undefined
    throw e
  }
  const p = prepareSettings(config, "") // no ports are handed out here: no folder of their locks
  const r = entriesOf(project.dir, p)
  const [setup, copy, ports] = await Promise.all([r.setup(repo), r.copy(repo), r.ports(repo)])
  if (!setup && !copy && !ports) return undefined
  const matched = copy ? matchAll(repo, copy.files, project.stateDir, []) : []
  const tracked = await trackedPaths(repo, matched)
  return { setup: setup && toCheck(setup, "setup", DEFAULTS.setup).label, copied: matched.filter((f) => !tracked.has(f)), ports: ports?.count ?? 0 }
}

/** The checkout's files that `patterns` name, but those git tracks (git's to give), copied into the worktree. */
async function copyInto(s: WorktreeSettings, ws: Pick<Workspace, "repo" | "path">, patterns: readonly string[], before: readonly string[]) {
  const refused: string[] = []
  const matched = matchAll(ws.repo, patterns, s.project.stateDir, refused)
  const tracked = await trackedPaths(ws.repo, matched)
  const outcome = copyFiles(
    ws.repo,
    ws.path,
    matched.filter((f) => !tracked.has(f)),
    before,
  )
  // What an earlier preparation copied stays kept out of commits while it is there, even if the checkout
  // no longer has it (else the agent's next `git add -A` would take it).
  const kept = before.filter((f) => !outcome.copied.includes(f) && existsSync(join(ws.path, f)))
  return { copied: [...outcome.copied, ...kept], refused: [...refused, ...outcome.refused] }
}

/**
 * The files of the checkout `repo` the patterns name, each once. The state folder, which holds the other
 * tasks' worktrees, is never searched (compared by its real path: the project may be reached through a link).
 */
function matchAll(repo: string, patterns: readonly string[], stateDir: string, refused: string[]): string[] {
  const state = existsSync(stateDir) ? realpathSync(stateDir) : stateDir
  const skip = (dir: string) => dir === stateDir || realpathSync(dir) === state
  return [...new Set(patterns.flatMap((p) => matchFiles(repo, p, skip, refused)))]
}

/** flow's ignore file of the worktree (lib/git/git.ts FLOW_EXCLUDE): the copies, then the user's global excludes it stands in for. */
async function writeExclude(gitDir: string, repo: string, copied: readonly string[]): Promise<void> {
  const global = await globalExcludesFile(repo, process.env)
  const lines = ["# flow: the files it copied into this worktree from your checkout (flow.yaml copy), kept out of every commit", ...copied.map(ignorePattern)]
  if (global) lines.push(`# flow: your global excludes (${global}), which this file stands in for here`, readFileSync(global, "utf8"))
  writeFileSync(join(gitDir, FLOW_EXCLUDE), `${lines.join("\n")}\n`)
}

function readManifest(gitDir: string): Manifest {
  try {
    const m = JSON.parse(readFileSync(join(gitDir, MANIFEST), "utf8")) as Partial<Manifest>
    return { copied: Array.isArray(m.copied) ? m.copied.filter((c) => typeof c === "string") : [], setup: typeof m.setup === "string" ? m.setup : undefined }
  } catch {
    return { copied: [] } // none yet (a new worktree), or unreadable: prepared afresh
  }
}

function writeManifest(gitDir: string, m: Manifest): void {
  writeFileSync(join(gitDir, MANIFEST), `${JSON.stringify(m)}\n`)
}
