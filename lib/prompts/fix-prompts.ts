// What the agent is told when its finished branch comes back: the check's output, or the conflicting files
// with the target's commits it lacks and the tasks that wrote them. docs/RUN.md, "Sent back to the agent".
import { commitsBetween } from "../git/git"
import { callVerb, flowCall } from "../agents/flow-call"
import type { Task } from "../model/task-index"
import type { Verdict } from "../landing/merge-queue"
import type { Workspace } from "../git/workspace"

type Failed = Extract<Verdict, { kind: "check" | "conflict" | "review" }>

const finishLine = (id: string, tools: boolean) =>
  `Then commit on your branch and ${callVerb(tools)} ${flowCall({ done: id }, tools, "'")}. If you cannot fix it, ${callVerb(tools)} ${flowCall({ block: id, reason: "<why>" }, tools, "'")} and a person will take over.`

/** The environment of the script agent's ```sh fix blocks. */
export function fixEnv(ws: Workspace, v: Failed): Record<string, string> {
  return {
    FLOW_FIX: v.kind,
    FLOW_TARGET: ws.target,
    FLOW_FIX_REASON: v.reason,
    FLOW_FIX_OUTPUT: v.kind === "check" ? v.output : v.kind === "review" ? v.comment : v.conflicts.join("\n"),
  }
}

/** `tools`: the agent has flow's MCP server (flow.yaml `mcp: true`), and is told to call its tools. */
export async function fixPrompt(taskId: string, ws: Workspace, v: Failed, describe: (id: string) => Promise<Task | undefined>, tools = false): Promise<string> {
  if (v.kind === "review") {
    return [
      `Your finished work on branch ${ws.branch} passed the project's check, and its reviewer asked for changes before it lands (docs/REVIEW.md):`,
      "",
      v.comment,
      "",
      `Make them on your branch ${ws.branch}, in this worktree; the reviewer sees the new work before it lands.`,
      finishLine(taskId, tools),
      "",
    ].join("\n")
  }
  if (v.kind === "check") {
    return [
      `Your finished work on branch ${ws.branch} was not merged: the merge of ${ws.branch} into ${ws.target} fails the project's check (${v.reason}).`,
      `flow ran the check on that merge, that is on ${ws.target} as it is now plus your branch. Its output, trimmed to what matters:`,
      "",
      "```",
      v.output,
      "```",
      "",
      `Fix it on your branch ${ws.branch}, in this worktree. If the failure comes from work that reached ${ws.target} after you started, merge ${ws.target} into your branch first (git merge ${ws.target}).`,
      finishLine(taskId, tools),
      "",
    ].join("\n")
  }
  const commits = await commitsBetween(ws.repo, ws.branch, ws.target).catch(() => [])
  const ids = [...new Set(commits.map((c) => /^\S+ Merge \S+: ([a-z0-9-]+)$/.exec(c)?.[1]).filter((x): x is string => x !== undefined))]
  const tasks = (await Promise.all(ids.map(describe)))
    .filter((t): t is Task => t !== undefined)
    .map((t) => {
      const text = (t.instructions ?? "").trim()
      return `- ${t.id}: ${t.title}${text ? `\n  ${(text.length > 800 ? `${text.slice(0, 800)}...` : text).split("\n").join("\n  ")}` : ""}`
    })
  return [
    `Your finished work on branch ${ws.branch} conflicts with ${ws.target}, which moved on since your branch started: ${v.reason}.`,
    ...(commits.length ? ["", `The commits on ${ws.target} your branch does not have:`, ...commits.map((c) => `- ${c}`)] : []),
    ...(tasks.length ? ["", "They come from these tasks:", ...tasks] : []),
    "",
    `Merge ${ws.target} into your branch (git merge ${ws.target}) in this worktree and resolve the conflicts so that both your task and theirs still do what they were meant to.`,
    finishLine(taskId, tools),
    "",
  ].join("\n")
}
