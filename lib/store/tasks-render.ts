// Tasks → the text of a new tasks.yaml, in the layout people write by hand: a comment above each phase,
// a blank line between tasks, ids in flow lists, instructions as literal blocks. Every scalar goes through
// the `yaml` package's quoting, and the result is read back and compared before anyone writes it.
import { basename } from "node:path"
import { stringify } from "yaml"
import { FlowError } from "../cli/errors"
import { renderScalar } from "./task-edit"
import type { Step, Task } from "../model/task-index"

const TASK_ORDER = [
  "id",
  "title",
  "status",
  "phase",
  "agent_name",
  "repo",
  "worktree",
  "checkpoint",
  "depends_on",
  "validation_task_id",
  "files",
  "instructions",
  "acceptance_criteria",
  "steps",
  "subtasks",
  "ai_notes",
  "started_at",
  "completed_at",
] as const
const STEP_ORDER = ["id", "instruction", "acceptance_criteria", "status", "started_at", "completed_at"] as const

// Double quotes keep a string with line breaks on one line, where a plain scalar would fold onto the next.
const ONE_LINE = {
  collectionStyle: "flow",
  lineWidth: 0,
  defaultStringType: "QUOTE_DOUBLE",
  defaultKeyType: "PLAIN",
  doubleQuotedMinMultiLineLength: Number.MAX_SAFE_INTEGER,
} as const

function generatedHeader(plan: string): string {
  return `# Made by 'flow generate' from ${plan}. Generating again rewrites it from the plan and keeps\n# the status, notes and step progress of every task whose id is still there.\n`
}

/**
 * The tasks.yaml text for `tasks`, with a `# Phase <n>: <title>` comment where a new phase starts. With
 * `phaseList`, a top-level `phases:` list of every title in `phases` comes first (kept from a file that had one).
 * The header names `plan`, the file the tasks were made from.
 */
export function renderTasks(tasks: readonly Task[], phases: ReadonlyMap<number, string>, phaseList = false, plan = "plan.md"): string {
  const out = [generatedHeader(basename(plan))]
  if (phaseList) {
    out.push("phases:\n")
    for (const [n, title] of [...phases].sort((a, b) => a[0] - b[0])) out.push(`  - number: ${n}\n    title: ${renderScalar(oneLine(title))}\n`)
  }
  out.push("tasks:\n")
  let phase: number | undefined
  tasks.forEach((task, i) => {
    const starts = task.phase !== undefined && task.phase !== phase
    if (i > 0) out.push("\n")
    if (starts) {
      phase = task.phase
      const title = phases.get(task.phase!)
      out.push(`  # Phase ${task.phase}${title ? `: ${oneLine(title)}` : ""}\n`)
    }
    out.push(renderRecord(task as Record<string, unknown>, TASK_ORDER, "  "))
  })
  const text = out.join("")
  const reread = Bun.YAML.parse(text) as { tasks: unknown }
  if (!Bun.deepEquals(reread.tasks, tasks)) {
    throw new FlowError(
      "internal error: the generated tasks.yaml does not read back as the tasks it was made of; nothing was written",
      undefined,
      `please report this with ${basename(plan)}`,
    )
  }
  return text
}

function renderRecord(record: Record<string, unknown>, order: readonly string[], indent: string): string {
  const keys = [...order.filter((k) => k in record), ...Object.keys(record).filter((k) => !order.includes(k))]
  const inner = `${indent}  `
  return keys
    .map((key, i) => {
      const lead = i === 0 ? `${indent}- ` : inner
      return `${lead}${key}:${renderValue(key, record[key], inner)}`
    })
    .join("")
}

function renderValue(key: string, value: unknown, indent: string): string {
  const known = Array.isArray(value) && (key === "steps" || key === "subtasks" || value.every((v) => typeof v === "string"))
  // A key flow does not know, kept from the old file, may hold any YAML: one line in flow style reads back the same.
  if (value !== null && typeof value === "object" && !known) return ` ${stringify(value, ONE_LINE).trimEnd()}\n`
  if (Array.isArray(value)) {
    if (value.length === 0) return " []\n"
    if (key === "steps") return `\n${value.map((s) => renderRecord(s as Step, STEP_ORDER, `${indent}  `)).join("")}`
    if (key === "subtasks") return `\n${value.map((t) => renderRecord(t as Task, TASK_ORDER, `${indent}  `)).join("")}`
    if (key === "depends_on" || key === "files") return ` [${value.map((v) => renderScalar(v as string)).join(", ")}]\n`
    return `\n${value.map((v) => `${indent}  - ${renderString(v, `${indent}    `)}`).join("")}`
  }
  if (typeof value === "string") return ` ${renderString(value, `${indent}  `)}`
  return ` ${renderScalar(value as string | number | boolean)}\n`
}

/** A string value: a literal block for multi-line text, else one quoted-if-needed line. Ends with a newline. */
function renderString(value: string, indent: string): string {
  if (!value.includes("\n")) return `${renderScalar(value)}\n`
  // A literal block cannot start with a space (it would set the indentation) or hold control characters.
  if (/^[ \t]/.test(value) || /[\x00-\x08\x0b-\x1f\x7f]/.test(value)) return `${renderScalar(value)}\n`
  const trailing = value.match(/\n*$/)![0].length
  const chomp = trailing === 0 ? "-" : trailing === 1 ? "" : "+"
  const body = value.slice(0, value.length - trailing)
  const lines = body.split("\n").map((l) => (l === "" ? "" : `${indent}${l}`))
  return `|${chomp}\n${lines.join("\n")}\n${"\n".repeat(Math.max(0, trailing - 1))}`
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim()
}
