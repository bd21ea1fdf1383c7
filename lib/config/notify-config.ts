// flow.yaml `notify:` (docs/NOTIFY.md): where flow tells the person that they are needed. A list of
// destinations, each of one kind (a webhook, Slack, ntfy, the desktop, a command) with the events that fire it.
import { type } from "arktype"

/** The events a destination may be fired by (docs/NOTIFY.md, "Events"). */
export const NOTIFY_EVENTS = ["question", "checkpoint", "blocked", "budget", "landing", "parked", "finished"] as const
export const NotifyEvent = type.enumerated(...NOTIFY_EVENTS)
export type NotifyEvent = typeof NotifyEvent.infer

const HttpUrl = type(/^https?:\/\/\S+$/).describe("an http:// or https:// URL")
const Argv = type("string > 0").array().atLeastLength(1).describe("an argv list such as [notify-me, --urgent]")
const On = NotifyEvent.array().atLeastLength(1)

/** One shape per kind of destination, named by its one key. */
const KINDS = {
  webhook: type({ webhook: HttpUrl, "on?": On }),
  slack: type({ slack: HttpUrl, "on?": On }),
  ntfy: type({ ntfy: HttpUrl, "on?": On }),
  desktop: type({ desktop: "true", "on?": On }),
  command: type({ command: Argv, "on?": On }),
} as const
export type NotifyKind = keyof typeof KINDS

export const NotifyDestination = KINDS.webhook.or(KINDS.slack).or(KINDS.ntfy).or(KINDS.desktop).or(KINDS.command)
export type NotifyDestination = typeof NotifyDestination.infer
export const NotifyConfig = NotifyDestination.array()

const KIND_NAMES = Object.keys(KINDS) as NotifyKind[]
const WHAT = "a destination: { webhook: <url> }, { slack: <url> }, { ntfy: <topic url> }, { desktop: true } or { command: [argv] }"
const NotADestination = type("unknown").narrow((_, ctx) => ctx.mustBe(WHAT))

/** The kind of a destination as written (its one kind key), or undefined when it names none or several. */
export function kindOf(entry: unknown): NotifyKind | undefined {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return undefined
  const named = KIND_NAMES.filter((k) => k in entry)
  return named.length === 1 ? named[0] : undefined
}

/**
 * The check of `notify:` as written, for flow.yaml's errors: each entry against the shape its key names, so
 * a bad URL is told as a bad URL and not as "must be one of five shapes".
 */
export function notifyShape(value: unknown): ((value: unknown) => unknown) | undefined {
  if (!Array.isArray(value)) return type("unknown[]").describe("a list of destinations")
  const tuple = value.map((entry) => {
    const kind = kindOf(entry)
    return kind ? KINDS[kind].onDeepUndeclaredKey("reject") : NotADestination
  })
  return type(tuple as never)
}

/** The fields of a destination, for the "did you mean" of an unknown one. */
export function notifyFields(): string[] {
  return [...KIND_NAMES, "on"]
}

/**
 * `notify:` as flow.yaml's schema holds it: checked whole, so that a wrong entry comes back to flow.yaml's
 * loader as one problem of the field, which it then tells entry by entry through notifyShape.
 */
export const NotifyField = type("unknown[]").narrow(
  (v, ctx) => NotifyConfig.onDeepUndeclaredKey("reject").allows(v) || ctx.mustBe("a list of destinations"),
) as unknown as typeof NotifyConfig
