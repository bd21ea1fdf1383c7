// `flow run`: drives agents through the task graph (SPEC sections 2.3 to 2.6 and 3). Event-driven: a
// finished task, a change of tasks.yaml by a person or an agent, or a stop request wakes the scheduler at
// once; the only look without an event is a stat of tasks.yaml every second, a backstop for its watcher.
// tasks.yaml is the source of truth, re-read on every decision. docs/RUN.md explains the rules.
import { availableTasks } from "../graph/availability"
import { indexTasks, type Indexed, type Task } from "../model/task-index"
import { Landing } from "./landing"
import { AgentGroups, awaitOrphanGit, killAgentProcesses } from "./reaper"
import { recover } from "./recovery"
import { TaskWorker } from "./task-worker"
import type { WorkerShared } from "./worker-task"
import { isInvalidTasks } from "./tasks-wait"
import { watchTasksFile } from "./tasks-watch"
import { StoreUnreachable } from "../store/store"
import { InvalidTasks } from "../store/tasks"
import { traceCpu } from "../cli/trace"
import type { AgentConfig } from "../config/config"
import type { RunSettings, RunSummary } from "./settings"
import { Workspaces } from "../git/workspace"
import { SpaceWait } from "./space-wait"
import { isDiskFull } from "../store/disk-full"
import { SpendMeter } from "../budget/budget-meter"
import { reached, reachedText } from "../budget/budget"
import { Parking } from "../budget/parking"
import { clockTime } from "./log"
import { spendByTask } from "../budget/budget-meter"
import { budgetWarnings, forecast, forecastLines } from "../budget/forecast"
import { priceOf } from "../budget/prices"
import { RunClaims } from "./run-claims"
import type { Claim } from "../store/store"
import * as clock from "../cli/clock"

/** How often a run on a shared graph looks for changes others made (docs/FLEET.md). */
const SHARED_POLL_MS = 2_000

/** A wake-up call that is never lost: a notify before the wait makes the next wait return at once. */
class Wake {
  private pending = false
  private resolve?: () => void

  notify(): void {
    this.pending = true
    this.resolve?.()
  }

  async wait(): Promise<void> {
    if (!this.pending) await new Promise<void>((r) => (this.resolve = r))
    this.pending = false
    this.resolve = undefined
  }
}

