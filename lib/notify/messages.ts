// One message from the notices a destination gathered, in the form each service documents: a generic
// webhook's JSON, Slack's incoming-webhook JSON (`text` in mrkdwn), ntfy's plain body with its Title,
// Priority, Tags and Click headers, the desktop's notify-send or osascript argv, and a command's argv with
// the webhook's JSON on stdin (docs/NOTIFY.md, "Destinations").
import type { NotifyDestination } from "../config/notify-config"
import type { Notice } from "./notices"

/** A message, masked already (lib/notify/mask.ts): what every form is made from. */
export type Message = {
  project: string
  title: string
  /** one line per notice, each followed by its command */
  text: string
  /** the inspector (a live `flow view`'s address, at the task when there is one), without its token */
  link?: string
  notices: Notice[]
}

/** What one delivery does: an HTTP POST, or a program run with its stdin. */
export type Delivery = { kind: "http"; url: string; headers: Record<string, string>; body: string } | { kind: "spawn"; argv: string[]; stdin?: string }

const HEADLINES: Record<Notice["event"], (n: Notice) => string> = {
  question: (n) => `question from ${n.taskId}`,
  checkpoint: (n) => `checkpoint ${n.taskId} waits for review`,
  blocked: (n) => `${n.taskId} is blocked`,
  budget: (n) => `${n.taskId} reached its budget`,
  landing: (n) => (n.review ? `${n.taskId} waits for your review` : `landing of ${n.taskId} waits for you`),
  parked: (n) => `${n.taskId} parked by a usage limit`,
  finished: (n) => (n.text.startsWith("the run stopped") ? "the run stopped" : "the run finished"),
}

/** The message of `notices` (in the order they came); `address`: the inspector's, when a view serves the project. */
export function compose(project: string, notices: Notice[], address: string | undefined): Message {
  const [first] = notices
  const needs = notices.filter((n) => n.event !== "finished" && n.event !== "parked").length
  const title = `flow ${project}: ${notices.length === 1 ? HEADLINES[first.event](first) : needs > 0 ? `${needs} ${needs === 1 ? "thing needs" : "things need"} you` : `${notices.length} events`}`
  const lines = notices.map((n) => (n.command ? `${n.text}\n  → ${n.command}` : n.text))
  const tasks = [...new Set(notices.map((n) => n.taskId).filter(Boolean))]
  const link = address && (tasks.length === 1 ? `${address}#${encodeURIComponent(tasks[0] as string)}` : address)
  return { project, title, text: lines.join("\n"), link, notices }
}

/** The generic webhook's JSON (also a command's stdin). */
export function webhookBody(m: Message): string {
  return JSON.stringify({
    source: "flow",
    project: m.project,
    title: m.title,
    text: m.text,
    link: m.link ?? null,
    events: m.notices.map((n) => ({
      event: n.event,
      task: n.taskId ?? null,
      question: n.question ?? null,
      text: n.text,
      command: n.command ?? null,
      at: n.at,
    })),
  })
}

/** Slack's mrkdwn needs &, < and > escaped; `<url|label>` is its link. */
function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
}

export function slackBody(m: Message): string {
  const lines = m.notices.map((n) => `• ${slackEscape(n.text)}${n.command ? `\n    \`${slackEscape(n.command)}\`` : ""}`)
  const link = m.link ? `\n<${m.link}|Open the inspector>` : ""
  return JSON.stringify({ text: `*${slackEscape(m.title)}*\n${lines.join("\n")}${link}` })
}

/** HTTP headers carry Latin-1 only: a title with other characters keeps its ASCII. */
function headerText(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?")
}

/** ntfy's headers: the person is needed (high) or told (default). */
export function ntfyHeaders(m: Message): Record<string, string> {
  const needed = m.notices.some((n) => n.event !== "finished" && n.event !== "parked")
  const headers: Record<string, string> = {
    Title: headerText(m.title),
    Priority: needed ? "high" : "default",
    Tags: [...new Set(m.notices.map((n) => n.event))].join(","),
  }
  if (m.link) headers.Click = m.link
  return headers
}

/** The desktop's notification: notify-send on Linux, osascript on macOS (its script reads the texts as arguments, no quoting). */
export function desktopArgv(m: Message, platform: string): string[] {
  if (platform === "darwin")
    return ["osascript", "-e", "on run argv", "-e", "display notification (item 2 of argv) with title (item 1 of argv)", "-e", "end run", m.title, m.text]
  const urgent = m.notices.some((n) => n.event !== "finished" && n.event !== "parked")
  return ["notify-send", "--app-name=flow", `--urgency=${urgent ? "critical" : "normal"}`, "--", m.title, m.text]
}

/** What delivering `m` to `to` does. */
export function deliveryOf(to: NotifyDestination, m: Message, platform: string): Delivery {
  const json = { "Content-Type": "application/json" }
  if ("webhook" in to) return { kind: "http", url: to.webhook, headers: json, body: webhookBody(m) }
  if ("slack" in to) return { kind: "http", url: to.slack, headers: json, body: slackBody(m) }
  if ("ntfy" in to) return { kind: "http", url: to.ntfy, headers: { "Content-Type": "text/plain; charset=utf-8", ...ntfyHeaders(m) }, body: textWithLink(m) }
  if ("desktop" in to) return { kind: "spawn", argv: desktopArgv(m, platform) }
  return { kind: "spawn", argv: to.command, stdin: webhookBody(m) }
}

function textWithLink(m: Message): string {
  return m.link ? `${m.text}\n${m.link}` : m.text
}

/** A destination as the run's log names it: its kind and host, never its URL (a Slack or ntfy URL is itself a secret). */
export function destinationLabel(to: NotifyDestination): string {
  const host = (url: string) => {
    try {
      return new URL(url).host
    } catch {
      return "?"
    }
  }
  if ("webhook" in to) return `webhook on ${host(to.webhook)}`
  if ("slack" in to) return `slack on ${host(to.slack)}`
  if ("ntfy" in to) return `ntfy on ${host(to.ntfy)}`
  if ("desktop" in to) return "the desktop"
  return `command ${to.command[0]}`
}
