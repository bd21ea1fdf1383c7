// flow.yaml's commands run in a worktree (docs/RUN.md, "Preparing worktrees"): `setup` before its agent starts
// (lib/worktree/prepare.ts) and `teardown` before it is removed (lib/worktree/teardown.ts), each repository's
// entry looked up once per run, each run with its start, output and end told on the bus.
import type { Project } from "../cli/project"
import type { CopyConfig, HookConfig, PortsConfig } from "../config/config"
import { entryResolver } from "../git/repo-entries"
import { runCheck, type Check, type CheckResult, type Confine } from "./command"
import type { Hook, WorktreeEvents } from "./events"

export const DEFAULTS: Record<Hook, string> = { setup: "10m", teardown: "2m" }

/** flow.yaml's preparation of worktrees (lib/worktree/prepare.ts), each field its entries per repository. */
export type PrepareSettings = {
  setup: HookConfig[]
  teardown: HookConfig[]
  copy: CopyConfig[]
  ports: PortsConfig[]
  /** the folder of port locks shared by every flow on the machine (lib/worktree/ports.ts) */
  portsDir: string
  /** how setup, teardown and the merge queue's check start in the sandbox (flow.yaml's top-level `sandbox`); undefined: as they are */
  confine?: Confine
}

/** What this layer is given of a run (lib/run/settings.ts's RunSettings is one): where it reports, and its stop. */
export type WorktreeSettings = {
  project: Pick<Project, "dir" | "stateDir">
  prepare: PrepareSettings
  bus: WorktreeEvents
  signal: AbortSignal
}

type Resolvers = {
  setup: (repo: string) => Promise<HookConfig | undefined>
  teardown: (repo: string) => Promise<HookConfig | undefined>
  copy: (repo: string) => Promise<CopyConfig | undefined>
  ports: (repo: string) => Promise<PortsConfig | undefined>
}
const resolvers = new WeakMap<PrepareSettings, Resolvers>()

/** Each repository's entries of a run's settings, looked up once per repository. */
export function entriesOf(projectDir: string, p: PrepareSettings): Resolvers {
  let r = resolvers.get(p)
  if (!r) {
    r = {
      setup: entryResolver(projectDir, p.setup, "setup"),
      teardown: entryResolver(projectDir, p.teardown, "teardown"),
      copy: entryResolver(projectDir, p.copy, "copy"),
      ports: entryResolver(projectDir, p.ports, "ports"),
    }
    resolvers.set(p, r)
  }
  return r
}

type HookRun = { taskId: string; agent?: string; cwd: string; env: Record<string, string | undefined>; onGroup: (pid: number) => void; signal: AbortSignal }

/** A setup or teardown with its start, each line of its output and its end on the bus. */
export async function runHook(s: Pick<WorktreeSettings, "bus" | "prepare">, hook: Hook, check: Check, o: HookRun): Promise<CheckResult> {
  const { taskId, agent } = o
  // Not started once the run stops (runCheck only hears a stop that comes while it runs).
  if (o.signal.aborted) return { ok: false, timedOut: false, code: 130, output: `the ${hook} was not run: the run stops`, seconds: 0 }
  s.bus.emit({ type: "hook-start", taskId, agent, hook, command: check.label })
  const result = await runCheck(check, o.cwd, { ...o.env, FLOW_WORKTREE: o.cwd }, o.signal, {
    onGroup: o.onGroup,
    onLine: (line) => s.bus.emit({ type: "hook-output", taskId, agent, hook, line }),
    confine: s.prepare.confine,
  })
  s.bus.emit({
    type: "hook-end",
    taskId,
    agent,
    hook,
    command: check.label,
    ok: result.ok,
    code: result.ok ? 0 : result.code,
    seconds: result.seconds,
    timedOut: !result.ok && result.timedOut,
  })
  return result
}
