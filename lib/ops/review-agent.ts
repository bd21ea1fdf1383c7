// Agent reviewers (docs/REVIEW.md, "Agent reviewers"): when a candidate whose flow.yaml `review` names an agent
// waits at the head of its queue, that agent gets a fresh session of its CLI with the reviewer's prompt, and
// decides with `flow review <id> approve|changes` as a person does. Once per commit of the task's branch: a
// fix round's new commit is reviewed again. A reviewer that exits without deciding leaves the review to a
// person (a `review.agent` event the gate reads); nothing lands unreviewed.
import { mkdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import type { Project } from "../cli/project"
import { RUN_ID } from "../cli/run-id"
import { Exit, FlowError } from "../cli/errors"
import type { AgentConfig, FlowConfig } from "../config/config"
import { sandboxOf, withSandbox } from "../config/sandbox-config"
import { type ReviewConfig, reviewerAgents, reviewerOf } from "../config/review-config"
import { run as runProcess } from "../cli/proc"
import { decisionOn, phaseOf } from "../landing/review-gate"
import { indexTasks } from "../model/task-index"
import { shellBlocks } from "../agents/script-agent"
import { reviewPrompt } from "../prompts/review-prompt"
import type { EventBus } from "../run/events"
import { evidenceLines } from "../run/evidence-text"
import { runTurn } from "../run/worker/agent-runner"
import { turnLimit } from "../run/worker/turn-limit"
import { formatDuration } from "../cli/duration"
import type { RunState } from "../state/run-state"
import type { TaskStore } from "../store/store"
import { openStore } from "../store/open"
import { reviewShow } from "./review"

export type ReviewAgents = {
  project: Project
  bus: EventBus
  db: RunState
  store: TaskStore
  /** flow.yaml's agents: the reviewers among them */
  agents: readonly AgentConfig[]
  signal: AbortSignal
  /** flow.yaml's task_timeout in ms: how long a reviewer's turn may run, as an author's; undefined: no limit */
  timeoutMs?: number
}

/**
 * Starts the agent reviewer of every review the run's queues say waits for one; returns what waits for the
 * reviews under way to end (the run's stop ends them: the next run's queue starts them again).
 */
export function reviewAgents(o: ReviewAgents): () => Promise<void> {
  const started = new Set<string>()
  const running = new Set<Promise<void>>()
  const unsubscribe = o.bus.subscribe((event) => {
    if (event.type !== "waiting" || !event.reviewer || !event.taskId) return
    const taskId = event.taskId
    const review = reviewOnce(o, taskId, event.reviewer, started).catch((e: Error) =>
      o.bus.emit({ type: "notice", taskId, text: `the review by agent ${event.reviewer} could not start: ${e.message}` }),
    )
    running.add(review)
    void review.finally(() => running.delete(review))
  })
  return async () => {
    unsubscribe()
    await Promise.allSettled([...running])
  }
}

/**
 * One review by agent `name` of the task's waiting commit, unless this run started it already. Whatever ends it
 * without a decision (the agent forgot, failed, or could not start) leaves the review to a person.
 */
async function reviewOnce(o: ReviewAgents, taskId: string, name: string, started: Set<string>): Promise<void> {
  const shown = await reviewShow(o.project, taskId)
  const head = shown.report.review.head
  const key = `${taskId}@${head}`
  if (shown.report.review.reviewer !== name || started.has(key)) return
  started.add(key)
  const ended = await reviewTurn(o, taskId, name, shown).catch((e: Error) => ({ code: 1, error: e.message }))
  if (o.signal.aborted) return
  const d = await decisionOn(o.db, taskId, head)
  if (d) {
    const said = d.decision === "approve" ? "approved it" : `asked for changes: ${d.comment}`
    o.bus.emit({ type: "notice", taskId, text: `agent ${name} ${said}` })
    return
  }
  await o.db.events.append({ kind: "review.agent", task_id: taskId, agent: name, data: { head, agent: name, code: ended.code } })
  const why = ended.error ? `: ${ended.error}` : ""
  o.bus.emit({
    type: "notice",
    taskId,
    text: `agent ${name} exited (code ${ended.code}${why}) without deciding on its review: it waits for a person now ('flow review ${taskId}' shows it)`,
  })
}

/** The reviewer's turn: a fresh session of its CLI in a scratch folder, with the reviewer's prompt. */
async function reviewTurn(o: ReviewAgents, taskId: string, name: string, { report, repo }: Awaited<ReturnType<typeof reviewShow>>) {
  const agent = o.agents.find((a) => a.name === name)
  if (!agent) throw new Error(`flow.yaml has no agent '${name}'`)
  const task = (indexTasks((await o.store.read()).data).get(taskId) as { task: { id: string; title: string; instructions?: string } }).task
  const author = report.evidence?.agent ?? null
  const prompt = reviewPrompt({ report, task, author, evidence: report.evidence ? evidenceLines(report.evidence) : [], repo })
  const cwd = await scratch(o.project, taskId)
  o.bus.emit({ type: "notice", taskId, text: `review by agent ${name} (${agent.cli}) of ${report.review.head.slice(0, 12)} starts` })
  const limit = turnLimit(
    o.timeoutMs,
    o.signal,
    async () => 0,
    () => o.bus.emit({ type: "notice", taskId, text: `task_timeout: reviewer ${name} ran for ${formatDuration(o.timeoutMs!)}: stopping it` }),
  )
  return runTurn({
    agent,
    prompt,
    // The script agent reviews with the task's ```sh review blocks (offline, as its ```sh fix blocks fix).
    script: shellBlocks(task.instructions ?? "", "review")
      .map((b) => `\`\`\`sh\n${b}\`\`\`\n`)
      .join("\n"),
    cwd,
    env: reviewerEnv(o.project, name, taskId),
    signal: limit.signal,
    onEvent: (event) => o.bus.emit({ type: "agent", taskId, agent: name, event }),
  }).finally(() => {
    limit.clear()
    rmSync(cwd, { recursive: true, force: true })
  })
}

/**
 * The reviewer's working folder: an empty repository of its own under .flow (a CLI such as Codex wants one),
 * never the task's worktree, which its author may still write; the reviewer reads the candidate from its prompt
 * and from git, read-only.
 */
async function scratch(project: Project, taskId: string): Promise<string> {
  const dir = join(project.stateDir, "reviews", taskId)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  await runProcess(["git", "init", "-q", dir], { cwd: dir })
  return dir
}

/** The reviewer's environment: the project and its own name (its decision's `by`), `flow` on its PATH; no task of its own. */
function reviewerEnv(project: Project, name: string, taskId: string): Record<string, string> {
  return {
    FLOW_PROJECT: project.dir,
    FLOW_AGENT: name,
    FLOW_REVIEW_TASK: taskId,
    FLOW_RUN_ID: RUN_ID,
    PATH: `${join(project.stateDir, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  }
}

/**
 * The agents flow.yaml's `review` names, as the run starts them. Refused rather than ignored: a sandbox (its own
 * or flow.yaml's, which flow does not build around a reviewer yet) and `mcp: true` (a reviewer decides with the
 * commands its prompt names).
 */
export function reviewersOf(config: FlowConfig): AgentConfig[] {
  const names = reviewerAgents(config.review)
  const reviewers = withSandbox(config.agents ?? [], config.sandbox).filter((a) => names.has(a.name))
  for (const r of reviewers) {
    const what = sandboxOf(r) ? "runs in a sandbox" : r.mcp ? "has 'mcp: true'" : undefined
    if (what)
      throw new FlowError(
        `agent ${r.name} reviews (flow.yaml review) and ${what}, which flow does not give a reviewer yet`,
        Exit.invalid,
        r.mcp
          ? `remove 'mcp: true' from agent ${r.name}: it decides with 'flow review <id> approve|changes' (docs/REVIEW.md, "Agent reviewers")`
          : `give agent ${r.name} 'sandbox: false': it reviews in a scratch folder of its own and changes nothing (docs/REVIEW.md, "Agent reviewers")`,
      )
  }
  return reviewers
}

/**
 * A run's authors: its agents less the reviewers flow.yaml's `review` names (a reviewer never works on a task,
 * so it never reviews its own work). Refused: no author left, or a task whose `agent_name` pins it to a reviewer.
 */
export async function authorsOf(agents: AgentConfig[], review: ReviewConfig | undefined, project: Project): Promise<AgentConfig[]> {
  const reviewers = reviewerAgents(review)
  if (reviewers.size === 0) return agents
  const authors = agents.filter((a) => !reviewers.has(a.name))
  if (authors.length === 0)
    throw new FlowError(
      `every agent of this run reviews (flow.yaml review: ${[...reviewers].join(", ")}): none is left to work on the tasks`,
      Exit.invalid,
      'add an agent that works on tasks to flow.yaml\'s agents, or review with another agent (docs/REVIEW.md, "Agent reviewers")',
    )
  const index = indexTasks((await (await openStore(project)).read()).data)
  for (const entry of index.values()) {
    const pinned = entry.task.agent_name
    if (pinned === undefined || !reviewers.has(pinned) || entry.task.status === "done") continue
    const own = reviewerOf(review, entry.task.id, phaseOf(index, entry)) === pinned
    throw new FlowError(
      own
        ? `task '${entry.task.id}' would be reviewed by its own author: its agent_name is '${pinned}', and flow.yaml's review names '${pinned}' for it`
        : `task '${entry.task.id}' has agent_name '${pinned}', an agent flow.yaml's review names as a reviewer: a reviewer works on no task`,
      Exit.invalid,
      "the reviewer must be a different agent from the author: change the task's agent_name or flow.yaml's review (docs/REVIEW.md, \"Agent reviewers\")",
    )
  }
  return authors
}
