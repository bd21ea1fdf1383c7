// The headless log: one timestamped plain line per event, for CI, scripts and `flow run --headless`; the
// terminal UI shows the same words (agentLine in its panes, logLine in its footer).
import type { AgentEvent } from "../agents/types"
import { formatDuration } from "../cli/duration"
import type { RunEvent } from "./events"

const MAX = 200

/** The event as a log line, stamped with the local time it happened at; times it names are read against that moment. */
export function logLine(event: RunEvent, at: Date): string | undefined {
  const line = describe(event, at)
  return line === undefined ? undefined : `${hms(at)} ${line}`
}

function describe(e: RunEvent, at: Date): string | undefined {
  switch (e.type) {
    case "run-start":
      return `run: ${e.tasks} task${e.tasks === 1 ? "" : "s"}, agents ${e.agents.join(", ")}, merging into ${e.target}`
    case "task-start":
      return `${e.taskId}: ${e.resumed ? "resumed" : "started"} by ${e.agent} on ${e.branch}`
    case "step-start":
      return `${e.taskId}: step ${e.stepId}${e.session ? ` (session ${e.session})` : ""}`
    case "agent": {
      const line = agentLine(e.event)
      return line === undefined ? undefined : `${e.taskId} | ${line}`
    }
    case "task-assigned":
    case "task-end":
    case "check-result": // the queue's own lines say how a check went; its output is the evidence's
      return undefined
    case "hook-start":
      return `${e.taskId}: ${e.hook} '${clip(e.command)}'`
    case "hook-output":
      return `${e.taskId} | ${e.hook}: ${clip(e.line)}`
    case "hook-end":
      if (e.ok) return `${e.taskId}: ${e.hook} done after ${e.seconds.toFixed(1)} s`
      return `${e.taskId}: ${e.hook} ${e.timedOut ? "timed out and was stopped" : `failed (exit ${e.code})`} after ${e.seconds.toFixed(1)} s`
    case "prepared": {
      const parts = [
        e.copied.length ? `copied ${e.copied.join(", ")}` : "",
        e.refused.length ? `not copied: ${e.refused.join(", ")}` : "",
        e.ports.length ? `ports ${e.ports.map((p, i) => `${i === 0 ? "FLOW_PORT" : `FLOW_PORT_${i}`}=${p}`).join(", ")}` : "",
      ].filter(Boolean)
      return parts.length ? `${e.taskId}: ${clip(parts.join("; "))}` : undefined
    }
    case "agent-exit":
      return `${e.taskId}: ${e.agent} exited ${e.code} after ${e.seconds.toFixed(1)} s`
    case "status":
      return `${e.taskId}: ${e.from} → ${e.to}${e.reason ? ` (${e.reason})` : ""}`
    case "merge":
      return `${e.taskId}: merged ${e.branch} into ${e.target} (${e.commit.slice(0, 10)})`
    case "merge-failed":
      return `${e.taskId}: merge of ${e.branch} into ${e.target} failed: ${clip(e.reason)}`
    case "queue":
      return `${e.taskId}: queue ${e.target} #${e.position} ${e.state}${e.machine ? ` on ${e.machine}` : ""}${e.seconds !== undefined ? ` after ${e.seconds.toFixed(1)} s` : ""}${e.reason ? ` (${clip(e.reason)})` : ""}`
    case "queue-end":
      return e.outcome === "landed"
        ? `${e.taskId}: landed ${e.seconds.toFixed(1)} s after its work was done (${e.checks} check${e.checks === 1 ? "" : "s"}${e.thrown ? `, ${e.thrown} thrown away` : ""})`
        : undefined
    case "queue-report":
      return queueReportLine(e)
    case "check":
      return `${e.taskId}: ${e.state === "checking" ? "checking" : e.state} ${e.of}'s candidate into ${e.target}${e.seconds !== undefined ? ` after ${e.seconds.toFixed(1)} s` : ""}${e.reason ? ` (${clip(e.reason)})` : ""}`
    case "fix":
      return `${e.taskId}: sent back to its agent (attempt ${e.attempt} of ${e.of}): ${clip(e.reason)}`
    case "published":
      return `${e.taskId}: ${e.what === "pull-request" ? `pull request ${e.detail}` : e.detail}`
    case "publish-failed":
      return `${e.taskId}: ${clip(e.detail)}`
    case "question-wait":
      return `${e.taskId}: waiting for the answer to ${e.questions.join(", ")} before the agent goes on: 'flow answer ${e.questions[0]} <text>'`
    case "question-answered":
      return `${e.taskId}: ${e.questions.join(", ")} answered; resuming the session`
    case "checkpoint":
      return `${e.taskId}: checkpoint waiting for review: 'flow done ${e.taskId}' to continue, 'flow block ${e.taskId} <reason>' to stop`
    case "retry":
      return `${e.taskId}: retry ${e.attempt}: ${e.reason}`
    case "budget":
      return `${e.taskId}: budget: it ${e.text}; its work is committed and ${e.question} asks for more: 'flow answer ${e.question} <amount>' goes on, 'flow answer ${e.question} block' blocks it`
    case "budget-raised":
      return `${e.taskId}: ${e.question} answered: ${e.text}; its agent goes on in the same session`
    case "parked":
      return `${e.taskId}: ${e.agent}'s usage limit is reached (${clip(e.reason)}): ${e.to ? `the task moves to ${e.to}` : `parked until ${clockTime(new Date(e.until), at)}${backoffNote(e)}, then resumed in the same session`}`
    case "waiting":
      return `run: ${e.reason}`
    case "notice":
      return `${e.taskId ?? "run"}: ${e.text}`
    case "run-end":
      return `run: ${e.interrupted ? "stopped" : "finished"} after ${e.seconds} s: ${e.done} done, ${e.remaining} not done${e.blocked.length ? `, blocked: ${e.blocked.join(", ")}` : ""}${e.unassignable.length ? `, for agents not in this run: ${e.unassignable.map((u) => `${u.id} (${u.agent})`).join(", ")}` : ""}`
  }
}

