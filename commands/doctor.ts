import { parse } from "../lib/cli/args"
import type { Ctx } from "../lib/cli/context"
import { withSandbox } from "../lib/config/sandbox-config"
import { AGENT_NAME } from "../lib/cli/agent-name"
import { Exit, usage } from "../lib/cli/errors"
import { findProject } from "../lib/cli/project"
import { doctor } from "../lib/ops/doctor"
import type { DoctorLine } from "../lib/worktree/command-programs"
import { selfArgv } from "../lib/run/flow-shim"
import { colours } from "../lib/terminal/colour"
import { loadConfig } from "../lib/config/config"

export const meta = {
  usage: "flow doctor [--cli <cli>]",
  description: `Checks what 'flow run' needs before it starts, and says what to fix: git new enough for the merge
queue (2.38), a git repository with a commit on its merge target for the tasks to work in, each agent CLI
of flow.yaml on PATH (and not older than flow's adapter was checked against), the programs of flow.yaml's
setup, teardown and verify commands, flow reachable from the agents' worktrees (.flow/bin/flow), and a
state folder that takes writes. 'flow run' runs the same checks first and stops on a failed one with the
same words; warnings do not stop it.
Exit 0 when nothing failed (warnings allowed), 1 when a check failed, 3 when flow.yaml is invalid.`,
  options: {
    cli: { type: "string", arg: "cli", help: "check this agent CLI instead of flow.yaml's agents (claude, codex, ...)" },
  },
} as const

const MARK = { ok: "ok  ", warn: "warn", fail: "FAIL" } as const

export async function run(ctx: Ctx, args: string[]): Promise<number> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  if (values.cli !== undefined && !AGENT_NAME.test(values.cli)) throw usage(`--cli '${values.cli}' is not a CLI name`)
  const project = findProject(ctx)
  const config = loadConfig(project.dir)
  const agents = withSandbox(values.cli === undefined ? (config.agents ?? []) : [{ name: `${values.cli}-1`, cli: values.cli }], config.sandbox)
  const lines = await doctor({ project, config, agents, env: ctx.env, flowArgv: selfArgv() })
  const c = colours(ctx)
  const paint = { ok: c.green, warn: c.yellow, fail: c.red }
  for (const line of lines) {
    ctx.stdout(`${paint[line.state](MARK[line.state])}  ${line.what}\n`)
    if (line.hint) ctx.stdout(`      hint: ${line.hint}\n`)
  }
  const count = (state: DoctorLine["state"]) => lines.filter((l) => l.state === state).length
  const [failed, warned] = [count("fail"), count("warn")]
  ctx.stdout(
    failed === 0
      ? `ready to run${warned ? ` (${warned} warning${warned === 1 ? "" : "s"})` : ""}\n`
      : `${failed} check${failed === 1 ? "" : "s"} failed: fix what FAIL names, then run 'flow doctor' again\n`,
  )
  return failed === 0 ? Exit.ok : Exit.failure
}
