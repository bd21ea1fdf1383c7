// Keeps the run's history in the state database: every transition with its time and agent, tokens and cost
// as the CLIs report them, and each agent's current task and completed count (for `flow agents`).
import type { StateDb } from "./state-db"
import type { EventBus, RunEvent } from "./events"

/** Subscribes the database to the bus; the returned function waits for every pending write. */
export function recordRun(bus: EventBus, db: StateDb): () => Promise<void> {
  let queue: Promise<unknown> = Promise.resolve()
  const later = (fn: () => Promise<unknown>) => {
    queue = queue.then(fn).catch(() => {}) // the log must never stop the run
  }
  bus.subscribe((e) => {
    const write = toRecord(e, db)
    if (write) later(write)
  })
  return () => queue.then(() => {})
}

function toRecord(e: RunEvent, db: StateDb): (() => Promise<unknown>) | undefined {
  switch (e.type) {
    case "task-assigned":
      return () => db.agents.upsert(e.agent, { cli: e.cli, current_task: e.taskId })
    case "task-end":
      return async () => {
        await db.agents.upsert(e.agent, { current_task: null })
        if (e.status === "done") await db.agents.countCompleted(e.agent)
        await db.events.append({ kind: "task.end", task_id: e.taskId, agent: e.agent, data: { status: e.status } })
      }
    case "agent": {
      const ev = e.event
      if (ev.type === "session") return () => db.agents.upsert(e.agent, { session_id: ev.id })
      if (ev.type === "usage") return () => db.events.append({ kind: "agent.usage", task_id: e.taskId, agent: e.agent, data: ev })
      if (ev.type === "error") return () => db.events.append({ kind: "agent.error", task_id: e.taskId, agent: e.agent, data: { message: ev.message } })
      return undefined // text and tool calls are many; the log shows them
    }
    case "status":
      return () => db.events.append({ kind: "task.status", task_id: e.taskId, data: { from: e.from, to: e.to, reason: e.reason } })
    case "run-start":
    case "run-end":
    case "task-start":
    case "step-start":
    case "agent-exit":
    case "merge":
    case "merge-failed":
    case "queue":
    case "fix":
    case "question-wait":
    case "question-answered":
    case "published":
    case "publish-failed":
    case "checkpoint":
    case "retry":
    case "waiting":
    case "notice": {
      const { type, ...data } = e
      const taskId = "taskId" in e ? e.taskId : null
      const agent = "agent" in e && typeof e.agent === "string" ? e.agent : null
      return () => db.events.append({ kind: type.replace("-", "."), task_id: taskId, agent, data })
    }
  }
}
