// flow.yaml: the project's agents and run settings, checked by arktype like tasks.yaml.
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { type } from "arktype"
import { Exit, FlowError } from "../cli/errors"
import { closest } from "../cli/suggest"
import { checkFallbacks } from "./fallback"
import { NotifyField, notifyFields, notifyShape } from "./notify-config"
import { SandboxConfig } from "./sandbox-config"
import { ReviewConfig, unknownReviewers } from "./review-config"
import { QueueConfig } from "./queue-config"
import { formatFinding, type Finding } from "../validation/findings"
import { parseForPositions, positionOf, syntaxErrors, type ParsedForPositions } from "../validation/yaml-position"

import { AGENT_NAME } from "../cli/agent-name"
import { PROJECT_KEY } from "../cli/project"
import { Budget, Duration } from "../model/schema"

export { AGENT_NAME }

export const AgentConfig = type({
  name: AGENT_NAME,
  cli: "string > 0",
  "model?": "string",
  /** extra arguments passed to the CLI */
  "args?": "string[]",
  /** for cli: command, the argv template with {prompt}, {session}, {model}, {cwd} */
  "command?": "string[]",
  /** the agents (of other CLIs) a task moves to when this agent's CLI reports its usage limit (docs/BUDGETS.md) */
  "fallback?": type(AGENT_NAME).or(type(AGENT_NAME).array().atLeastLength(1)),
  /** hand the agent flow's MCP server (`flow mcp`), so it calls flow_done etc. as tools (claude, codex, gemini, opencode) */
  "mcp?": "boolean",
  /** run the agent's processes in a sandbox (lib/config/sandbox-config.ts, docs/SANDBOX.md); the agent's own wins over the top-level one */
  "sandbox?": SandboxConfig,
})
export type AgentConfig = typeof AgentConfig.infer

