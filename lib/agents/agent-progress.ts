// What a person sees while an agent CLI works for a planning command: on a terminal a clack spinner with
// the elapsed time and the agent's latest tool call or text; elsewhere one stderr line per tool call.
import type { AgentEvent } from "./types"
import type { Ctx } from "../cli/context"
import { sanitize, truncate } from "../terminal/screen"

// clack draws the spinner line as a frame and two spaces, the message, then " [12m 34s]": the message gets
// the rest of the width (room for up to " [999m 59s]"), read at each message so a resized terminal is followed.
const SPINNER_FRAME = 3
const SPINNER_TIMER = 11

export type Progress = { event: (e: AgentEvent) => void; stop: (message: string, seconds?: number) => void }

/** A clack spinner with the elapsed time on a terminal; elsewhere one line per tool call on stderr. */
export async function showProgress(ctx: Ctx, start: string): Promise<Progress> {
  if (!ctx.interactive) {
    ctx.stderr(`${start}...\n`)
    return {
      event: (e) => {
        if (e.type === "tool") ctx.stderr(`  ${e.name}${e.detail ? ` ${e.detail}` : ""}\n`)
        if (e.type === "error") ctx.stderr(`  error: ${e.message}\n`)
        if (e.type === "notice") ctx.stderr(`  ${e.message}\n`)
      },
      stop: (message, seconds) => ctx.stderr(`${message}${seconds === undefined ? "" : ` in ${Math.round(seconds)} s`}\n`),
    }
  }
  // Loaded only here: clack is for terminals, and a prompt without one hangs under Bun.
  const { spinner } = await import("@clack/prompts")
  const s = spinner({ indicator: "timer" })
  s.start(start)
  // clack's spinner puts stdin in raw mode and answers a Ctrl-C keypress with process.exit(0), which would
  // leave the agent's process group running and report success. Back in cooked mode, Ctrl-C is a SIGINT
  // again: the command's interrupt handler stops the agent and exits 130.
  if (process.stdin.isTTY) process.stdin.setRawMode(false)
  // A line longer than the terminal is cut with "…" rather than wrapped (docs/PLANNING.md): clack wraps it,
  // and a tool call's paths are as long as the folders they live in.
  const say = (text: string) => s.message(truncate(sanitize(`${start}: ${text}`), (ctx.terminal?.output.columns || 80) - SPINNER_FRAME - SPINNER_TIMER))
  return {
    event: (e) => {
      if (e.type === "tool") say(`${e.name}${e.detail ? ` ${e.detail}` : ""}`)
      else if (e.type === "text") say(e.text.split("\n")[0])
      else if (e.type === "notice") say(e.message)
    },
    stop: (message) => s.stop(message), // the timer indicator adds the elapsed time
  }
}
