// The run's scheduling loop (docs/RUN.md "Scheduling"): on every wake-up it re-reads the graph, reviews the
// checkpoints, starts a worker for each free agent and a task it may take, and, with nothing running, ends the
// run or says what it waits for.
import { availableTasks } from "../graph/availability"
import { sharedFiles } from "../graph/files-overlap"
import { indexTasks, type Indexed, type Task } from "../model/task-index"
import { TaskWorker } from "./worker/task-worker"
import { isInvalidTasks } from "./tasks-wait"
import { StoreUnreachable } from "../store/store"
import { InvalidTasks } from "../store/tasks"
import type { AgentConfig } from "../config/config"
import { clockTime } from "./log"
import type { Claim } from "../store/store"
import * as clock from "../cli/clock"
import type { ActiveRun } from "./active-run"

/** Starts work as tasks become ready, until every task is done, the run is stopped, or nothing can move without a person. */
export async function schedule(run: ActiveRun): Promise<void> {
  const { s, space, running, wake } = run
  while (!s.signal.aborted) {
    // A full disk met with nothing running: wait for room before trying anything again.
    if (space.full && running.size === 0) {
      await space.wait()
      if (s.signal.aborted) break
    }
    const index = await readGraph(run)
    if (!index) {
      await wake.wait()
      continue
    }
    const checkpoints = waitingCheckpoints(index, running)
    if (await reviewCheckpoints(run, checkpoints)) continue
    const runSpent = run.spent("run")
    await startWork(run, index, runSpent)
    if (running.size === 0) {
      const next = await whenIdle(run, index, checkpoints, runSpent)
      if (next === "end") break
      if (next === "again") continue
    }
    await wake.wait()
  }
}

/** tasks.yaml (or the shared graph) as it is now, and what to resume in it; undefined: it cannot be read, said once. */
async function readGraph(run: ActiveRun): Promise<Map<string, Indexed> | undefined> {
  const { s, resumable } = run
  try {
    run.last = await s.store.read()
    if (run.invalidSaid) s.bus.emit({ type: "notice", text: "tasks.yaml is valid again: going on" })
    if (run.awaySaid) s.bus.emit({ type: "notice", text: "the database answers again: going on" })
    run.invalidSaid = run.awaySaid = false
  } catch (e) {
    if (e instanceof StoreUnreachable) {
      // The database is away: agents at work go on, their outcomes wait in their workers; nothing new starts.
      if (!run.awaySaid)
        s.bus.emit({
          type: "notice",
          text: `${e.message}: starting nothing new; the agents at work go on, and what they finish is written when it answers`,
        })
      run.awaySaid = true
      return undefined
    }
    if (!isInvalidTasks(e)) throw e
    if (!run.invalidSaid)
      s.bus.emit({
        type: "notice",
        text: `${e instanceof InvalidTasks ? e.line : (e as Error).message.split("\n")[0]}: keeping the last valid view, starting nothing new until it is fixed (finished work is recorded and applied then)`,
      })
    run.invalidSaid = true
    return undefined
  }
  const { data } = run.last
  const index = indexTasks(data)
  for (const id of resumable) if (index.get(id)?.task.status !== "in_progress" && index.get(id)?.task.status !== "assigned") resumable.delete(id)
  // On a shared graph any task in progress may be one a run gave back or left to lapse (killed, cut off):
  // it is offered to the claim, which takes it only when no live claim holds it.
  if (run.fleet)
    for (const e of index.values())
      if ((e.task.status === "in_progress" || e.task.status === "assigned") && !e.task.subtasks?.length && e.task.checkpoint !== true) resumable.add(e.task.id)
  return index
}

/** Announces the checkpoints waiting for review, or approves them with --yes; true: approved, so look again. */
async function reviewCheckpoints(run: ActiveRun, checkpoints: Task[]): Promise<boolean> {
  const { s, space } = run
  let noRoom = false
  for (const cp of checkpoints) {
    if (s.yes) {
      noRoom = await TaskWorker.approveCheckpoint(run.shared, cp.id).then(
        () => false,
        (e) => {
          if (s.signal.aborted || !space.claims(e)) throw e
          return true
        },
      )
      if (noRoom) break
    } else if (!run.announced.has(cp.id)) {
      // On a shared graph every machine's run sees the checkpoint and shows it; only the oldest live run tells
      // people (docs/NOTIFY.md, "Fleet mode"). The others say it quietly once, and tell it if they become the oldest.
      const quiet = run.fleet ? !(await run.fleet.eldest()) : false
      if (quiet && run.shownQuietly.has(cp.id)) continue
      ;(quiet ? run.shownQuietly : run.announced).add(cp.id)
      s.bus.emit({ type: "checkpoint", taskId: cp.id, ...(quiet && { quiet: true as const }) })
    }
  }
  if (noRoom) await space.wait()
  return s.yes && checkpoints.length > 0
}