export async function orchestrate(s: RunSettings): Promise<RunSummary> {
  const started = performance.now()
  const wake = new Wake()
  const running = new Map<string, Promise<void>>() // task id → its worker
  const busy = new Map<string, string>() // agent name → task id
  const announced = new Set<string>()
  const leftAlone = new Set<string>() // failed, and their failure could not be written: never taken again in this run
  const workspaces = new Workspaces(s.project, s.defaults)
  const groups = new AgentGroups(s.db)
  const space = new SpaceWait(s.bus, s.signal, [s.project.dir, s.project.stateDir], () => wake.notify())
  const meter = new SpendMeter(s.bus, s.db)
  const parking = new Parking(s.agents, () => wake.notify(), s.limitBackoffMs)
  const shared: WorkerShared = {
    meter,
    parking,
    settings: s,
    workspaces,
    landing: new Landing(s),
    groups,
    space,
    background: new Set(),
    publishQueues: new Map(),
    sessions: new Map(),
  }
  const onStop = () => {
    wake.notify()
    // Agents' groups get SIGTERM, then SIGKILL after 3 s (cli/proc.ts); what they started in sessions of
    // their own would live on, and keep their pipes open so the run could not finish: it goes then too.
    setTimeout(() => killAgentProcesses(s.project.dir), 3_500).unref()
  }
  s.signal.addEventListener("abort", onStop)
  // A shared graph: this run is one of many peers, on this machine or others. It takes a task only by claiming
  // it in the database, holds it by a lease, and stops a worker whose task another run took over.
  const stopOnLoss = new Map<string, AbortController>()
  const fleet = s.store.claims ? new RunClaims(s.store.claims, s, (id) => stopOnLoss.get(id)?.abort()) : undefined
  const first = await s.store.read()
  // A project folder outside any repository is fine when every task names its repo: the target is then "?".
  const target = await workspaces
    .repoOf({} as Task)
    .then((repo) => workspaces.targetOf(repo))
    .catch(() => "?")
  s.bus.emit({ type: "run-start", agents: s.agents.map((a) => a.name), tasks: indexTasks(first.data).size, target })
  // What a dead run left: its agents' process groups first (they may still be writing), then its merges.
  const reaped = await groups.reap(s.project.dir)
  if (reaped.length > 0) s.bus.emit({ type: "notice", text: `stopped what a dead run left running for ${[...new Set(reaped)].join(", ")}` })
  // A git the dead run left (a merge finishing) is waited for, never killed: killed, it would leave its work half done.
  await awaitOrphanGit()
  // A dead run of this machine (killed outright, this clone's or another's) left its claims live: they go back
  // now, so that recovery and this run take its tasks up without waiting out their lease.
  await fleet?.freeDead()
  await recover(shared, indexTasks((await s.store.read()).data), fleet && { take: (id) => fleet.take([id], "recovery"), release: (id) => fleet.release(id) })
  // Agents a stopped run left parked wait out their usage limit here too, their tasks with them.
  parking.restore(await s.db.agents.list())
  const unassignable = restrictedToOthers(indexTasks((await s.store.read()).data), s.agents)
  for (const u of unassignable)
    s.bus.emit({
      type: "notice",
      taskId: u.id,
      text: `left alone: its agent_name is '${u.agent}', which is not an agent of this run (agents: ${s.agents.map((a) => a.name).join(", ")})`,
    })
  // What the rest of the work may cost, when there is a budget or a spend to go by (docs/BUDGETS.md "Forecast").
  const spends = await spendByTask(s.db)
  if (s.budget || spends.size > 0) {
    for (const line of forecastLines(forecast(indexTasks((await s.store.read()).data), spends, s.budget), s.budget))
      s.bus.emit({ type: "notice", text: `forecast: ${line}` })
  }
  for (const warning of budgetWarnings(s.agents, s.budget, (m) => priceOf(s.prices, m) !== undefined)) s.bus.emit({ type: "notice", text: warning })
  // Tasks an earlier run left in progress are resumed first (rule 7), each in its own worktree.
  const resumable = new Set(
    [...indexTasks((await s.store.read()).data).values()].filter((e) => e.task.status === "in_progress" || e.task.status === "assigned").map((e) => e.task.id),
  )
  let waitingSaid = ""
  /** a shared graph's run found nothing to do and no other run at work: one more pass, on a fresh read, before it ends */
  let settling = false
  const budgetSaid = new Set<string>()
  /** the run's cap, or an agent's, when spent: said once each */
  const spent = (scope: "run" | string): string | undefined => {
    const r = scope === "run" ? reached(meter.total(), s.budget?.run ?? {}) : reached(meter.agent(scope), s.budget?.agent ?? {})
    if (!r) return undefined
    const why = scope === "run" ? `the run's budget is reached (${reachedText(r)})` : `agent ${scope}'s budget for this run is reached (${reachedText(r)})`
    if (!budgetSaid.has(scope)) {
      budgetSaid.add(scope)
      s.bus.emit({ type: "notice", text: `${why}: ${scope === "run" ? "nothing new starts; agents at work finish their turn" : "it takes no new task"}` })
    }
    return why
  }
  let last = first // the last valid tasks.yaml: a person's half-saved edit is waited out, not fatal
  let invalidSaid = false
  let awaySaid = false
  // People and agents change tasks.yaml from other processes (a checkpoint approved, a task reset). The watch
  // starts only here, where the finally below closes it: a watcher left open by an error above (an invalid
  // tasks.yaml) kept the process from exiting. The loop re-reads the file first, so nothing before is missed.
  const unwatch = watchTasksFile(s.project.tasksFile, () => wake.notify())
  // A shared graph changes in the database, where no file event says so: it is looked at every few seconds
  // (docs/FLEET.md); a change's read is cheap there (only the rows written since the last one).
  // Other runs' writes are announced (LISTEN); the poll stays as the backstop for a listener that went quiet
  // (a dropped connection between its reconnects, a pooler in transaction mode that delivers nothing).
  const poll = s.store.shared ? setInterval(() => wake.notify(), SHARED_POLL_MS) : undefined
  const unlisten = await s.store.claims
    ?.listen(() => wake.notify())
    .catch((e) => {
      s.bus.emit({ type: "notice", text: `no wake-ups from the database (${(e as Error).message.split("\n")[0]}): looking every ${SHARED_POLL_MS / 1000} s` })
      return undefined
    })

  try {
    while (!s.signal.aborted) {
      // A full disk met with nothing running: wait for room before trying anything again.
      if (space.full && running.size === 0) {
        await space.wait()
        if (s.signal.aborted) break
      }
      try {
        last = await s.store.read()
        if (invalidSaid) s.bus.emit({ type: "notice", text: "tasks.yaml is valid again: going on" })
        if (awaySaid) s.bus.emit({ type: "notice", text: "the database answers again: going on" })
        invalidSaid = awaySaid = false
      } catch (e) {
        if (e instanceof StoreUnreachable) {
          // The database is away: agents at work go on, their outcomes wait in their workers; nothing new starts.
          if (!awaySaid)
            s.bus.emit({
              type: "notice",
              text: `${e.message}: starting nothing new; the agents at work go on, and what they finish is written when it answers`,
            })
          awaySaid = true
          await wake.wait()
          continue
        }
        if (!isInvalidTasks(e)) throw e
        if (!invalidSaid)
          s.bus.emit({
            type: "notice",
            text: `${e instanceof InvalidTasks ? e.line : (e as Error).message.split("\n")[0]}: keeping the last valid view, starting nothing new until it is fixed (finished work is recorded and applied then)`,
          })
        invalidSaid = true
        await wake.wait()
        continue
      }
      const { data } = last
      const index = indexTasks(data)
      for (const id of resumable) if (index.get(id)?.task.status !== "in_progress" && index.get(id)?.task.status !== "assigned") resumable.delete(id)
      // On a shared graph any task in progress may be one a run gave back or left to lapse (killed, cut off):
      // it is offered to the claim, which takes it only when no live claim holds it.
      if (fleet)
        for (const e of index.values())
          if ((e.task.status === "in_progress" || e.task.status === "assigned") && !e.task.subtasks?.length && e.task.checkpoint !== true)
            resumable.add(e.task.id)

      const checkpoints = waitingCheckpoints(index, running)
      let noRoom = false
      for (const cp of checkpoints) {
        if (s.yes) {
          noRoom = await TaskWorker.approveCheckpoint(shared, cp.id).then(
            () => false,
            (e) => {
              if (s.signal.aborted || !space.claims(e)) throw e
              return true
            },
          )
          if (noRoom) break
        } else if (!announced.has(cp.id)) {
          announced.add(cp.id)
          s.bus.emit({ type: "checkpoint", taskId: cp.id })
        }
      }
      if (noRoom) await space.wait()
      if (s.yes && checkpoints.length > 0) continue

      const candidates = [...[...resumable].map((id) => index.get(id)!).filter(Boolean), ...availableTasks(index)].filter(
        (e) => !running.has(e.task.id) && !leftAlone.has(e.task.id) && !waitsOnRunning(index, e, running) && !parking.holds(e.task.id),
      )
      const runSpent = spent("run")
      for (const agent of s.agents) {
        if (running.size >= s.parallelism || runSpent) break
        if (space.full && running.size > 0) break // what waits for room tries again first; nothing new meanwhile
        if (busy.has(agent.name) || parking.isParked(agent.name) || spent(agent.name)) continue
        // A parked task first: its own agent's once the limit reset, or one it is a fallback for.
        const handover = parking.takeFor(agent)
        const held = handover ? index.get(handover.taskId) : undefined
        if (handover && !(held && (held.task.status === "in_progress" || held.task.status === "assigned"))) continue // a person decided meanwhile
        const mine = candidates.filter((e) => !running.has(e.task.id) && (e.task.agent_name === undefined || e.task.agent_name === agent.name))
        let claim: Claim | undefined
        let pick: Indexed | undefined
        if (!fleet) pick = held ?? mine[0]
        else if (held) [pick, claim] = [held, fleet.get(held.task.id)]
        else {
          claim = await fleet.take(
            mine.map((e) => e.task.id),
            agent.name,
          )
          pick = claim && index.get(claim.taskId)
        }
        if (!pick) continue
        const id = pick.task.id
        resumable.delete(id)
        busy.set(agent.name, id)
        // A fleet worker stops when its claim is lost, as it does when the run stops.
        const lost = new AbortController()
        if (fleet) stopOnLoss.set(id, lost)
        const own = fleet ? { ...shared, settings: { ...s, signal: AbortSignal.any([s.signal, lost.signal]) } } : shared
        const worker = new TaskWorker(own, id, agent, handover?.note, claim)
        settling = false
        running.set(
          id,
          worker
            .run()
            .then((unrecorded) => {
              if (unrecorded === undefined) return
              leftAlone.add(id)
              s.bus.emit({ type: "notice", taskId: id, text: `${unrecorded}; left alone until the next run` })
            })
            .finally(async () => {
              stopOnLoss.delete(id)
              // A parked task stays this run's, for its agent after the reset or a fallback; any other goes back.
              if (fleet && !parking.holds(id)) await fleet.release(id)
              running.delete(id)
              busy.delete(agent.name)
              wake.notify()
            }),
        )
      }

      if (running.size === 0) {
        const open = [...index.values()].filter((e) => e.task.status !== "done")
        if (open.length === 0) break
        if (runSpent || s.agents.every((a) => spent(a.name))) break // the rest waits for the next run
        const parked = parking.waiting().filter((p) => open.some((e) => e.task.id === p.taskId))
        if (parked.length > 0) {
          const first = Math.min(...parked.map((p) => p.until))
          const reason = `waiting for the usage limit of ${[...new Set(parked.map((p) => p.agent))].join(", ")} to reset (at ${clockTime(new Date(first), clock.nowDate())}): ${parked.map((p) => p.taskId).join(", ")} then go on in the same session (Ctrl-C stops; the next 'flow run' resumes)`
          if (reason !== waitingSaid) s.bus.emit({ type: "waiting", reason })
          waitingSaid = reason
          await wake.wait()
          continue
        }
        if (checkpoints.length === 0) {
          // Other runs at work may finish what the rest waits on, or give a task back: wait for them.
          const others = fleet ? await fleet.othersLive() : 0
          if (others === 0) {
            // A peer writes its task done, then gives its claim back: what that made ready may be missing from
            // the view this pass began with, and ending now would leave it to that peer alone (this run's exit
            // saying tasks remain). The next pass reads the graph again, after that release: it settles it.
            if (fleet && !settling) {
              settling = true
              continue
            }
            break // nothing can move without a person: blocked tasks and what waits on them
          }
          const reason = `waiting for other runs: they hold ${others} task${others === 1 ? "" : "s"} of this graph`
          if (reason !== waitingSaid) s.bus.emit({ type: "waiting", reason })
          waitingSaid = reason
          await wake.wait()
          continue
        }
        const reason = `waiting for review of ${checkpoints.map((c) => c.id).join(", ")}: run 'flow done <id>' to continue or 'flow block <id> <reason>'`
        if (reason !== waitingSaid) s.bus.emit({ type: "waiting", reason })
        waitingSaid = reason
      }
      await wake.wait()
    }
  } finally {
    parking.close()
    s.signal.removeEventListener("abort", onStop)
    await Promise.allSettled(running.values())
    await Promise.allSettled(shared.background)
    await shared.landing.idle() // the checks' scratch worktrees, removed after their checks
    await unwatch()
    clearInterval(poll)
    await unlisten?.().catch(() => {})
    await fleet?.close()
    // What agents left behind in their groups (a server started in the background) goes too. On a full disk
    // the groups are killed but their records stay: the next run's reap finds them gone. With the database
    // away the records cannot be read: what agents started is killed by its environment, and the next run
    // reaps the recorded groups.
    await groups.reap(s.project.dir).catch((e) => {
      if (!isDiskFull(e) && !(e instanceof StoreUnreachable)) throw e
    })
  }

  const { data } = await s.store.read().catch(() => last)
  const all = [...indexTasks(data).values()].map((e) => e.task)
  const summary: RunSummary = {
    done: all.filter((t) => t.status === "done").length,
    blocked: all.filter((t) => t.status === "blocked").map((t) => t.id),
    remaining: all.filter((t) => t.status !== "done").length,
    interrupted: s.signal.aborted,
    unassignable: unassignable.filter((u) => all.some((t) => t.id === u.id && t.status !== "done")),
  }
  s.bus.emit({ type: "run-end", ...summary, seconds: Math.round((performance.now() - started) / 100) / 10 })
  traceCpu()
  return summary
}

