// A run's notifications wired to the run (commands/run.ts): its event stream in, its log for what fails, its
// state for the questions' texts, `.flow/view.json` for the inspector's address.
import type { Project } from "../cli/project"
import type { NotifyDestination } from "../config/notify-config"
import type { EventBus } from "../run/events"
import type { RunState } from "../state/run-state"
import { servingAddress } from "../view/serving"
import { secretValues } from "./mask"
import { Notifier } from "./notifier"
import { basename } from "node:path"
import * as clock from "../cli/clock"

/**
 * Starts telling flow.yaml's `notify:` destinations what this run's events need of the person; returns what
 * ends it at the run's end (what waits is sent, within a grace). Without destinations it does nothing.
 */
export function notifyRun(o: {
  bus: EventBus
  project: Project
  destinations: readonly NotifyDestination[] | undefined
  db: RunState
  env: Record<string, string | undefined>
}): () => Promise<void> {
  if (!o.destinations?.length) return async () => {}
  const notifier = new Notifier({
    project: basename(o.project.dir),
    destinations: o.destinations,
    inspector: () => servingAddress(o.project.stateDir),
    questions: async (id) => {
      const q = await o.db.questions.get(id)
      return q && { text: q.text, answered: q.answer !== null }
    },
    secrets: secretValues(o.env),
    say: (text) => o.bus.emit({ type: "notice", text }),
    platform: process.platform,
  })
  const unsubscribe = o.bus.subscribe((event, at) => notifier.hear(event, at))
  const stopLooking = lookForQuestions(o.bus, o.db, notifier)
  return async () => {
    unsubscribe()
    stopLooking()
    await notifier.close()
  }
}

/** How often the questions of this run's tasks are looked for. */
const QUESTION_POLL_MS = 2_000

/**
 * An agent asks with `flow ask` from its own process, and the run hears of it only when the agent exits and
 * waits: the state is looked at every QUESTION_POLL_MS for the questions of the tasks this run started (on a
 * shared project, other machines' tasks are theirs to tell). flow's own budget questions come as events.
 */
function lookForQuestions(bus: EventBus, db: RunState, notifier: Notifier): () => void {
  const mine = new Set<string>()
  const unsubscribe = bus.subscribe((event) => {
    if (event.type === "task-start") mine.add(event.taskId)
  })
  let busy = false
  const timer = setInterval(async () => {
    if (busy || mine.size === 0) return
    busy = true
    try {
      for (const q of await db.questions.pending()) if (mine.has(q.task_id) && !q.kind) notifier.questionsAsked(q.task_id, [q.id], clock.nowDate())
    } catch {
      // The state away for a moment (a shared database): the next look tries again.
    } finally {
      busy = false
    }
  }, QUESTION_POLL_MS)
  return () => {
    clearInterval(timer)
    unsubscribe()
  }
}
