import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"

export const meta = {
  usage: "flow schema",
  description:
    "Prints the JSON Schema of tasks.yaml, generated from the same schema flow validates with\n(docs/tasks.schema.json is this output). Editors use it for completion and checks.",
  options: {},
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const { jsonSchema } = await import("../lib/model/schema-json")
  ctx.stdout(jsonSchema())
}