/** What an agent said or did, on one line (no task, no time); undefined for events not worth a line. */
export function agentLine(ev: AgentEvent): string | undefined {
  if (ev.type === "text") return ev.text.trim() ? clip(ev.text) : undefined
  if (ev.type === "tool") return `tool ${ev.name}${ev.detail ? `: ${clip(ev.detail)}` : ""}`
  if (ev.type === "error") return `error: ${clip(ev.message)}`
  if (ev.type === "notice") return clip(ev.message)
  if (ev.type === "usage") {
    const parts = [
      ev.inputTokens !== undefined ? `${ev.inputTokens} in` : "",
      ev.outputTokens !== undefined ? `${ev.outputTokens} out` : "",
      ev.costUsd !== undefined ? `$${ev.costUsd.toFixed(4)}` : "",
    ].filter(Boolean)
    return parts.length ? `tokens ${parts.join(", ")}` : undefined
  }
  return undefined
}

const two = (n: number) => String(n).padStart(2, "0")

/** `14:05:09` in the person's time zone, as every time flow shows is (files keep UTC). */
function hms(at: Date): string {
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`
}

/**
 * `14:05`, or `Nov 26 14:05` when not on the day of `now`: when a parked agent goes on, as the run screen and
 * `flow agents` say it. `now` is the caller's moment (an event's, a report's), never read here.
 */
export function clockTime(at: Date, now: Date): string {
  const hm = `${two(at.getHours())}:${two(at.getMinutes())}`
  if (at.toDateString() === now.toDateString()) return hm
  return `${at.toLocaleString("en-US", { month: "short" })} ${at.getDate()} ${hm}`
}

/** ` (no reset time named: back-off 4m, limit 3 in a row)`: why a parked agent waits as long as it does. */
function backoffNote(e: { backoffMs?: number; streak?: number }): string {
  if (e.backoffMs === undefined) return ""
  return ` (no reset time named: back-off ${formatDuration(e.backoffMs)}${(e.streak ?? 1) > 1 ? `, limit ${e.streak} in a row` : ""})`
}

function clip(text: string): string {
  const one = text.replace(/\s+/g, " ").trim()
  return one.length > MAX ? `${one.slice(0, MAX - 1)}…` : one
}

/** The queue report's line (docs/RUN.md, "Merge queue"): service levels, then what bisections cost when any did. */
function queueReportLine(e: Extract<RunEvent, { type: "queue-report" }>): string {
  return (
    `run: merge queue into ${e.target}: ${e.landed} landed${e.failed ? `, ${e.failed} failed` : ""}; done to landed p50 ${e.p50.toFixed(1)} s, ` +
    `p95 ${e.p95.toFixed(1)} s, longest ${e.longest.seconds.toFixed(1)} s (${e.longest.taskId}); ${e.checksPerMerge.toFixed(2)} checks per merge, ${e.thrown} thrown away` +
    (e.bisections ? `; the failures cost ${e.bisections} bisection step${e.bisections === 1 ? "" : "s"}` : "")
  )
}
