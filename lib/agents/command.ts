// The generic agent: any program, its argv written as a template in flow.yaml, its stdout shown as text.
import { Exit, FlowError } from "../cli/errors"
import { argvLimit } from "./prompt-limit"
import type { Adapter, AgentEvent, LaunchOptions, PromptLimit } from "./types"

const PLACEHOLDERS = ["prompt", "session", "model", "cwd"] as const
type Placeholder = (typeof PLACEHOLDERS)[number]
// {session} and {model} may have no value: the elements that carry them are dropped (see commandArgv).
const OPTIONAL: readonly Placeholder[] = ["session", "model"]

/**
 * An adapter for `cli: command`. The template is argv with placeholders, e.g.
 * `["my-agent", "--prompt", "{prompt}", "--session", "{session}"]`. Every stdout line is text, except a
 * line `flow-session: <id>`, which is how such a program tells flow the session to resume; it can resume
 * when its template uses {session}.
 */
export function commandAdapter(template: readonly string[]): Adapter {
  checkTemplate(template)
  return {
    cli: "command",
    binary: template[0],
    install: "check the first word of the agent's command: template in flow.yaml",
    // flow knows nothing of the program's folders or variables: the agent's `sandbox.env` names what it needs.
    sandbox: { home: [], env: [] },
    testedVersion: "n/a (any program)",
    canResume: template.some((element) => element.includes("{session}")),
    promptLimit: commandPromptLimit(template),
    argv: (opts) => commandArgv(template, opts),
    parseLine: commandLine,
  }
}

/**
 * The prompt is part of an argument (or of several): the longest such argument, `{prompt}` filled in, must
 * fit Linux's cap on one argument, with every other placeholder's value counted as empty.
 */
function commandPromptLimit(template: readonly string[]): PromptLimit {
  const limits = template
    .filter((element) => element.includes("{prompt}"))
    .map((element) => {
      const times = element.split("{prompt}").length - 1
      const { bytes, why } = argvLimit(element.replace(/\{\w+\}/g, ""))
      return { bytes: Math.floor(bytes / times), why }
    })
  return limits.reduce((a, b) => (b.bytes < a.bytes ? b : a))
}

const SESSION_LINE = /^flow-session:\s*(\S+)\s*$/

function commandLine(line: string): AgentEvent[] {
  if (line.trim() === "") return []
  const session = SESSION_LINE.exec(line.trim())
  if (session) return [{ type: "session", id: session[1] }]
  return [{ type: "text", text: line.replace(/\r?\n$/, "") }]
}

/**
 * Fills the template. An element that uses {session} (or {model}) when there is none is dropped; when that
 * element is nothing but the placeholder, the flag before it goes too (an element starting with `-`), so
 * `--session {session}` disappears whole and `--session={session}` disappears as one element.
 */
export function commandArgv(template: readonly string[], opts: LaunchOptions): string[] {
  const values: Record<Placeholder, string | undefined> = {
    prompt: opts.prompt,
    session: opts.sessionId || undefined,
    model: opts.model || undefined,
    cwd: opts.cwd,
  }
  const out: string[] = []
  for (const element of template) {
    const missing = OPTIONAL.find((name) => element.includes(`{${name}}`) && values[name] === undefined)
    if (missing !== undefined) {
      if (element === `{${missing}}` && out.length > 1 && out[out.length - 1].startsWith("-")) out.pop()
      continue
    }
    out.push(element.replace(/\{(prompt|session|model|cwd)\}/g, (_, name: Placeholder) => values[name] ?? ""))
  }
  return [...out, ...(opts.extraArgs ?? [])]
}

function checkTemplate(template: readonly string[]): void {
  const hint = 'write it as an argv list, e.g. command: ["my-agent", "--prompt", "{prompt}", "--session", "{session}"]'
  if (template.length === 0 || template[0].trim() === "") throw new FlowError("the command agent's template is empty", Exit.invalid, hint)
  if (/\{\w+\}/.test(template[0])) throw new FlowError(`the command agent's program '${template[0]}' must not be a placeholder`, Exit.invalid, hint)
  for (const element of template) {
    for (const [, name] of element.matchAll(/\{(\w+)\}/g)) {
      if (!(PLACEHOLDERS as readonly string[]).includes(name)) {
        throw new FlowError(
          `the command agent's template uses an unknown placeholder {${name}} in '${element}'`,
          Exit.invalid,
          `use ${PLACEHOLDERS.map((p) => `{${p}}`).join(", ")}`,
        )
      }
    }
  }
  if (!template.some((element) => element.includes("{prompt}"))) {
    throw new FlowError(
      "the command agent's template never passes the prompt",
      Exit.invalid,
      `add "{prompt}" where the program takes its instructions; ${hint}`,
    )
  }
}
