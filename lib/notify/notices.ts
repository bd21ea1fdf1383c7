// What the person is told, from the run's events (lib/run/events.ts): one Notice per thing that needs them,
// saying what is needed and the exact command that answers it. Events that need nobody make none.
import type { NotifyEvent } from "../config/notify-config"
import type { RunEvent } from "../run/events"
import { isoSeconds } from "../cli/clock"

/** One thing to tell the person (docs/NOTIFY.md, "Messages"). */
export type Notice = {
  event: NotifyEvent
  taskId?: string
  /** the question's id, for a question (asked by the agent, or by flow at a budget) */
  question?: string
  /** what is needed, in a sentence */
  text: string
  /** the exact command that answers it, when one does */
  command?: string
  /** a landing that waits for the person's review (flow.yaml `review`), not for something of theirs in the way */
  review?: boolean
  /** when the run said it, ISO 8601 in UTC */
  at: string
}

/** What the notices of a question need of the run's state: its text, when it is still asked. */
export type QuestionLookup = (id: string) => Promise<{ text: string; answered: boolean } | undefined>

/** The notices of one of the run's events, without questions' texts (questionNotices reads those). */
export function noticesOf(event: RunEvent, at: Date): Notice[] {
  const when = isoSeconds(at)
  switch (event.type) {
    case "checkpoint":
      if (event.quiet) return []
      return [
        {
          event: "checkpoint",
          taskId: event.taskId,
          text: `checkpoint ${event.taskId} waits for your review (approve it, or block it with 'flow block ${event.taskId} "<reason>"')`,
          command: `flow done ${event.taskId}`,
          at: when,
        },
      ]
    case "status":
      if (event.to !== "blocked") return []
      return [
        {
          event: "blocked",
          taskId: event.taskId,
          text: `task ${event.taskId} is blocked${event.reason ? `: ${event.reason}` : ""} ('flow show ${event.taskId}' says why; reset it to try again)`,
          command: `flow reset ${event.taskId}`,
          at: when,
        },
      ]
    case "budget":
      return [
        {
          event: "budget",
          taskId: event.taskId,
          question: event.question,
          text: `task ${event.taskId} reached its budget (${event.text}): raise it by an amount, or answer 'block'`,
          command: `flow answer ${event.question} <amount>`,
          at: when,
        },
      ]
    case "waiting":
      // Only a landing names its task; a full disk or a limit of every agent is the run's own wait.
      if (event.taskId === undefined || !event.reason.startsWith("landing ")) return []
      // An agent's review needs nobody: the person is told once that agent leaves it undecided (the wait is said again).
      if (event.review) return event.reviewer ? [] : [reviewNotice(event.taskId, when)]
      return [{ event: "landing", taskId: event.taskId, text: `${event.reason} (it lands by itself once that is out of the way)`, at: when }]
    case "parked":
      return [
        {
          event: "parked",
          taskId: event.taskId,
          text: `agent ${event.agent} is parked by its usage limit (${event.reason}): task ${event.taskId} ${event.to ? `moves to ${event.to}` : `goes on by itself at ${isoSeconds(new Date(event.until))}`}`,
          at: when,
        },
      ]
    case "run-end":
      return [{ event: "finished", text: runEndText(event), command: event.remaining > 0 ? "flow list" : undefined, at: when }]
    default:
      return []
  }
}

/** A landing that waits for the person's review (flow.yaml `review`): approving it is what answers. */
function reviewNotice(taskId: string, at: string): Notice {
  return {
    event: "landing",
    taskId,
    review: true,
    text: `task ${taskId} waits for your review: its merge passed its check ('flow review ${taskId}' shows its evidence and diff; approve it, or ask for changes with 'flow review ${taskId} changes "<comment>"')`,
    command: `flow review ${taskId} approve`,
    at,
  }
}

function runEndText(e: Extract<RunEvent, { type: "run-end" }>): string {
  const how = e.interrupted ? "stopped" : "finished"
  const blocked = e.blocked.length > 0 ? `, blocked: ${e.blocked.join(", ")}` : ""
  return `the run ${how}: ${e.done} done, ${e.remaining} not done${blocked}`
}

/** The notices of the questions a task waits on, each once (`told` keeps the ids already told). */
export async function questionNotices(taskId: string, ids: readonly string[], at: Date, lookup: QuestionLookup, told: Set<string>): Promise<Notice[]> {
  const out: Notice[] = []
  for (const id of ids) {
    if (told.has(id)) continue
    told.add(id)
    const q = await lookup(id).catch(() => undefined)
    if (q?.answered) continue
    out.push({
      event: "question",
      taskId,
      question: id,
      text: `task ${taskId} asks: ${q?.text ?? "(the question could not be read: 'flow questions' shows it)"}`,
      command: `flow answer ${id} "<answer>"`,
      at: isoSeconds(at),
    })
  }
  return out
}
