// `flow validate`'s warning for a task whose prompt is longer than the CLI of an agent that may take it reads
// (lib/agents/prompt-limit.ts): said before a run, where the run would block the task at its first launch.
import { adapterFor } from "../agents"
import { promptBytes, size } from "../agents/prompt-limit"
import type { PromptLimit } from "../agents/types"
import type { Project } from "../cli/project"
import type { Finding } from "../model/json-shapes"
import { indexTasks, type TaskFile } from "../model/task-index"
import { projectTaskPrompt, readGuidelines } from "../prompts/project-prompt"
import { openExistingState } from "../state/state"
import { type AgentConfig, loadConfig } from "../config/config"
import { walkTasks } from "../validation/validate"
import { parseForPositions, positionOf } from "../validation/yaml-position"

/** What a prompt holds besides the file's text, the guidelines and the answers: flow's own words, a line per dependency. */
const FIXED_BYTES = 64 * 1024
const PER_TASK_BYTES = 256

type Limited = { agent: AgentConfig; limit: PromptLimit }

/**
 * A warning for each open task whose whole prompt (as `flow prompt` builds it, without the worktree's
 * prepared files) is longer than the CLI of an agent in flow.yaml that may take it can read. `text` is the
 * graph's text, valid; its findings' lines are lines of it. Prompts are built only when the file, the
 * guidelines and the answers together could make one that long: a usual graph costs validate nothing.
 */
export async function promptFindings(project: Project, text: string): Promise<Finding[]> {
  const agents = limitedAgents(project.dir)
  if (agents.length === 0) return []
  const data = Bun.YAML.parse(text) as TaskFile
  const visited = walkTasks(data.tasks)
  using db = await openExistingState(project)
  const answers = db ? (await db.questions.all()).reduce((n, q) => n + promptBytes(`${q.text}${q.answer ?? ""}`), 0) : 0
  const most = promptBytes(text) + promptBytes(readGuidelines(project.dir) ?? "") + answers + FIXED_BYTES + PER_TASK_BYTES * visited.length
  if (most <= Math.min(...agents.map((a) => a.limit.bytes))) return []

  const index = indexTasks(data)
  const parsed = parseForPositions(text)
  const findings: Finding[] = []
  for (const { node, path } of visited) {
    const task = index.get(String(node.id))?.task
    if (!task || task.status === "done" || task.subtasks?.length || task.checkpoint === true) continue // never run by an agent
    const takers = agents.filter((a) => task.agent_name === undefined || task.agent_name === a.agent.name)
    if (takers.length === 0) continue
    const bytes = promptBytes(await projectTaskPrompt(project, index, task.id, { db, prepared: { copied: [], ports: 0 } }))
    const over = takers.filter((a) => bytes > a.limit.bytes)
    if (over.length === 0) continue
    const names = over.map((a) => a.agent.name)
    const clis = [...new Map(over.map((a) => [a.agent.cli, `${a.agent.cli}: ${size(a.limit.bytes)}, as ${a.limit.why}`])).values()]
    findings.push({
      severity: "warning",
      message: `Task '${task.id}': its prompt is ${size(bytes)}, more than ${names.length === 1 ? "agent" : "agents"} ${list(names)} can take (${clis.join("; ")})`,
      task_id: task.id,
      ...positionOf(parsed, [...path, "id"]),
      hint: `shorten what its prompt holds ('flow prompt ${task.id}' shows it: the instructions, the notes, its dependencies' notes)${
        over.length < agents.length ? ", or give it to another agent with agent_name" : ""
      }; the run blocks it before its agent starts`,
    })
  }
  return findings
}

/** flow.yaml's agents whose CLI has a known limit; none when flow.yaml is bad (its own errors are other commands'). */
function limitedAgents(dir: string): Limited[] {
  try {
    return (loadConfig(dir).agents ?? []).flatMap((agent) => {
      if (agent.cli === "script") return []
      const limit = adapterFor(agent.cli, { command: agent.command }).promptLimit
      return limit ? [{ agent, limit }] : []
    })
  } catch {
    return []
  }
}

/** `a`, `a and b`, `a, b and c`. */
function list(items: readonly string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(", ")} and ${items.at(-1)}` : items[0]
}
