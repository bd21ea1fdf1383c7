// Declared options → parsed values, and the help text, from one declaration per command (its `meta`).
import { parseArgs } from "node:util"
import { usage } from "./errors"

export type OptionSpec = {
  type: "string" | "boolean"
  short?: string
  default?: string | boolean
  multiple?: boolean
  /** what the option does, for --help */
  help: string
  /** the value's placeholder in --help, for string options */
  arg?: string
}

export type Meta = {
  /** `flow list [<status>] [--json]` */
  usage: string
  /** paragraphs shown under the usage line */
  description?: string
  options: Record<string, OptionSpec>
}

export type Command = {
  meta: Meta
  // biome-ignore lint/suspicious/noConfusingVoidType: a command that returns nothing exits 0
  run: (ctx: import("./context").Ctx, args: string[]) => Promise<number | void>
}

/** Parses args strictly against meta.options; a bad flag is a usage error naming the command's help. */
export function parse<const M extends Meta>(meta: M, args: string[]) {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: meta.options as M["options"],
      strict: true,
      allowPositionals: true,
    })
    return { values, positionals }
  } catch (e) {
    const name = meta.usage.split(" ").slice(0, 2).join(" ")
    throw usage((e as Error).message.replace(/\. To specify a positional argument.*$/s, ""), `run '${name} --help' for its usage`)
  }
}

/** `--help` text of one command. */
export function commandHelp(summary: string, meta: Meta): string {
  const lines = [`${summary}`, "", `Usage: ${meta.usage}`]
  if (meta.description) lines.push("", meta.description.trim())
  const opts = Object.entries(meta.options)
  if (opts.length > 0) {
    lines.push("", "Options:")
    const rows = opts.map(([name, o]) => [`${o.short ? `-${o.short}, ` : "    "}--${name}${o.type === "string" ? ` <${o.arg ?? "value"}>` : ""}`, o.help])
    const width = Math.max(...rows.map(([left]) => left.length))
    for (const [left, help] of rows) lines.push(`  ${left.padEnd(width)}  ${help}`)
  }
  lines.push("", "Global options: -C <dir> (run in <dir>), -h/--help, -V/--version")
  return `${lines.join("\n")}\n`
}

/** Exactly `count` positionals, named in `names` for the error message. */
export function positionalsExactly(positionals: string[], names: string[], usageLine: string): string[] {
  if (positionals.length < names.length) throw usage(`missing <${names[positionals.length]}>`, `usage: ${usageLine}`)
  if (positionals.length > names.length) throw usage(`unexpected argument '${positionals[names.length]}'`, `usage: ${usageLine}`)
  return positionals
}
