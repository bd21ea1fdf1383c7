// A hint that tells the reader to run flow commands, kept as parts, so that each front end words the commands
// its own way: a person at a shell reads "run 'flow done api --force'", an agent on flow's MCP server reads
// "call `flow_done` with task_id "api" and force: true" (docs/MCP.md, "Errors"). The hint is written once,
// where the error is raised; only the words of a command differ.

/** An argument of a command, as its MCP tool names it: a string is a positional argument, `true` a flag. */
export type Args = Readonly<Record<string, string | true>>

/**
 * A flow command in a hint: its words after `flow` (`done`, `step done`: its tool is `flow_done`,
 * `flow_step_done`) and its arguments, positional ones in the command's order. `form` is how the hint puts it:
 * "run 'flow list'", "'flow list'" or a bare "flow list".
 */
export type Call = { command: string; args: Args; form: "run" | "quoted" | "bare" }

/** A flag on its own ("pass --force"): `force: true` to a tool. */
export type Flag = { flag: string }

export type Part = string | Call | Flag

/** How a front end says a command and a flag. */
export type Words = { call: (c: Call) => string; flag: (name: string) => string }

export class Hint {
  constructor(readonly parts: readonly Part[]) {}

  /** The hint in `words`. */
  in(words: Words): string {
    return this.parts.map((p) => (typeof p === "string" ? p : "flag" in p ? words.flag(p.flag) : words.call(p))).join("")
  }
}

/** A hint from a template: hint`finish ${id} first (${bare("step done", { step_id: id })})`. */
export function hint(text: TemplateStringsArray, ...values: Part[]): Hint {
  return new Hint(text.flatMap((s, i) => (i < values.length ? [s, values[i]!] : [s])))
}

export const run = (command: string, args: Args = {}): Call => ({ command, args, form: "run" })
export const quoted = (command: string, args: Args = {}): Call => ({ command, args, form: "quoted" })
export const bare = (command: string, args: Args = {}): Call => ({ command, args, form: "bare" })
export const flag = (name: string): Flag => ({ flag: name })

/** `flow done api --force`: the positional arguments in order, then the flags. */
export function commandLine({ command, args }: Pick<Call, "command" | "args">): string {
  const values = Object.values(args)
  const flags = Object.keys(args).filter((k) => args[k] === true)
  return ["flow", command, ...values.filter((v) => v !== true), ...flags.map((f) => `--${f}`)].join(" ")
}

/** A person's words at a shell: what `flow` prints. */
export const SHELL: Words = {
  call: (c) => (c.form === "run" ? `run '${commandLine(c)}'` : c.form === "quoted" ? `'${commandLine(c)}'` : commandLine(c)),
  flag: (name) => `--${name}`,
}

/** How an agent is told to call a tool, in hints and prompts alike: `flow_done` with task_id "api" and force: true. */
export function toolCall(tool: string, args: Args = {}): string {
  const named = Object.entries(args).map(([k, v]) => (v === true ? `${k}: true` : `${k} "${v}"`))
  return `\`${tool}\`${named.length > 0 ? ` with ${named.join(" and ")}` : ""}`
}

/**
 * An MCP client's words: a command as its tool (`toolOf` names it, undefined for a command without one, which
 * keeps the shell's words: nothing else does it), run as "call".
 */
export function toolWords(toolOf: (command: string) => string | undefined): Words {
  return {
    call: (c) => {
      const tool = toolOf(c.command)
      if (tool === undefined) return SHELL.call(c)
      return `${c.form === "run" ? "call " : ""}${toolCall(tool, c.args)}`
    },
    flag: (name) => `${name}: true`,
  }
}