/** The project's check, run on every merge before the target moves (docs/RUN.md, "Merge queue"). */
export const VerifyConfig = type({
  /** the repository it applies to, as in a task's `repo` (default: every repository not named by another entry) */
  "repo?": "string > 0",
  /** a shell command line (run by `sh -c` in the merge's scratch worktree) or an argv array */
  command: type("string > 0").or(type("string > 0").array().atLeastLength(1)),
  /** how long it may run before it counts as failed: 90s, 20m, 1h (default 20m); lib/cli/duration.ts reads it */
  "timeout?": type(/^(?=.*[1-9])(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?$/).describe("a duration such as 90s, 20m, 1h or 1h30m"),
})
export type VerifyConfig = typeof VerifyConfig.infer

/**
 * A command run in a task's worktree: `setup` before its agent starts, `teardown` before it is removed
 * (docs/RUN.md, "Preparing worktrees"). The same shape as `verify`, with its own default timeouts.
 */
export const HookConfig = VerifyConfig
export type HookConfig = VerifyConfig

/** A file or glob of files inside the repository: relative, no `..`, nothing in `.git`. */
const CopyGlob = type(/^(?!\/)(?!.*(?:^|\/)\.\.(?:\/|$))(?!(?:.*\/)?\.git(?:\/|$)).+$/).describe(
  "a path or glob inside the repository (relative, without '..' or '.git')",
)

/** Files copied from the person's checkout into each worktree of a repository (docs/RUN.md, "Preparing worktrees"). */
export const CopyConfig = type({
  /** the repository it applies to, as in a task's `repo` (default: every repository not named by another entry) */
  "repo?": "string > 0",
  /** paths or globs (`*`, `**`, `{a,b}`) relative to the repository's top folder */
  files: CopyGlob.array(),
})
export type CopyConfig = typeof CopyConfig.infer

const PortCount = type("1 <= number.integer <= 64")

/** How many free TCP ports each task of a repository is given (FLOW_PORT, FLOW_PORT_1, ...). */
export const PortsConfig = type({
  /** the repository it applies to, as in a task's `repo` (default: every repository not named by another entry) */
  "repo?": "string > 0",
  count: PortCount,
})
export type PortsConfig = typeof PortsConfig.infer

const PullRequestConfig = type({ "base?": "string > 0", "draft?": "boolean" })

/** What each task, each agent (in one run) and the whole run may spend (docs/BUDGETS.md). */
export const BudgetConfig = type({
  "task?": Budget,
  "agent?": Budget,
  "run?": Budget,
  /** past this multiple of a cap the agent is stopped at once, not at the end of its turn (default 1.5) */
  "ceiling?": "number >= 1",
})
export type BudgetConfig = typeof BudgetConfig.infer

/** A model's price in dollars per million tokens: input, output, and cached input read and written when they differ. */
export const PriceConfig = type({ input: "number >= 0", output: "number >= 0", "cached_input?": "number >= 0", "cache_write?": "number >= 0" })
export type PriceConfig = typeof PriceConfig.infer

export const FlowConfig = type({
  "agents?": AgentConfig.array(),
  /** every agent's sandbox, unless an agent sets its own; and flow.yaml's own commands' (setup, teardown, the check: docs/SANDBOX.md) */
  "sandbox?": SandboxConfig,
  /** how many agents work at once (default: the number of agents) */
  "parallelism?": "number.integer >= 1",
  /** the default repository of tasks without `repo`, relative to the project folder */
  "repo?": "string",
  /** the branch finished tasks are merged into (default: the repository's current branch) */
  "merge_target?": "string",
  /** how many times a task whose agent failed is tried again before it is blocked (default 1) */
  "retries?": "number.integer >= 0",
  /** how long one turn of an agent may run before it is stopped and counted as failed (default: no limit) */
  "task_timeout?": Duration,
  /** an agent whose CLI reports a usage limit without its reset waits this long, doubled for each limit in a row of its task, up to 30m (default 1m) */
  "limit_backoff?": Duration,
  /** on a shared graph, how long a run's claim of a task holds without a renewal (default 60s; renewed every third of it) */
  "lease?": Duration,
  /** the check a merge must pass before the target branch moves: one, or one per repository */
  "verify?": VerifyConfig.or(VerifyConfig.array()),
  /** run in each new worktree before its agent starts: one, or one per repository */
  "setup?": HookConfig.or(HookConfig.array()),
  /** run in a worktree before it is removed: one, or one per repository */
  "teardown?": HookConfig.or(HookConfig.array()),
  /** files copied from the person's checkout into each worktree: globs, or entries per repository */
  "copy?": CopyGlob.array().or(CopyConfig.array()),
  /** free TCP ports given to each task: a count, or entries per repository */
  "ports?": PortCount.or(PortsConfig.array()),
  /** how many times a task is sent back to its agent after a failed check or a merge conflict (default 2) */
  "fix_attempts?": "number.integer >= 0",
  /** how many candidates of a target's merge queue are checked at once, each on top of those ahead (default 8; 1: strictly serial) */
  "queue_depth?": "number.integer >= 1",
  /** the merge queue's batches: { batch: N } checks up to N candidates as one merge (docs/RUN.md, "Batches") */
  "queue?": QueueConfig,
  /** an agent that says done having changed nothing: allow (done, with a note saying so; the default) or block */
  "empty_done?": "'allow' | 'block'",
  /** the git remote that push and pull_request use, and a shared project's machines share their work through (default origin) */
  "remote?": type(/^[A-Za-z0-9][A-Za-z0-9._-]*$/).describe("a git remote's name (letters, digits, '.', '_', '-')"),
  /** push the merge target to the remote after each merge */
  "push?": "boolean",
  /** push each finished task's branch and open a pull request with gh (true, or { base, draft }) */
  "pull_request?": type("boolean").or(PullRequestConfig),
  /** who approves a task's merge before it lands: person or an agent's name, or per phase and per task (docs/REVIEW.md) */
  "review?": ReviewConfig,
  /** caps on spending: per task, per agent, per run */
  "budget?": BudgetConfig,
  /** prices per model, for CLIs that report tokens but no dollars; added to (and winning over) flow's own */
  "prices?": type({ "[string]": PriceConfig }),
  /** where the tasks and run state live when shared: a PostgreSQL URL without its password (flow share; docs/FLEET.md) */
  "state?": type(/^postgres(?:ql)?:\/\//).describe("a postgres:// URL (flow share writes it)"),
  /** the project's key in the shared database (default: the project folder's name) */
  "project?": type(PROJECT_KEY).describe("a project key: lowercase letters, digits, '.', '_' and '-'"),
  /** where flow tells the person they are needed: webhooks, Slack, ntfy, the desktop, a command (docs/NOTIFY.md) */
  "notify?": NotifyField,
})
export type FlowConfig = typeof FlowConfig.infer

/** The project's flow.yaml, or {} when there is none; a bad file is a FlowError (exit 3) with its position. */
export function loadConfig(projectDir: string): FlowConfig {
  const file = join(projectDir, "flow.yaml")
  if (!existsSync(file)) return {}
  const text = readFileSync(file, "utf8")
  const parsed = parseForPositions(text)
  const syntax = syntaxErrors(parsed)[0]
  if (syntax) {
    throw new FlowError(
      `flow.yaml does not parse:\n${formatFinding({ severity: "error", message: syntax.message, ...syntax.position }, file, text).trimEnd()}`,
      Exit.invalid,
      "fix the YAML syntax at that position",
    )
  }
  const data = parsed.doc.toJS() ?? {}
  // arktype reads a list as an object whose keys are its methods ("push must be boolean (was Function)").
  if (!isRecord(data))
    throw new FlowError(
      `flow.yaml must be a mapping of settings (field: value), not ${Array.isArray(data) ? "a list" : `the value ${JSON.stringify(data)}`}`,
      Exit.invalid,
      "'flow help config' prints every field of flow.yaml with its default",
    )
  const invalid = (findings: Finding[]) =>
    new FlowError(
      `flow.yaml is invalid:\n${findings
        .map((f) => formatFinding(f, file, text))
        .join("")
        .trimEnd()}`,
      Exit.invalid,
      "'flow help config' prints every field of flow.yaml with its default",
    )
  const out = FlowConfig.onDeepUndeclaredKey("reject")(data)
  if (out instanceof type.errors) throw invalid(configFindings(out, data, parsed))
  const names = new Set<string>()
  for (const agent of out.agents ?? []) {
    if (names.has(agent.name)) throw new FlowError(`flow.yaml names the agent '${agent.name}' twice`, Exit.invalid, "give every agent its own name")
    names.add(agent.name)
  }
  checkFallbacks(out.agents ?? [])
  const reviewers = unknownReviewers(out.review, [...names])
  if (reviewers.length > 0)
    throw invalid(reviewers.map((r) => ({ severity: "error", message: r.message, hint: r.hint, ...positionOf(parsed, ["review", ...r.path]) })))
  for (const field of PER_REPO) {
    const repos = new Set<string | undefined>()
    for (const v of repoEntries(out, field)) {
      if (repos.has(v.repo))
        throw new FlowError(
          `flow.yaml has two '${field}' entries for ${v.repo === undefined ? "the default repository (no 'repo')" : `repo '${v.repo}'`}`,
          Exit.invalid,
          field === "verify" ? "keep one check per repository" : `keep one '${field}' entry per repository`,
        )
      repos.add(v.repo)
    }
  }
  const pr = out.pull_request
  if (out.push && pr && (pr === true || pr.base === undefined || pr.base === out.merge_target)) {
    throw new FlowError(
      "flow.yaml sets both 'push' and 'pull_request' into the merge target: every pull request would already be merged",
      Exit.invalid,
      "open pull requests into another branch (pull_request: { base: main }) with merge_target an integration branch, or drop one of them",
    )
  }
  return out
}

/** The fields of flow.yaml that take one entry for every repository, or a list of entries each with `repo`. */
const PER_REPO = ["verify", "setup", "teardown", "copy", "ports"] as const

export type RepoEntries = {
  verify: VerifyConfig[]
  setup: HookConfig[]
  teardown: HookConfig[]
  copy: CopyConfig[]
  ports: PortsConfig[]
}

/** A per-repository field as its list of entries: a single entry (or copy's globs, ports' count) is the one without `repo`. */
export function repoEntries<K extends keyof RepoEntries>(config: FlowConfig, field: K): RepoEntries[K] {
  const value = config[field]
  if (value === undefined) return []
  if (field === "copy") {
    const list = value as string[] | CopyConfig[]
    return (list.length > 0 && typeof list[0] === "string" ? [{ files: list as string[] }] : list) as RepoEntries[K]
  }
  if (field === "ports" && typeof value === "number") return [{ count: value }] as RepoEntries[K]
  return (Array.isArray(value) ? value : [value]) as RepoEntries[K]
}

type KeyPath = (string | number)[]
type Problem = { path: KeyPath; message: string; unknown: boolean }

/** The fields that may be written at a path of flow.yaml, for the "did you mean" of an unknown one. */
function fieldsAt(path: KeyPath): string[] {
  const [first, second] = path
  const of = (t: { props: readonly { key: string | symbol }[] }) => t.props.map((p) => String(p.key))
  if (path.length === 0) return of(FlowConfig)
  if (first === "agents" && typeof second === "number" && path.length === 2) return of(AgentConfig)
  const entry = path.length === 1 || (typeof second === "number" && path.length === 2)
  if ((first === "verify" || first === "setup" || first === "teardown") && entry) return of(VerifyConfig)
  if (first === "copy" && entry) return of(CopyConfig)
  if (first === "ports" && entry) return of(PortsConfig)
  if (first === "pull_request" && path.length === 1) return of(PullRequestConfig)
  if (first === "budget" && path.length === 1) return of(BudgetConfig)
  if (first === "budget" && path.length === 2) return of(Budget)
  if (first === "prices" && path.length === 2) return of(PriceConfig)
  if (first === "notify" && entry) return notifyFields()
  return []
}

/** A check of one shape: every problem of `value`, unknown keys at any depth included, or nothing. */
type ShapeCheck = (value: unknown) => unknown

/** For a field of two shapes, the check of the shape written: its problems are the ones to tell. */
// What copy and ports take, in words, for a value of neither shape (arktype would call a list "an object").
const COPY_SHAPE = type("unknown[]").describe("a list of paths or globs, or of { repo, files } entries")
const PORTS_SHAPE = type("number").describe("a number of ports from 1 to 64, or a list of { repo, count } entries")
const commandShape = (v: unknown) =>
  Array.isArray(v) ? VerifyConfig.array().onDeepUndeclaredKey("reject") : isRecord(v) ? VerifyConfig.onDeepUndeclaredKey("reject") : undefined
const SHAPES: Record<string, (value: unknown) => ShapeCheck | undefined> = {
  verify: commandShape,
  setup: commandShape,
  teardown: commandShape,
  // copy: globs, or entries with repo (a list that holds a mapping is told as entries)
  copy: (v) => (Array.isArray(v) ? (v.some(isRecord) ? CopyConfig.array().onDeepUndeclaredKey("reject") : CopyGlob.array()) : COPY_SHAPE),
  ports: (v) => (Array.isArray(v) ? PortsConfig.array().onDeepUndeclaredKey("reject") : typeof v === "number" ? PortCount : PORTS_SHAPE),
  pull_request: (v) => (isRecord(v) ? PullRequestConfig.onDeepUndeclaredKey("reject") : undefined),
  notify: notifyShape,
}

function isRecord(v: unknown): boolean {
  return v !== null && typeof v === "object" && !Array.isArray(v)
}

/** arktype's problems, each with its path from the top of flow.yaml. */
function problems(errors: InstanceType<typeof type.errors>, data: unknown, base: KeyPath = []): Problem[] {
  return [...errors].flatMap((e) => {
    // Spread first: arktype's path is an Array subclass whose `map` of an empty path makes [0] (its constructor takes items).
    const path: KeyPath = [...base, ...[...e.path].map((k) => (typeof k === "number" ? k : String(k)))]
    // (A union of a number and a list fails as a predicate; a nested call's own problems are final.)
    const unknownKey = e.code === "predicate" && e.expected === "removed"
    const shape =
      base.length === 0 && path.length === 1 && (e.code === "union" || (e.code === "predicate" && !unknownKey)) ? SHAPES[String(path[0])] : undefined
    const value = shape ? (data as Record<string, unknown>)[String(path[0])] : undefined
    // A union stops at the first problem of each shape: the shape written is checked again for all of them.
    const out = shape?.(value)?.(value)
    if (out instanceof type.errors) return problems(out, value, path)
    // A union's problem already names its field; the others are said of the field's whole path.
    const message = e.code === "union" ? e.message : `${path.length ? fieldName(path) : "flow.yaml"} ${e.problem}`
    return [{ path, message, unknown: unknownKey }]
  })
}

/** `verify[0].timeout` */
function fieldName(path: KeyPath): string {
  return path.map((k, i) => (typeof k === "number" ? `[${k}]` : i === 0 ? k : `.${k}`)).join("")
}

/**
 * Every problem of flow.yaml in file order, each at its position: an unknown field with the closest known
 * one, a bad value in words. Where a field takes one of two shapes (verify: an entry or a list; pull_request:
 * true or a mapping), the problems of the shape written are told, not "or it must be an array".
 */
function configFindings(errors: InstanceType<typeof type.errors>, data: unknown, parsed: ParsedForPositions): Finding[] {
  const findings = problems(errors, data).map(({ path, message, unknown }): Finding => {
    const position = positionOf(parsed, path, unknown)
    if (!unknown) return { severity: "error", message, ...position }
    const fields = fieldsAt(path.slice(0, -1))
    const near = closest(String(path.at(-1)), fields)
    return {
      severity: "error",
      message: `unknown field '${fieldName(path)}'`,
      ...position,
      hint: near ? `did you mean '${near}'?` : `the fields here: ${fields.join(", ")}`,
    }
  })
  return findings.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0))
}

export type PublishSettings = {
  /** the git remote to push to (default origin) */
  remote: string
  /** push the merge target after each merge */
  push: boolean
  /** push each task's branch and open a pull request against `base` (default: the merge target) */
  pullRequest?: { base?: string; draft: boolean }
}

/** flow.yaml's push and pull-request settings, in the shape the run uses. */
export function publishSettings(config: FlowConfig): PublishSettings {
  const pr = config.pull_request
  return {
    remote: config.remote ?? "origin",
    push: config.push ?? false,
    pullRequest: pr ? { base: pr === true ? undefined : pr.base, draft: pr === true ? false : (pr.draft ?? false) } : undefined,
  }
}