/** Open tasks whose agent_name names no agent of this run: nothing here will ever take them. */
function restrictedToOthers(index: Map<string, Indexed>, agents: AgentConfig[]): { id: string; agent: string }[] {
  const names = new Set(agents.map((a) => a.name))
  return [...index.values()]
    .map((e) => e.task)
    .filter(
      (t) =>
        t.agent_name !== undefined && !names.has(t.agent_name) && t.status !== "done" && t.status !== "blocked" && !t.subtasks?.length && t.checkpoint !== true,
    )
    .map((t) => ({ id: t.id, agent: t.agent_name! }))
}

/** Checkpoints whose dependencies are done (and merged): a person reviews them now (rule 5). */
function waitingCheckpoints(index: Map<string, Indexed>, running: Map<string, unknown>): Task[] {
  const out: Task[] = []
  for (const e of index.values()) {
    const t = e.task
    if (t.checkpoint !== true || t.status === "done" || t.status === "blocked") continue
    if (t.subtasks?.some((c) => c.status !== "done")) continue
    if ((t.depends_on ?? []).every((d) => index.get(d)?.task.status === "done" && !running.has(d))) out.push(t)
  }
  return out
}

/**
 * True when the task must wait for a task still being worked on or merged: a dependency (of the task or
 * of an ancestor), or a task it validates. Its code is not on the target branch yet.
 */
function waitsOnRunning(index: Map<string, Indexed>, entry: Indexed, running: Map<string, unknown>): boolean {
  const validated = [...index.values()].filter((e) => e.task.validation_task_id === entry.task.id).map((e) => e.task)
  if (validated.some((t) => t.status !== "done" || running.has(t.id))) return true
  for (let e: Indexed | undefined = entry; e; e = e.parent ? index.get(e.parent.id) : undefined) {
    if ((e.task.depends_on ?? []).some((d) => running.has(d))) return true
  }
  return false
}
