import { parse } from "../lib/cli/args"
import { loadConfig } from "../lib/config/config"
import type { Ctx } from "../lib/cli/context"
import { usage } from "../lib/cli/errors"
import type { AgentsReport, LiveRun, Usage } from "../lib/model/json-shapes"
import { findProject } from "../lib/cli/project"
import { liveRuns, openExistingState } from "../lib/state/state"
import { type AgentRecord, agentKey } from "../lib/state/run-state"
import { ofLiveRun } from "../lib/run/worked-by"
import { storeSetting } from "../lib/store/setting"
import { indexTasks } from "../lib/model/task-index"
import { openStore } from "../lib/store/open"
import { usageText } from "../lib/budget/usage"
import { budgetReport, budgetText, lastRunSpend } from "../lib/budget/budget-report"
import { NO_SPEND } from "../lib/budget/budget"
import { clockTime } from "../lib/run/log"
import * as clock from "../lib/cli/clock"

export const meta = {
  usage: "flow agents [--json]",
  description: `The agents of this project (flow.yaml's, and any that worked in a run), each with the task it
is working on now, how many tasks it has completed, the tokens and cost it reported, its spend in the latest run
beside flow.yaml's budget.agent, and when its CLI's usage limit parked it, until when. An agent's current task is
set while 'flow run' has it working; its status comes from tasks.yaml. On a shared project (docs/FLEET.md) it
also says where runs live, whatever the machine, and each agent's machine (agents are one per machine and name).`,
  options: {
    json: { type: "boolean", help: "print the agents as JSON" },
  },
} as const

export async function run(ctx: Ctx, args: string[]): Promise<void> {
  const { values, positionals } = parse(meta, args)
  if (positionals.length > 0) throw usage(`unexpected argument '${positionals[0]}'`, `usage: ${meta.usage}`)
  const project = findProject(ctx)
  const config = loadConfig(project.dir)
  const configured = config.agents ?? []
  const [db, runs, setting] = await Promise.all([openExistingState(project), liveRuns(project), storeSetting(project)])
  const shared = setting.kind !== "file"
  const records = db ? await db.agents.everywhere() : []
  const spent = db ? await db.usage.byAgent() : new Map<string, Usage>()
  // An agent's spend "in the latest run" is its machine's latest run's (docs/FLEET.md, "The last run").
  const machines = [...new Set(records.map((r) => r.machine))]
  const lastRuns = new Map(db ? await Promise.all(machines.map(async (m) => [m, await lastRunSpend(db, m)] as const)) : [])
  db?.close()
  const now = clock.now()
  const index = indexTasks((await (await openStore(project)).read()).data)

  // flow.yaml's agents first, in its order; on a shared project each with a row per machine it worked on.
  const names = [...new Set([...configured.map((a) => a.name), ...records.map((r) => r.name)])]
  const rows = names.flatMap((name): { name: string; record?: AgentRecord }[] => {
    const of = records.filter((r) => r.name === name)
    return of.length ? of.map((record) => ({ name, record })) : [{ name, record: undefined }]
  })
  const report: AgentsReport = {
    // Only a shared project says where its runs are: in files the run is this clone's, and the output stays as it was.
    ...(shared ? { run: runs[0] ?? null, runs } : {}),
    agents: rows.map((row) => {
      const { name, record: r } = row
      const cli = configured.find((a) => a.name === name)?.cli ?? r?.cli ?? null
      const current = r?.current_task ? { id: r.current_task, status: index.get(r.current_task)?.task.status ?? "missing" } : null
      const key = agentKey(name, r?.machine)
      const budget = budgetReport((r && lastRuns.get(r.machine)?.byAgent.get(key)) ?? NO_SPEND, config.budget?.agent ?? {})
      const until = r?.parked_until ? Date.parse(r.parked_until) : 0
      const parked = until > now ? { until: r!.parked_until!, reason: r!.parked_reason ?? "usage limit", task: r!.parked_task } : null
      const where = shared ? { machine: r?.machine ?? null, working: r !== undefined && ofLiveRun(runs, { machine: r.machine, at: r.updated_at }) } : {}
      return { name, cli, current, completed: r?.completed ?? 0, usage: spent.get(key) ?? null, budget, parked, ...where }
    }),
  }
  if (values.json) {
    ctx.stdout(`${JSON.stringify(report, null, 2)}\n`)
    return
  }
  const header = shared ? `${runsLine(report.runs ?? [], new Date(now))}\n` : ""
  if (report.agents.length === 0) {
    ctx.stdout(`${header}No agents: list them in flow.yaml, or start some with 'flow run --agents N --cli <cli>'.\n`)
    return
  }
  const out = ["Agents:"]
  for (const a of report.agents) {
    out.push(`  ${a.name}${a.cli ? ` (${a.cli})` : ""}${a.machine ? ` on ${a.machine}` : ""}`)
    out.push(`    Current: ${a.current ? `${a.current.id} (${a.current.status})` : "none"}`)
    // SPEC 2.5's format, `Completed: <n> tasks`, for every n: scripts read the line as written there.
    out.push(`    Completed: ${a.completed} tasks`)
    const text = usageText(a.usage)
    if (text) out.push(`    Usage: ${text}`)
    const capped = budgetText(a.budget)
    if (capped) out.push(`    Budget: ${capped} in the latest run`)
    if (a.parked)
      out.push(
        `    Parked until ${clockTime(new Date(a.parked.until), new Date(now))}: ${a.parked.reason}${a.parked.task ? ` (its task ${a.parked.task} waits)` : ""}`,
      )
  }
  ctx.stdout(`${header}${out.join("\n")}\n`)
}

/**
 * A shared project's runs, first: `Runs: live on laptop-1 (pid 4242, since 12:01), laptop-2 (pid 77, since
 * 12:03)`, or `Runs: none live`.
 */
function runsLine(runs: LiveRun[], now: Date): string {
  if (runs.length === 0) return "Runs: none live"
  return `Runs: live on ${runs.map((r) => `${r.machine} (pid ${r.pid}, since ${clockTime(new Date(r.since), now)})`).join(", ")}`
}
