// How a question reads in the terminal in `flow questions` (the run's UI shows one line per question: lib/tui/tui.ts).
import type { Question } from "../model/json-shapes"

/** One block: a header line, the text indented by two spaces, and the answer when there is one. */
export function formatQuestion(q: Question, now: number): string {
  const head = [q.id, `task: ${q.task_id}`, ...(q.agent ? [`agent: ${q.agent}`] : []), `asked ${ago(q.asked_at, now)}`]
  if (q.answered_at) head.push(`answered ${ago(q.answered_at, now)}${q.answered_by ? ` by ${q.answered_by}` : ""}`)
  const lines = [head.join("  "), ...indent(q.text, "  ", "  ")]
  if (q.answer !== null) lines.push(...indent(q.answer, "  answer: ", "          "))
  return `${lines.join("\n")}\n`
}

function indent(text: string, first: string, rest: string): string[] {
  return text
    .replace(/\n+$/, "")
    .split("\n")
    .map((line, i) => `${i === 0 ? first : rest}${line}`.trimEnd())
}

/** `12s ago`, `5m ago`, `3h ago`, `2d ago`: the largest whole unit. */
export function ago(iso: string, now: number): string {
  const s = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000))
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`
  return `${Math.floor(s / 86_400)}d ago`
}
