// The terminal UI of `flow run` (docs/RUN.md, "Terminal UI"): a header, one pane per agent with its live
// output, the queue of questions waiting for a person, a log of what happened to tasks, and a key line.
// It subscribes to the same event stream as the headless log; what it reads besides (tasks.yaml for
// titles and counts, the state database for pending questions) are the stores those events point at.
import type { Colours } from "../terminal/colour"
import { formatDuration } from "../cli/duration"
import { FlowError } from "../cli/errors"
import type { Question } from "../model/json-shapes"
import type { AnswerCheck, RunState } from "../state/run-state"
import type { EventBus, RunEvent } from "../run/events"
import { type Key, type Screen, textWidth, truncate } from "../terminal/screen"
import { helpLines } from "./tui-help"
import { RunView, type Pane, type TaskSnapshot } from "./tui-state"

export type TuiOptions = {
  bus: EventBus
  db: RunState
  screen: Screen
  colours: Colours
  project: string
  agents: string[]
  /** who answers the questions typed here, recorded as `flow answer` records it */
  user: string
  /** how an answer to a question is checked, as `flow answer` checks it (lib/budget/budget-answer.ts) */
  answerCheck: (id: string) => Promise<AnswerCheck>
  loadTasks: () => Promise<TaskSnapshot>
  /** the run's stop, the same as Ctrl-C outside the UI (a second call quits at once) */
  stop: () => void
  /** a checkpoint's review from the keys c and b (lib/store/checkpoint-review.ts); returns the changes, as printed */
  review: (id: string, decision: "done" | "block", reason: string) => Promise<string[]>
  /** a merge's review from the keys l and r, as `flow review <id> approve|changes` decides it (lib/ops/review.ts) */
  decideLanding: (id: string, decision: "approve" | "changes", comment: string | null) => Promise<void>
  now?: () => number
}

export type Tui = {
  /** Shows that the run is stopping. */
  stopping(): void
  /** Leaves the screen as it was before the UI; safe to call more than once. */
  close(): void
}

/** What the person is doing in the UI, apart from the run's own state. */
export type UiState = {
  focus?: string
  /** what is being typed: an answer to a question, the reason for blocking a checkpoint, or the changes asked of a merge */
  input?: { question: Question; text: string } | { checkpoint: string; text: string } | { landing: string; text: string }
  flash?: { text: string; until: number }
  /** the key help (`?`) shows in place of the panes */
  help?: boolean
}

/** At most one frame per FRAME_MS: events can come by the hundred per second. */
const FRAME_MS = 100
const TICK_MS = 1000
/** tasks.yaml is re-read on task events, and on every TASKS_EVERY-th tick for edits by people. */
const TASKS_EVERY = 5
const FLASH_MS = 4000
const TASK_EVENTS = new Set<RunEvent["type"]>(["run-start", "task-start", "step-start", "status", "merge", "task-end", "checkpoint"])
const QUESTION_EVENTS = new Set<RunEvent["type"]>(["question-wait", "question-answered", "agent-exit", "budget", "budget-raised"])

/** Takes over the terminal and shows the run until `close`. */
export function startTui(o: TuiOptions): Tui {
  const now = o.now ?? Date.now
  const view = new RunView(o.project, o.agents, now())
  const ui: UiState = {}
  const frames = frameClock(o, view, ui, now)
  const flash = (text: string) => {
    ui.flash = { text, until: now() + FLASH_MS }
    frames.schedule()
  }
  // A refresh that fails (tasks.yaml half edited by a person, a busy database) keeps what was shown and says why.
  const refreshTasks = serial(() => o.loadTasks().then((tasks) => void (view.tasks = tasks)), frames.schedule, flash)
  const refreshQuestions = serial(() => o.db.questions.pending().then((qs) => void (view.questions = qs)), frames.schedule, flash)
  const s: Session = { o, view, ui, schedule: frames.schedule, flash, refreshTasks, refreshQuestions }

  const unwatch = watchRun(s)
  o.screen.open((key) => onKey(s, key), frames.draw)
  refreshTasks()
  refreshQuestions()
  frames.draw()
  return {
    stopping() {
      view.stopping = true
      frames.schedule()
    },
    close() {
      if (!frames.stop()) return
      unwatch()
      o.screen.close()
    },
  }
}

/** What the UI's handlers share: its options, the run as seen, the person's state, and how a change is shown. */
type Session = {
  o: TuiOptions
  view: RunView
  ui: UiState
  /** a frame soon, at most one per FRAME_MS */
  schedule: () => void
  /** a message shown for FLASH_MS */
  flash: (text: string) => void
  refreshTasks: () => void
  refreshQuestions: () => void
}

