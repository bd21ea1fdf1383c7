import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { basename, join, resolve } from "node:path"
import { parse } from "../lib/cli/args"
import { loadConfig } from "../lib/config/config"
import type { Ctx } from "../lib/cli/context"
import { FlowError, usage } from "../lib/cli/errors"
import { check } from "../lib/cli/proc"
import { projectAt } from "../lib/cli/project"
import guidelines from "../lib/templates/GUIDELINES.md" with { type: "text" }
import demoFlowYaml from "../lib/templates/demo/flow.yaml" with { type: "text" }
import demoPlan from "../lib/templates/demo/plan.md" with { type: "text" }
import demoPrd from "../lib/templates/demo/PRD.md" with { type: "text" }
import demoTasks from "../lib/templates/demo/tasks.yaml" with { type: "text" }
import { fromConfig, startRun } from "./run"

export const meta = {
  usage: "flow demo [<dir>] [--yes]",
  description: `Builds a sample project in <dir> (default: ./flow-demo): a git repository with PRD.md,
plan.md, flow.yaml and a tasks.yaml of a dozen tasks (phases, dependencies, steps, subtasks, a checkpoint
and a validation task) for three offline 'script' agents, then runs it to the end: every task in its own
worktree and branch, merged into main. The run stops at the checkpoint 'review' until you run
'flow done review' in <dir> from another terminal; --yes approves it automatically.`,
  options: {
    yes: { type: "boolean", help: "approve the checkpoint automatically" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 1) throw usage(`unexpected argument '${positionals[1]}'`, `usage: ${meta.usage}`)
  const dir = resolve(ctx.cwd, positionals[0] ?? "flow-demo")
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new FlowError(`${dir} already exists and is not empty`, undefined, "name another folder: flow demo <dir>")
  }
  mkdirSync(dir, { recursive: true })
  const files: Record<string, string> = {
    "PRD.md": demoPrd,
    "plan.md": demoPlan,
    "tasks.yaml": demoTasks,
    "flow.yaml": demoFlowYaml,
    "GUIDELINES.md": guidelines.replaceAll("{{name}}", basename(dir)),
  }
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  const git = (...a: string[]) => check(["git", "-c", "user.name=flow demo", "-c", "user.email=demo@flow.invalid", ...a], { cwd: dir })
  await git("init", "-q", "-b", "main")
  await git("add", "-A")
  await git("commit", "-q", "-m", "The demo project: PRD, plan, task graph and agents")
  ctx.stdout(`Created the demo project in ${dir}\n`)

  const project = projectAt(dir, ctx.env)
  const config = loadConfig(dir)
  const code = await startRun(ctx, project, {
    agents: config.agents ?? [],
    parallelism: config.parallelism ?? 3,
    yes: Boolean(values.yes),
    ...fromConfig(config, ctx.env),
  })
  ctx.stdout(`\nThe demo project is in ${dir}: 'git log --oneline --graph' shows the merges, 'flow list' the tasks.\n`)
  return code
}
