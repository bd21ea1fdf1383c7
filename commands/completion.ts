// `flow completion bash|zsh|fish`: the script comes from flow's command table (passed in by flow.ts) and each
// command's meta, so a new command or flag completes without touching this file. Only what the positionals
// complete to is listed here: meta does not say it.
import { parse, positionalsExactly, type Command } from "../lib/cli/args"
import { completionScript, SHELLS, type ArgKind, type CommandSpec, type Shell } from "../lib/cli/completion"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import { TASK_STATUSES } from "../lib/model/statuses"

export const meta = {
  usage: "flow completion <bash|zsh|fish>",
  description: `Prints the shell completion script: commands, their options, and task ids and step ids read from
tasks.yaml (through the hidden 'flow __complete tasks|steps') when you press Tab. Load it for this shell:
  bash: source <(flow completion bash)   zsh: source <(flow completion zsh)   fish: flow completion fish | source
or save it where the shell looks: ~/.local/share/bash-completion/completions/flow, a folder on zsh's
$fpath (as _flow), ~/.config/fish/completions/flow.fish.`,
  options: {},
} as const

const TASK: ArgKind[] = ["tasks"]
const POSITIONALS: Record<string, ArgKind[]> = {
  show: TASK,
  note: TASK,
  ready: TASK,
  start: TASK,
  done: TASK,
  block: TASK,
  todo: TASK,
  reset: TASK,
  assign: TASK,
  ask: TASK,
  prompt: TASK,
  log: TASK,
  step: [["start", "done", "show", "list"], { start: "steps", done: "steps", show: "tasks", list: "tasks" }],
  list: [TASK_STATUSES],
  refine: [["prd", "plan"]],
  init: ["dirs"],
  demo: ["dirs"],
  repo: [["worktree"], { worktree: ["list", "remove"] }],
  completion: [SHELLS],
}

type Table = Record<string, { summary: string; load: () => Promise<Command> }>

export function completionCommand(table: Table): Command {
  return {
    meta,
    run: async (ctx: Ctx, args: string[]) => {
      const { positionals } = parse(meta, args)
      const [shell] = positionalsExactly(positionals, ["shell"], meta.usage)
      if (!(SHELLS as readonly string[]).includes(shell)) throw usage(`unknown shell '${shell}'`, `use one of ${SHELLS.join(", ")}`)
      ctx.stdout(completionScript(shell as Shell, await specs(table)))
    },
  }
}

async function specs(table: Table): Promise<CommandSpec[]> {
  return Promise.all(
    Object.entries(table).map(async ([name, entry]) => {
      const { meta } = await entry.load()
      const flags = Object.entries(meta.options).map(([long, o]) => ({ long, short: o.short, takesValue: o.type === "string", help: o.help }))
      return { name, summary: entry.summary, flags, args: POSITIONALS[name] ?? [] }
    }),
  )
}
