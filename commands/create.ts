import { chmodSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { parse } from "../lib/cli"
import type { Ctx } from "../lib/context"
import { FlowError, usage } from "../lib/errors"
import guidelines from "../lib/templates/GUIDELINES.md" with { type: "text" }
import prd from "../lib/templates/PRD.md" with { type: "text" }

export const meta = {
  usage: "flow create <project_name>",
  description: `Creates the folder <project_name> (in the working directory) holding PRD.md, a template with
every recommended section; an empty plan.md; and GUIDELINES.md, the guidelines agents read. The name must
be a plain folder name: letters, digits, '.', '_' and '-', starting with a letter or digit. An existing
folder is used only when it is empty; nothing is touched when the command fails.`,
  options: {},
} as const

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { positionals } = parse(meta, args)
  if (positionals.length !== 1) throw usage(positionals.length ? `unexpected argument '${positionals[1]}'` : "missing <project_name>", `usage: ${meta.usage}`)
  const name = positionals[0]
  if (!SAFE_NAME.test(name) || name.includes("..")) {
    throw usage(`'${name}' is not a safe folder name`,
      "use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most 100 characters), for example 'billing-export'")
  }
  const target = resolve(ctx.cwd, name)
  const existing = listIfExists(target)
  if (existing && existing.length > 0) {
    throw new FlowError(`${target} already exists and is not empty`, undefined, "choose another name, or empty that folder first")
  }
  // Build the project beside its final place and rename it in: a failure leaves nothing half made.
  const staging = mkdtempSync(join(ctx.cwd, `.${name}.creating-`))
  try {
    const fill = (t: string) => t.replaceAll("{{name}}", name)
    writeFileSync(join(staging, "PRD.md"), fill(prd))
    writeFileSync(join(staging, "plan.md"), "")
    writeFileSync(join(staging, "GUIDELINES.md"), fill(guidelines))
    // rename(2) replaces an empty folder, so an existing empty target needs no special case.
    // mkdtemp makes the folder private (0700); a project folder is an ordinary one.
    chmodSync(staging, 0o777 & ~process.umask())
    renameSync(staging, target)
  } catch (e) {
    rmSync(staging, { recursive: true, force: true })
    throw new FlowError(`cannot create ${target}: ${(e as Error).message}`, undefined, undefined, { cause: e })
  }
  ctx.stdout(`Created ${name}/ with PRD.md, plan.md and GUIDELINES.md
Next: describe the product in ${name}/PRD.md ('flow refine prd' reviews it); then 'flow plan' writes
plan.md from it and 'flow generate' turns the plan into tasks.yaml.
`)
}

function listIfExists(dir: string): string[] | undefined {
  try {
    return readdirSync(dir)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw new FlowError(`${dir} exists and is not a readable folder`, undefined, "choose another name")
  }
}
