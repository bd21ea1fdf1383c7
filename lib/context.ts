/** Everything a command may touch of the outside world; tests build their own. */
export type Ctx = {
  cwd: string
  env: Record<string, string | undefined>
  stdout: (text: string) => void
  stderr: (text: string) => void
  /** stdin and stdout are a terminal and CI is not set: prompts may be shown. */
  interactive: boolean
  /** colour codes may be written: a TTY (or FORCE_COLOR set) and no NO_COLOR, which always wins. */
  color: boolean
  /**
   * Calls `handler` on Ctrl-C (SIGINT) instead of dying, until the returned function is called. For the
   * few commands that wait (`flow ask --wait`) and must say what was left behind. Absent in tests' ctx.
   */
  onInterrupt?: (handler: () => void) => () => void
  /** The terminal, for a full-screen command (`flow dashboard`); set only when `interactive` is. */
  terminal?: Terminal
}

/** A terminal a command may take over and give back. */
export type Terminal = {
  /** columns and rows now */
  size: () => { columns: number; rows: number }
  /**
   * Switches to the alternate screen with the cursor hidden and keys read one by one (raw mode); calls
   * `onKey` with each chunk of input, `onResize` when the size changes and `onStop` on SIGINT, SIGTERM or
   * SIGHUP. The returned function restores the terminal (it also runs when the process exits first).
   */
  takeOver: (handlers: { onKey: (key: string) => void; onResize: () => void; onStop: () => void }) => () => void
}

/** The context of the real process. */
export function ctxFromProcess(): Ctx {
  const env = process.env
  process.stdout.on("error", leaveIfReaderGone)
  const tty = Boolean(process.stdout.isTTY)
  const interactive = tty && Boolean(process.stdin.isTTY) && !env.CI
  return {
    cwd: process.cwd(),
    env,
    stdout: writeOrLeave,
    stderr: (text) => void process.stderr.write(text),
    interactive,
    color: !env.NO_COLOR && (Boolean(env.FORCE_COLOR && env.FORCE_COLOR !== "0") || (tty && env.TERM !== "dumb")),
    onInterrupt: (handler) => {
      process.on("SIGINT", handler)
      return () => void process.off("SIGINT", handler)
    },
    terminal: interactive ? processTerminal : undefined,
  }
}

const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const

const processTerminal: Terminal = {
  size: () => ({ columns: process.stdout.columns || 80, rows: process.stdout.rows || 24 }),
  takeOver: ({ onKey, onResize, onStop }) => {
    const { stdin, stdout } = process
    const key = (chunk: Buffer) => onKey(chunk.toString("utf8"))
    stdout.write("\x1b[?1049h\x1b[?25l") // alternate screen, cursor hidden
    stdin.setRawMode(true)
    stdin.on("data", key)
    stdin.resume()
    stdout.on("resize", onResize)
    for (const s of STOP_SIGNALS) process.on(s, onStop)
    let restored = false
    const restore = () => {
      if (restored) return
      restored = true
      process.off("exit", restore)
      for (const s of STOP_SIGNALS) process.off(s, onStop)
      stdout.off("resize", onResize)
      stdin.off("data", key)
      stdin.setRawMode(false)
      // A paused stdin no longer keeps the process alive.
      stdin.pause()
      stdout.write("\x1b[?25h\x1b[?1049l")
    }
    process.on("exit", restore)
    return restore
  },
}

// `flow list | head`: once the reader has gone, the rest of the output has nowhere to go. Leave quietly,
// as `cat` and `git log` do, instead of printing a stack trace (docs/CLI.md).
function writeOrLeave(text: string): void {
  try {
    process.stdout.write(text)
  } catch (e) {
    leaveIfReaderGone(e)
  }
}

function leaveIfReaderGone(e: unknown): void {
  if ((e as NodeJS.ErrnoException)?.code === "EPIPE") process.exit(0)
  throw e
}