/** Gives each free agent a task it may take: a parked one first, then one to resume, then one available. */
async function startWork(run: ActiveRun, index: Map<string, Indexed>, runSpent: string | undefined): Promise<void> {
  const { s, running, parking, fleet } = run
  const candidates = [...[...run.resumable].map((id) => index.get(id)!).filter(Boolean), ...availableTasks(index)].filter(
    (e) => !running.has(e.task.id) && !run.leftAlone.has(e.task.id) && !waitsOnRunning(index, e, running) && !parking.holds(e.task.id),
  )
  for (const agent of s.agents) {
    // Tasks waiting in the merge queue hold no agent: the cap counts the agents at work.
    if (run.slots.working >= s.parallelism || runSpent) break
    if (run.space.full && running.size > 0) break // what waits for room tries again first; nothing new meanwhile
    if (!run.slots.free(agent.name) || parking.isParked(agent.name) || run.spent(agent.name)) continue
    // A parked task first: its own agent's once the limit reset, or one it is a fallback for.
    const handover = parking.takeFor(agent)
    const held = handover ? index.get(handover.taskId) : undefined
    if (handover && !(held && (held.task.status === "in_progress" || held.task.status === "assigned"))) continue // a person decided meanwhile
    const mine = apartFirst(
      candidates.filter((e) => !running.has(e.task.id) && (e.task.agent_name === undefined || e.task.agent_name === agent.name)),
      atWork(index, running, fleet !== undefined),
    )
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
    startWorker(run, pick.task.id, agent, handover?.note, claim)
  }
}

/**
 * The tasks at work now: this run's, and on a shared graph the other runs' (in progress or assigned). In files a
 * task in progress that this run does not run is one it is about to resume.
 */
function atWork(index: Map<string, Indexed>, running: Map<string, unknown>, shared: boolean): Task[] {
  const others = (t: Task) => shared && (t.status === "in_progress" || t.status === "assigned") && !t.subtasks?.length
  return [...index.values()].filter((e) => running.has(e.task.id) || others(e.task)).map((e) => e.task)
}

/**
 * The candidates with those that name none of the files of a task at work first, each group in its order: two
 * tasks over the same files start together only when nothing else is ready (docs/RUN.md, "Scheduling").
 */
function apartFirst(candidates: Indexed[], working: readonly Task[]): Indexed[] {
  const shares = (e: Indexed) => working.some((w) => w.id !== e.task.id && sharedFiles(e.task.files, w.files).length > 0)
  const apart = candidates.filter((e) => !shares(e))
  return apart.length === candidates.length ? candidates : [...apart, ...candidates.filter(shares)]
}

/** Starts the worker of task `id` with `agent`; when it ends, its agent is free and the scheduler wakes. */
function startWorker(run: ActiveRun, id: string, agent: AgentConfig, note: string | undefined, claim: Claim | undefined): void {
  const { s, shared, fleet } = run
  run.resumable.delete(id)
  run.slots.take(agent.name, id)
  // A fleet worker stops when its claim is lost, as it does when the run stops.
  const lost = new AbortController()
  if (fleet) run.stopOnLoss.set(id, lost)
  const own = fleet ? { ...shared, settings: { ...s, signal: AbortSignal.any([s.signal, lost.signal]) } } : shared
  const worker = new TaskWorker(own, id, agent, note, claim)
  run.settling = false
  run.running.set(
    id,
    worker
      .run()
      .then((unrecorded) => {
        if (unrecorded === undefined) return
        run.leftAlone.add(id)
        s.bus.emit({ type: "notice", taskId: id, text: `${unrecorded}; left alone until the next run` })
      })
      .finally(async () => {
        run.stopOnLoss.delete(id)
        // A parked task stays this run's, for its agent after the reset or a fallback; any other goes back.
        if (fleet && !run.parking.holds(id)) await fleet.release(id)
        run.running.delete(id)
        run.slots.release(agent.name, id)
        run.wake.notify()
      }),
  )
}

/**
 * Nothing runs: "end" when nothing more can move in this run, "again" for one more pass at once, "wait" (for a
 * wake-up) when something will move later, said once.
 */
async function whenIdle(run: ActiveRun, index: Map<string, Indexed>, checkpoints: Task[], runSpent: string | undefined): Promise<"end" | "again" | "wait"> {
  const { s, fleet } = run
  const open = [...index.values()].filter((e) => e.task.status !== "done")
  if (open.length === 0) return "end"
  if (runSpent || s.agents.every((a) => run.spent(a.name))) return "end" // the rest waits for the next run
  const parked = run.parking.waiting().filter((p) => open.some((e) => e.task.id === p.taskId))
  if (parked.length > 0) {
    const first = Math.min(...parked.map((p) => p.until))
    run.waiting(
      `waiting for the usage limit of ${[...new Set(parked.map((p) => p.agent))].join(", ")} to reset (at ${clockTime(new Date(first), clock.nowDate())}): ${parked.map((p) => p.taskId).join(", ")} then go on in the same session (Ctrl-C stops; the next 'flow run' resumes)`,
    )
    return "wait"
  }
  if (checkpoints.length > 0) {
    run.waiting(`waiting for review of ${checkpoints.map((c) => c.id).join(", ")}: run 'flow done <id>' to continue or 'flow block <id> <reason>'`)
    return "wait"
  }
  // Other runs at work may finish what the rest waits on, or give a task back: wait for them.
  const others = fleet ? await fleet.othersLive() : 0
  if (others > 0) {
    run.waiting(`waiting for other runs: they hold ${others} task${others === 1 ? "" : "s"} of this graph`)
    return "wait"
  }
  // A peer writes its task done, then gives its claim back: what that made ready may be missing from the view
  // this pass began with, and ending now would leave it to that peer alone (this run's exit saying tasks
  // remain). The next pass reads the graph again, after that release: it settles it.
  if (fleet && !run.settling) {
    run.settling = true
    return "again"
  }
  return "end" // nothing can move without a person: blocked tasks and what waits on them
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
