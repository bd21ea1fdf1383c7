import { basename, resolve } from "node:path"
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import { gitOnPath, repoRoot } from "../lib/git/git"
import { folderArgument } from "../lib/cli/project"
import { addMissing } from "../lib/plan/scaffold"
import { listed } from "../lib/validation/findings"

export const meta = {
  usage: "flow init [<dir>]",
  description: `Makes an existing folder (default: the working folder) a flow project: adds PRD.md (a
template), an empty plan.md, GUIDELINES.md and flow.yaml (every setting commented out), each only when
the folder has nothing of that name. Every file already there is left byte for byte as it was, and no
git command that changes anything is run: the output says what to commit (or, outside a repository, how
to make one) so that 'flow run' can work there.`,
  options: {},
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const given = positionals[0] ?? "."
  const dir = folderArgument(given, resolve(ctx.cwd, given), "create it first, or run 'flow create <name>' to make a new project folder")
  let result: ReturnType<typeof addMissing>
  try {
    result = addMissing(dir, basename(dir))
  } catch (e) {
    throw new FlowError(`cannot write into ${dir}: ${(e as Error).message}`, undefined, undefined, { cause: e })
  }
  const { added, kept } = result
  const out = [added.length ? `Added ${listed(added)} to ${dir}` : `Nothing to add: ${dir} already has every project file`]
  if (kept.length && added.length) out.push(`Kept the existing ${listed(kept)} as they were`)
  if (added.length) out.push(await gitAdvice(ctx, dir, added))
  out.push("Next: describe the product in PRD.md ('flow refine prd' reviews it); then 'flow plan' and 'flow generate'.")
  ctx.stdout(`${out.join("\n")}\n`)
}

/** What to run so the new files are committed: flow never commits into a repository it did not make. */
async function gitAdvice(ctx: Ctx, dir: string, added: string[]): Promise<string> {
  const add = `git add ${added.join(" ")} && git commit -m 'Start a flow project'`
  if (!gitOnPath(ctx.env.PATH))
    return `git was not found on the PATH: 'flow run' needs a repository; install git, then run: git init -b main && git add -A && git commit -m 'Start'`
  if (await repoRoot(dir)) return `To commit them: ${add}`
  return `${dir} is not in a git repository, which 'flow run' needs; to make it one: git init -b main && git add -A && git commit -m 'Start'`
}
