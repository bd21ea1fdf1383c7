// flow.yaml: the project's agents and run settings, checked by arktype like tasks.yaml.
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { type } from "arktype"
import { Exit, FlowError } from "../cli/errors"
import { formatFinding } from "./findings"
import { parseForPositions, positionOf, syntaxErrors } from "./yaml-position"

import { AGENT_NAME } from "../cli/agent-name"

export { AGENT_NAME }

export const AgentConfig = type({
  name: AGENT_NAME,
  cli: "string > 0",
  "model?": "string",
  /** extra arguments passed to the CLI */
  "args?": "string[]",
  /** for cli: command, the argv template with {prompt}, {session}, {model}, {cwd} */
  "command?": "string[]",
})
export type AgentConfig = typeof AgentConfig.infer

/** The project's check, run on every merge before the target moves (docs/RUN.md, "The merge queue"). */
export const VerifyConfig = type({
  /** the repository it applies to, as in a task's `repo` (default: every repository not named by another entry) */
  "repo?": "string > 0",
  /** a shell command line (run by `sh -c` in the merge's scratch worktree) or an argv array */
  command: type("string > 0").or(type("string > 0").array().atLeastLength(1)),
  /** how long it may run before it counts as failed: 90s, 20m, 1h (default 20m) */
  "timeout?": /^(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?$/,
})
export type VerifyConfig = typeof VerifyConfig.infer

export const FlowConfig = type({
  "agents?": AgentConfig.array(),
  /** how many agents work at once (default: the number of agents) */
  "parallelism?": "number.integer >= 1",
  /** the default repository of tasks without `repo`, relative to the project folder */
  "repo?": "string",
  /** the branch finished tasks are merged into (default: the repository's current branch) */
  "merge_target?": "string",
  /** how many times a task whose agent failed is tried again before it is blocked (default 1) */
  "retries?": "number.integer >= 0",
  /** the check a merge must pass before the target branch moves: one, or one per repository */
  "verify?": VerifyConfig.or(VerifyConfig.array()),
  /** how many times a task is sent back to its agent after a failed check or a merge conflict (default 2) */
  "fix_attempts?": "number.integer >= 0",
  /** how many candidates of a target's merge queue are checked at once, each on top of those ahead (default 8; 1: strictly serial) */
  "queue_depth?": "number.integer >= 1",
  /** an agent that says done having changed nothing: allow (done, with a note saying so; the default) or block */
  "empty_done?": "'allow' | 'block'",
  /** the git remote that push and pull_request use (default origin) */
  "remote?": /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
  /** push the merge target to the remote after each merge */
  "push?": "boolean",
  /** push each finished task's branch and open a pull request with gh (true, or { base, draft }) */
  "pull_request?": type("boolean").or({ "base?": "string > 0", "draft?": "boolean" }),
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
  const out = FlowConfig.onUndeclaredKey("reject")(data)
  if (out instanceof type.errors) {
    const e = out[0]
    const position = positionOf(
      parsed,
      [...e.path].map((k) => (typeof k === "number" ? k : String(k))),
      e.code === "predicate",
    )
    throw new FlowError(
      `flow.yaml is invalid:\n${formatFinding({ severity: "error", message: e.message, ...position }, file, text).trimEnd()}`,
      Exit.invalid,
      "see docs/RUN.md for the fields of flow.yaml",
    )
  }
  const names = new Set<string>()
  for (const agent of out.agents ?? []) {
    if (names.has(agent.name)) throw new FlowError(`flow.yaml names the agent '${agent.name}' twice`, Exit.invalid, "give every agent its own name")
    names.add(agent.name)
  }
  const verifies = out.verify === undefined ? [] : Array.isArray(out.verify) ? out.verify : [out.verify]
  const repos = new Set<string | undefined>()
  for (const v of verifies) {
    if (repos.has(v.repo))
      throw new FlowError(
        `flow.yaml has two 'verify' entries for ${v.repo === undefined ? "the default repository (no 'repo')" : `repo '${v.repo}'`}`,
        Exit.invalid,
        "keep one check per repository",
      )
    repos.add(v.repo)
    if (v.timeout !== undefined && !/\d/.test(v.timeout))
      throw new FlowError(
        `flow.yaml: verify timeout '${v.timeout}' is not a duration`,
        Exit.invalid,
        "write 90s, 20m, 1h or combined largest first, like 1h30m",
      )
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