/** The screen's frames: one drawn now, or one scheduled (at most one per FRAME_MS) until `stop`. */
function frameClock(o: TuiOptions, view: RunView, ui: UiState, now: () => number) {
  let timer: ReturnType<typeof setTimeout> | undefined
  let lastDraw = 0
  let closed = false

  const draw = () => {
    timer = undefined
    if (closed) return
    lastDraw = now()
    if (ui.flash && ui.flash.until < lastDraw) ui.flash = undefined
    try {
      o.screen.draw(renderRun(view, ui, o.screen.size(), o.colours, lastDraw))
    } catch (e) {
      // A bug in drawing must not end the agents' work: the run goes on, and the screen says what broke.
      o.screen.draw([`flow run: the screen cannot be drawn (${(e as Error).message}); the run goes on, q stops it`])
    }
  }
  const schedule = () => {
    if (timer === undefined && !closed) timer = setTimeout(draw, Math.max(0, lastDraw + FRAME_MS - now()))
  }
  return {
    draw,
    schedule,
    /** No frame after this one; false when the frames had stopped already. */
    stop(): boolean {
      if (closed) return false
      closed = true
      clearTimeout(timer)
      return true
    },
  }
}

/** The run's events and a tick keep the view current; returns what stops both. */
function watchRun(s: Session): () => void {
  const unsubscribe = s.o.bus.subscribe((event, at) => {
    s.view.apply(event, at)
    if (TASK_EVENTS.has(event.type)) s.refreshTasks()
    if (QUESTION_EVENTS.has(event.type)) s.refreshQuestions()
    s.schedule()
  })
  let ticks = 0
  // `flow ask` runs in another process and says nothing on the bus: the queue is re-read every second.
  const tick = setInterval(() => {
    s.refreshQuestions()
    if (++ticks % TASKS_EVERY === 0) s.refreshTasks()
    s.schedule()
  }, TICK_MS)
  return () => {
    clearInterval(tick)
    unsubscribe()
  }
}

async function answer(s: Session, question: Question, text: string) {
  const { o, ui, flash } = s
  try {
    const { before, after } = await o.db.questions.answer(question.id, text, o.user, { accept: await o.answerCheck(question.id) })
    if (!before) flash(`no question '${question.id}' any more`)
    else if (!after) flash(`${question.id} was already answered${before.answered_by ? ` by ${before.answered_by}` : ""}: ${JSON.stringify(before.answer)}`)
    else flash(`Answered ${question.id} (task ${question.task_id}).`)
  } catch (e) {
    if (!(e instanceof FlowError)) throw e
    ui.input = { question, text } // nothing was recorded: the text is not lost
    flash(e.message)
  }
  s.refreshQuestions()
}

async function review(s: Session, id: string, decision: "done" | "block", reason: string) {
  const { o, ui, flash } = s
  try {
    const changes = await o.review(id, decision, reason)
    flash(changes.length ? changes.join("; ") : `${id} was already ${decision === "done" ? "done" : "blocked"}`)
  } catch (e) {
    if (!(e instanceof FlowError)) throw e
    if (decision === "block") ui.input = { checkpoint: id, text: reason } // nothing was recorded: the reason is not lost
    flash(e.message)
  }
  s.refreshTasks()
}

async function decideLanding(s: Session, id: string, decision: "approve" | "changes", comment: string | null) {
  const { o, ui, view, flash } = s
  try {
    await o.decideLanding(id, decision, comment)
    view.landings.delete(id) // the queue's merge or fix says the rest
    flash(
      decision === "approve"
        ? `Approved ${id}: it lands when the merge queue gets to it.`
        : `Asked for changes to ${id}: its agent gets the comment as a fix round.`,
    )
  } catch (e) {
    if (!(e instanceof FlowError)) throw e
    if (comment !== null) ui.input = { landing: id, text: comment } // nothing was recorded: the comment is not lost
    flash(e.message)
  }
  s.schedule()
}

function onInputKey(s: Session, key: Key, input: NonNullable<UiState["input"]>) {
  const { ui } = s
  if (key.name === "escape") ui.input = undefined
  else if (key.name === "backspace") input.text = [...input.text].slice(0, -1).join("")
  else if (key.name === "char") {
    input.text += key.char
    ui.flash = undefined // a message would crowd out what is being typed
  } else if (key.name === "enter") {
    const text = input.text.trim()
    if (!text) return s.flash(`the ${"question" in input ? "answer" : "landing" in input ? "comment" : "reason"} is empty: type it, or Esc to cancel`)
    ui.input = undefined
    if ("question" in input) void answer(s, input.question, text)
    else if ("landing" in input) void decideLanding(s, input.landing, "changes", text)
    else void review(s, input.checkpoint, "block", text)
  }
}

