// `flow schema`'s output: the JSON Schema of tasks.yaml, from the one arktype schema.
import { TaskFile } from "./schema"

/** `flow schema`'s output with its definitions named in order of first use, for a stable file. */
export function jsonSchema(): string {
  const text = JSON.stringify(TaskFile.toJsonSchema(), null, 2)
  const names = renamer("def")
  return `${text.replace(/"#\/\$defs\/(\w+)"/g, (_, n) => `"#/$defs/${names(n)}"`).replace(/^( {4})"(\w+)": \{/gm, (m, indent, n) => (/^[a-z]+\d+$/.test(n) ? `${indent}"${names(n)}": {` : m))}\n`
}

export function renamer(prefix: string): (name: string) => string {
  const map = new Map<string, string>()
  return (name) => {
    if (!map.has(name)) map.set(name, `${prefix}${map.size}`)
    return map.get(name)!
  }
}
