// Declared options → parsed values, and the help text, from one declaration per command (its `meta`).
import type { parseArgs as ParseArgs } from "node:util"
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
  const options = meta.options as M["options"]
  const quick = quickParse(options, args)
  if (quick) return quick as ReturnType<typeof ParseArgs<{ args: string[]; options: M["options"]; strict: true; allowPositionals: true }>>
  try {
    // Loaded here, not at the top: node:util costs about 225 page faults, and most calls have no flag that
    // quickParse leaves to it (docs/PERFORMANCE.md, "Start-up").
    const { parseArgs } = process.getBuiltinModule("node:util")
    const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: true })
    return { values, positionals }
  } catch (e) {
    const name = meta.usage.split(" ").slice(0, 2).join(" ")
    throw usage((e as Error).message.replace(/\. To specify a positional argument.*$/s, ""), `run '${name} --help' for its usage`)
  }
}

/**
 * What parseArgs returns for the plain cases (positionals, declared `--name` and `--name=value` options), the
 * same values in the same order on a null prototype; undefined for anything else (short flags, `--`, `-`, an
 * undeclared or misused option), which parseArgs parses or rejects with its own message.
 */
function quickParse(options: Record<string, OptionSpec>, args: string[]): { values: Record<string, unknown>; positionals: string[] } | undefined {
  const values: Record<string, unknown> = Object.create(null)
  const positionals: string[] = []
  const set = (name: string, spec: OptionSpec, value: string | boolean) => {
    values[name] = spec.multiple ? [...((values[name] as unknown[] | undefined) ?? []), value] : value
  }
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (!arg.startsWith("-")) {
      positionals.push(arg)
      continue
    }
    if (!arg.startsWith("--") || arg === "--") return undefined
    const eq = arg.indexOf("=")
    const name = arg.slice(2, eq < 0 ? undefined : eq)
    const spec = Object.hasOwn(options, name) ? options[name] : undefined
    if (!spec) return undefined
    if (spec.type === "boolean") {
      if (eq >= 0) return undefined
      set(name, spec, true)
    } else if (eq >= 0) set(name, spec, arg.slice(eq + 1))
    else {
      const next = args[i + 1]
      if (next === undefined || next.startsWith("-")) return undefined
      set(name, spec, next)
      i++
    }
  }
  for (const [name, spec] of Object.entries(options)) if (spec.default !== undefined && !(name in values)) values[name] = spec.default
  return { values, positionals }
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