function onKey(s: Session, key: Key) {
  const { o, view, ui, flash } = s
  if (key.name === "ctrl-c") return o.stop()
  if (ui.input) onInputKey(s, key, ui.input)
  else if (ui.help)
    ui.help = false // any key closes the help, q too: a stop should not come by surprise
  else if (key.name === "char" && key.char === "q") return o.stop()
  else if (key.name === "char" && key.char === "?") ui.help = true
  else if (key.name === "char" && (key.char === "c" || key.char === "b")) {
    const waiting = view.reviews()[0]
    if (!waiting) flash("no checkpoint is waiting for review")
    else if (key.char === "c") void review(s, waiting, "done", "")
    else ui.input = { checkpoint: waiting, text: "" }
  } else if (key.name === "char" && (key.char === "l" || key.char === "r")) {
    const waiting = view.landingReviews()[0]
    if (!waiting) flash("no merge is waiting for your review")
    else if (key.char === "l") void decideLanding(s, waiting, "approve", null)
    else ui.input = { landing: waiting, text: "" }
  } else if (key.name === "char" && key.char === "a") {
    const oldest = view.questions[0]
    if (oldest) ui.input = { question: oldest, text: "" }
    else flash("no question is waiting for an answer")
  } else if (key.name === "tab" || (key.name === "char" && /^[1-9]$/.test(key.char))) ui.focus = focusAfter(key, [...view.panes.keys()], ui.focus)
  else if (key.name === "escape") ui.focus = undefined
  s.schedule()
}

function focusAfter(key: Key, agents: string[], focus: string | undefined): string | undefined {
  if (key.name === "char") return agents[Number(key.char) - 1] ?? focus
  const next = focus === undefined ? 0 : agents.indexOf(focus) + 1
  return agents[next] // past the last agent: no focus, every pane its share again
}

/** `fn` never twice at once: a call while it runs makes it run once more afterwards. */
function serial(fn: () => Promise<void>, then: () => void, failed: (message: string) => void): () => void {
  let running = false
  let again = false
  const go = () => {
    if (running) return void (again = true)
    running = true
    fn()
      .then(then, (e) => {
        if (!(e instanceof FlowError)) throw e
        failed(e.message)
      })
      .finally(() => {
        running = false
        if (again) {
          again = false
          go()
        }
      })
  }
  return go
}

/** The whole screen as lines (each is cut to the width when drawn). */
export function renderRun(view: RunView, ui: UiState, size: { columns: number; rows: number }, c: Colours, now: number): string[] {
  const { columns, rows } = size
  const top = [header(view, c, now), ...view.notices().map((n) => c.yellow(n))]
  const bottom = [...questionLines(view, ui, columns, rows, c), ...logLines(view, columns, rows, c), keyLine(view, ui, columns, c)]
  const room = rows - top.length - bottom.length
  const panes = ui.help ? helpLines(room, c) : paneLines(view, ui, room, columns, c, now)
  return [...top, ...panes, ...bottom].slice(0, rows)
}

function header(view: RunView, c: Colours, now: number): string {
  const counts = view
    .counts()
    .map(([status, n]) => `${n} ${status}`)
    .join(", ")
  return [
    c.bold(`flow run: ${view.project}`),
    `${view.panes.size} agent${view.panes.size === 1 ? "" : "s"}`,
    counts || "reading tasks.yaml",
    formatDuration(now - view.started),
    ...(view.target ? [`merging into ${view.target}`] : []),
  ].join(c.dim(" · "))
}

/** `── title ─────` across the width; heavy (`━━`) for the focused pane. */
function rule(title: string, columns: number, c: Colours, heavy = false): string {
  const line = heavy ? "━" : "─"
  const head = `${line}${line} ${title} `
  return head + c.dim(line.repeat(Math.max(0, columns - textWidth(head))))
}

function paneLines(view: RunView, ui: UiState, height: number, columns: number, c: Colours, now: number): string[] {
  const panes = [...view.panes.values()]
  if (height <= 0 || panes.length === 0) return []
  // Every shown pane gets a title and at least one line; agents that do not fit are counted on a line of their own.
  const fit = Math.max(1, Math.floor(height / 2))
  const showing = panes.length <= fit ? panes.length : Math.max(1, Math.floor((height - 1) / 2))
  const focused = ui.focus === undefined ? -1 : panes.findIndex((p) => p.agent === ui.focus)
  const first = focused >= showing ? focused - showing + 1 : 0
  const shown = panes.slice(first, first + showing)
  const hidden = panes.length - shown.length
  const heights = shareHeight(
    height - (hidden > 0 ? 1 : 0),
    shown.length,
    shown.findIndex((p) => p.agent === ui.focus),
  )
  const out: string[] = []
  shown.forEach((pane, i) => {
    const number = panes.indexOf(pane) + 1
    out.push(paneTitle(view, pane, number, pane.agent === ui.focus, columns, c, now))
    // A pane one row high is its title alone (slice(-0) would be every line).
    const room = Math.max(0, heights[i] - 1)
    const body = room === 0 ? [] : pane.lines.slice(-room)
    out.push(...body.map((l) => `  ${l}`), ...Array<string>(room - body.length).fill(""))
  })
  if (hidden > 0) out.push(c.dim(`  ${hidden} more agent${hidden === 1 ? "" : "s"}: Tab or 1-9 shows one`))
  return out
}

