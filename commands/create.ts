import { chmodSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import { gitOnPath, initRepo, repoRoot } from "../lib/git/git"
import { projectFiles } from "../lib/plan/scaffold"
import { listed } from "../lib/validation/findings"

export const meta = {
  usage: "flow create <project_name>",
  description: `Creates the folder <project_name> (in the working directory) holding PRD.md, a template with
every recommended section; an empty plan.md; GUIDELINES.md, the guidelines agents read; and flow.yaml,
every setting commented out. The folder becomes a git repository on 'main' with these files as its first
commit, so 'flow run' works there at once (inside an existing repository it stays part of that one; without
git on the PATH it says what to run). The name must be a plain folder name: letters, digits, '.', '_' and
'-', starting with a letter or digit. An existing folder is used only when it is empty; nothing is touched
when the command fails. To start a project in an existing folder, use 'flow init'.`,
  options: {},
} as const

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { positionals } = parse(meta, args)
  if (positionals.length !== 1) throw usage(positionals.length ? `unexpected argument '${positionals[1]}'` : "missing <project_name>", `usage: ${meta.usage}`)
  const name = positionals[0]
  if (name === ".") throw usage("'.' is the working folder, which flow create does not fill", "run 'flow init' to add the project files to an existing folder")
  if (!SAFE_NAME.test(name) || name.includes("..")) {
    throw usage(
      `'${name}' is not a safe folder name`,
      "use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most 100 characters), for example 'billing-export'",
    )
  }
  const target = resolve(ctx.cwd, name)
  const existing = listIfExists(target)
  if (existing && existing.length > 0) {
    throw new FlowError(
      `${target} already exists and is not empty`,
      undefined,
      `choose another name, or run 'flow init ${name}' to add the project files to it`,
    )
  }
  // Build the project beside its final place and rename it in: a failure leaves nothing half made.
  const staging = mkdtempSync(join(ctx.cwd, `.${name}.creating-`))
  try {
    for (const [file, text] of Object.entries(projectFiles(name))) writeFileSync(join(staging, file), text)
    // rename(2) replaces an empty folder, so an existing empty target needs no special case.
    // mkdtemp makes the folder private (0700); a project folder is an ordinary one.
    chmodSync(staging, 0o777 & ~process.umask())
    renameSync(staging, target)
  } catch (e) {
    rmSync(staging, { recursive: true, force: true })
    throw new FlowError(`cannot create ${target}: ${(e as Error).message}`, undefined, undefined, { cause: e })
  }
  const files = listed(Object.keys(projectFiles(name)))
  ctx.stdout(`Created ${name}/ with ${files}
${await makeRepo(ctx, target, name)}
Next: describe the product in ${name}/PRD.md ('flow refine prd' reviews it); then 'flow plan' writes
plan.md from it and 'flow generate' turns the plan into tasks.yaml.
`)
}

/** Makes the new project a repository with a first commit, unless it already lies in one; says which happened. */
async function makeRepo(ctx: Ctx, target: string, name: string): Promise<string> {
  const commands = `cd ${name} && git init -b main && git add -A && git commit -m 'Start ${name}'`
  if (!gitOnPath(ctx.env.PATH)) return `git was not found on the PATH: 'flow run' needs a repository, so install git, then run:\n  ${commands}`
  const outer = await repoRoot(target)
  if (outer) return `It is part of the git repository ${outer}: commit the files there when you are ready`
  try {
    await initRepo(target, `Start ${name}: PRD.md, plan.md, GUIDELINES.md and flow.yaml from 'flow create'`)
  } catch (e) {
    throw new FlowError(`created ${target}, but could not make it a git repository: ${(e as Error).message}`, undefined, `make it one yourself: ${commands}`, {
      cause: e,
    })
  }
  return "It is a git repository on 'main' with these files as its first commit: 'flow run' works there"
}

function listIfExists(dir: string): string[] | undefined {
  try {
    return readdirSync(dir)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw new FlowError(`${dir} exists and is not a readable folder`, undefined, "choose another name")
  }
}
