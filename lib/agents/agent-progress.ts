// What a person sees while an agent CLI works for a planning command: on a terminal a clack spinner with
// the elapsed time and the agent's latest tool call or text; elsewhere one stderr line per tool call.
import type { AgentEvent } from "./types"
import type { Ctx } from "../cli/context"

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
  return {
    event: (e) => {
      if (e.type === "tool") s.message(`${start}: ${e.name}${e.detail ? ` ${e.detail}` : ""}`.slice(0, 100))
      else if (e.type === "text") s.message(`${start}: ${e.text.split("\n")[0]}`.slice(0, 100))
      else if (e.type === "notice") s.message(`${start}: ${e.message}`.slice(0, 100))
    },
    stop: (message) => s.stop(message), // the timer indicator adds the elapsed time
  }
}
