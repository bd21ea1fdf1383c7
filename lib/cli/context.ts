import { Exit, FlowError } from "./errors"

/** The input side of a terminal: Node's and Bun's process.stdin when it is a TTY. */
export type TtyInput = {
  setRawMode(mode: boolean): unknown
  setEncoding(encoding: "utf8"): unknown
  resume(): unknown
  pause(): unknown
  on(event: "data", listener: (data: string) => void): unknown
  off(event: "data", listener: (data: string) => void): unknown
}

/** The output side of a terminal: process.stdout when it is a TTY. */
export type TtyOutput = {
  columns: number
  rows: number
  write(text: string): unknown
  on(event: "resize", listener: () => void): unknown
  off(event: "resize", listener: () => void): unknown
}

/** Everything a command may touch of the outside world; tests build their own. */
export type Ctx = {
  cwd: string
  env: Record<string, string | undefined>
  stdout: (text: string) => void
  stderr: (text: string) => void
  /**
   * Writes a command's only output, when nothing follows it (`flow --version`): through Bun's own writer, as
   * node:fs costs a compiled flow's start more than the rest of that command. Absent in tests' ctx: `stdout` then.
   */
  only?: (text: string) => Promise<void>
  /** stdin and stdout are a terminal and CI is not set: prompts may be shown. */
  interactive: boolean
  /** colour codes may be written: a TTY (or FORCE_COLOR set) and no NO_COLOR, which always wins. */
  color: boolean
  /**
   * Calls `handler` on Ctrl-C (SIGINT) instead of dying, until the returned function is called. For the
   * few commands that wait (`flow ask --wait`) and must say what was left behind. Absent in tests' ctx.
   */
  onInterrupt?: (handler: () => void) => () => void
  /** The terminal's streams, for a full-screen command (lib/terminal/screen.ts); set only when `interactive` is. */
  terminal?: { input: TtyInput; output: TtyOutput }
}

/** The signals that ask a long-running command (a run, a live screen) to stop: Ctrl-C, kill, a closed terminal. */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const

/**
 * The context of the real process. It touches none of process.stdout, stdin or stderr until a command writes
 * or asks for the terminal: in a compiled binary the first touch builds Node's stream objects (node:stream,
 * node:fs write streams), which cost more than all of `flow --version` (docs/PERFORMANCE.md, "Start-up").
 * Whether a stream is a terminal is asked of the file descriptor directly, for the same reason.
 */
export function ctxFromProcess(): Ctx {
  const env = process.env
  const tty = isTerminal(1)
  const interactive = tty && isTerminal(0) && !env.CI
  return {
    cwd: process.cwd(),
    env,
    stdout: writeOrLeave,
    only: (text) => Bun.write(Bun.stdout, text).then(() => undefined, leaveIfReaderGone),
    stderr: (text) => void process.stderr.write(text),
    interactive,
    color: !env.NO_COLOR && (Boolean(env.FORCE_COLOR && env.FORCE_COLOR !== "0") || (tty && env.TERM !== "dumb")),
    onInterrupt: (handler) => {
      process.on("SIGINT", handler)
      return () => void process.off("SIGINT", handler)
    },
    // A getter: a person's `flow list` in a terminal need not build process.stdin.
    get terminal() {
      return interactive ? { input: process.stdin as unknown as TtyInput, output: process.stdout as unknown as TtyOutput } : undefined
    },
  }
}

type TtyWrap = { isTTY(fd: number): boolean }

/**
 * isatty(fd), as process.stdout.isTTY answers it, without building the stream: Bun's `tty_wrap` binding (the
 * one node:tty's isatty calls; Bun's tests hold the two equal). node:tty itself loads node:net and node:stream.
 */
function isTerminal(fd: number): boolean {
  const proc = process as unknown as { binding?(name: string): TtyWrap | undefined }
  try {
    const wrap = proc.binding?.("tty_wrap")
    if (typeof wrap?.isTTY === "function") return wrap.isTTY(fd)
  } catch {
    // a runtime without the binding: ask the stream below
  }
  return Boolean((fd === 0 ? process.stdin : process.stdout).isTTY)
}

let readerGone: (() => void) | undefined
let gone = false

/**
 * For a command that must not just vanish when stdout's reader goes (`flow run | head -1` has agents to
 * stop): `handler` is called once instead of leaving with exit 0, and later output is dropped.
 */
export function onReaderGone(handler: (() => void) | undefined): void {
  readerGone = handler
}

// `flow list | head`: once the reader has gone, the rest of the output has nowhere to go. Leave quietly,
// as `cat` and `git log` do, instead of printing a stack trace (docs/CLI.md).
// The writes go straight to fd 1, synchronously: process.stdout's Node stream layer costs a compiled flow more
// than the rest of `flow --version`. A reader that has gone makes the write throw EPIPE, as
// process.stdout.write does. An fd 1 left non-blocking by whoever started flow can refuse a write (EAGAIN):
// from then on the output goes through process.stdout, which waits for the reader, so nothing is lost or
// reordered. On Windows process.stdout stays the way: a console takes its text through WriteConsoleW.
let stream: NodeJS.WriteStream | undefined

function stdoutStream(): NodeJS.WriteStream {
  if (!stream) {
    stream = process.stdout
    stream.on("error", leaveIfReaderGone)
  }
  return stream
}

function writeOrLeave(text: string): void {
  if (gone) return
  try {
    let rest: string | Uint8Array = text
    if (!stream && process.platform !== "win32") {
      // Required here, not imported: node:fs costs the start of every command, `flow --version` the most.
      const { writeSync } = require("node:fs") as typeof import("node:fs")
      const bytes = Buffer.from(text)
      let done = 0
      try {
        while (done < bytes.length) done += writeSync(1, bytes, done)
        return
      } catch (e) {
        if ((e as NodeJS.ErrnoException)?.code !== "EAGAIN") throw e
        // The bytes, not a string: a refused write may have split a character.
        rest = bytes.subarray(done)
      }
    }
    stdoutStream().write(rest)
  } catch (e) {
    leaveIfReaderGone(e)
  }
}

function leaveIfReaderGone(e: unknown): void {
  const code = (e as NodeJS.ErrnoException)?.code
  // Any other refusal (a full disk: `flow list > /dev/full`) is an error of the command, said as one.
  if (typeof code === "string" && code !== "EPIPE")
    throw new FlowError(`could not write to standard output: ${(e as Error).message}`, Exit.failure, "send the output where there is room (a full disk?)")
  if (code !== "EPIPE") throw e
  if (gone) return
  if (!readerGone) process.exit(0)
  gone = true
  readerGone()
}
