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
  return async () => {
    unsubscribe()
    await notifier.close()
  }
}
