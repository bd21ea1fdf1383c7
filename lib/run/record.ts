// Keeps the run's history in the state database: every transition with its time and agent, tokens and cost
// as the CLIs report them, and each agent's current task and completed count (for `flow agents`).
import { isDiskFull } from "../store/disk-full"
import { StoreUnreachable } from "../store/store"
import type { RunState } from "../state/run-state"
import type { EventBus, RunEvent } from "./events"

/**
 * Subscribes the database to the bus; the returned function waits for every pending write. A write that
 * finds the disk full, or a shared project's database away, is kept, in order, and tried again before the
 * next one (neither must cost the run's history); what still cannot be written when the run ends is given up.
 */
export function recordRun(bus: EventBus, db: RunState): () => Promise<void> {
  let queue: Promise<unknown> = Promise.resolve()
  const held: (() => Promise<unknown>)[] = []
  const drain = async () => {
    while (held.length > 0) {
      try {
        await held[0]()
        held.shift()
      } catch (e) {
        if (!isDiskFull(e) && !(e instanceof StoreUnreachable))
          held.shift() // the log must never stop the run
        else return
      }
    }
  }
  bus.subscribe((e) => {
    const writes = toRecord(e, db)
    if (writes.length === 0) return
    held.push(...writes)
    queue = queue.then(drain)
  })
  return () => queue.then(() => {})
}

/** The writes that record one event, each a transaction of its own (so one is never applied twice). */
function toRecord(e: RunEvent, db: RunState): (() => Promise<unknown>)[] {
  switch (e.type) {
    case "task-assigned":
      return [() => db.agents.upsert(e.agent, { cli: e.cli, current_task: e.taskId, parked_until: null, parked_reason: null, parked_task: null })]
    case "task-end":
      return [
        () => db.agents.upsert(e.agent, { current_task: null }),
        ...(e.status === "done" ? [() => db.agents.countCompleted(e.agent)] : []),
        () => db.events.append({ kind: "task.end", task_id: e.taskId, agent: e.agent, data: { status: e.status } }),
      ]
    case "agent": {
      const ev = e.event
      if (ev.type === "session") return [() => db.agents.upsert(e.agent, { session_id: ev.id })]
      if (ev.type === "usage") return [() => db.events.append({ kind: "agent.usage", task_id: e.taskId, agent: e.agent, data: ev })]
      if (ev.type === "error") return [() => db.events.append({ kind: "agent.error", task_id: e.taskId, agent: e.agent, data: { message: ev.message } })]
      return [] // text and tool calls are many; the log shows them
    }
    case "status":
      return [() => db.events.append({ kind: "task.status", task_id: e.taskId, data: { from: e.from, to: e.to, reason: e.reason } })]
    case "parked":
      return [
        () => db.events.append({ kind: "task.parked", task_id: e.taskId, agent: e.agent, data: { until: e.until, reason: e.reason, to: e.to ?? null } }),
        // A task moved to a fallback agent does not wait for this one; the agent itself still does.
        () => db.agents.upsert(e.agent, { parked_until: e.until, parked_reason: e.reason, parked_task: e.to ? null : e.taskId }),
      ]
    case "hook-output":
      return [] // many; the log keeps them
    case "run-start":
    case "run-end":
    case "task-start":
    case "step-start":
    case "agent-exit":
    case "merge":
    case "merge-failed":
    case "queue":
    case "queue-end":
    case "queue-report":
    case "check":
    case "check-result":
    case "fix":
    case "question-wait":
    case "question-answered":
    case "published":
    case "publish-failed":
    case "checkpoint":
    case "retry":
    case "budget":
    case "budget-raised":
    case "waiting":
    case "hook-start":
    case "hook-end":
    case "prepared":
    case "notice": {
      const { type, ...data } = e
      const taskId = "taskId" in e ? e.taskId : null
      const agent = "agent" in e && typeof e.agent === "string" ? e.agent : null
      return [() => db.events.append({ kind: type.replace("-", "."), task_id: taskId, agent, data })]
    }
  }
}