/** Rows per pane: equal shares, or a focused pane with most of them and the others two each at least. */
export function shareHeight(total: number, count: number, focused: number): number[] {
  if (count === 0) return []
  if (focused < 0 || count === 1) {
    const base = Math.floor(total / count)
    return Array.from({ length: count }, (_, i) => base + (i < total - base * count ? 1 : 0))
  }
  const big = Math.max(Math.floor(total / count), Math.min(Math.floor(total * 0.6), total - 2 * (count - 1)))
  const rest = shareHeight(total - big, count - 1, -1)
  return [...rest.slice(0, focused), big, ...rest.slice(focused)]
}

function paneTitle(view: RunView, pane: Pane, number: number, focused: boolean, columns: number, c: Colours, now: number): string {
  const state = view.stateOf(pane)
  const colour = state === "running" ? c.green : state === "idle" ? c.dim : c.yellow
  const task = pane.taskId ? view.tasks.get(pane.taskId) : undefined
  const sep = c.dim(" · ")
  const after = [...(view.stepOf(pane) ? [view.stepOf(pane)!] : []), colour(state), formatDuration(now - pane.since)].join(sep)
  let head = `${number} ${c.bold(pane.agent)}`
  if (pane.taskId) {
    // The title gives way first: the state and the time stay in sight on a narrow screen.
    const room = columns - textWidth(`── ${head}${sep}${pane.taskId} ${sep}${after} ──`)
    head += `${sep}${c.cyan(pane.taskId)}${task && room > 1 ? ` ${truncate(task.title, room)}` : ""}`
  }
  return rule(`${head}${sep}${after}`, columns, c, focused)
}

function questionLines(view: RunView, ui: UiState, columns: number, rows: number, c: Colours): string[] {
  const qs = view.questions
  if (qs.length === 0) return [rule("Questions: none", columns, c)]
  // The oldest question always shows: it is the one `a` answers.
  const room = rows >= 30 ? 5 : rows >= 20 ? 3 : 2
  const shown = qs.length > room ? qs.slice(0, room - 1) : qs
  const lines = shown.map((q) => {
    const mark = ui.input && "question" in ui.input && ui.input.question.id === q.id ? c.yellow("› ") : "  "
    return `${mark}${c.bold(q.id)}  ${c.cyan(q.task_id)}  ${q.text.replace(/\s+/g, " ").trim()}`
  })
  if (shown.length < qs.length) lines.push(c.dim(`  and ${qs.length - shown.length} more ('flow questions' lists them all)`))
  return [rule(`Questions (${qs.length}): a answers the oldest`, columns, c), ...lines]
}

function logLines(view: RunView, columns: number, rows: number, c: Colours): string[] {
  const room = rows >= 36 ? 6 : rows >= 24 ? 4 : rows >= 16 ? 2 : 0
  if (room === 0) return []
  const lines = view.log.slice(-room)
  return [rule("Log", columns, c), ...lines.map((l) => `  ${l}`), ...Array<string>(room - lines.length).fill("")]
}

function keyLine(view: RunView, ui: UiState, columns: number, c: Colours): string {
  const flash = ui.flash ? `${c.yellow(ui.flash.text)}  ` : ""
  if (ui.input) {
    const tail = `${c.inverse(" ")}  ${c.dim("Enter sends · Esc cancels")}`
    const label =
      "question" in ui.input
        ? `Answer ${c.bold(ui.input.question.id)} (task ${ui.input.question.task_id}): `
        : "landing" in ui.input
          ? `Changes to ${c.bold(ui.input.landing)}, the comment: `
          : `Block ${c.bold(ui.input.checkpoint)}, the reason: `
    // The label gives way to the typing: at most what leaves 20 columns for the answer.
    const head = truncate(`${flash}${label}`, Math.max(1, columns - textWidth(tail) - 20))
    // The end of a long answer stays in sight, where the typing happens.
    let text = ui.input.text
    while (text && textWidth(head + text + tail) > columns) text = [...text].slice(1).join("")
    return head + text + tail
  }
  const keys = [
    "q stop",
    ...(view.questions.length ? ["a answer"] : []),
    ...(view.reviews().length ? ["c approve", "b block"] : []),
    ...(view.landingReviews().length ? ["l land", "r changes"] : []),
    "Tab/1-9 focus",
    "? keys",
  ]
  return flash + c.dim(keys.join(" · "))
}
