// Generic full-screen terminal code, shared by the run's terminal UI and `flow dashboard`:
// the alternate screen with a hidden cursor, raw keys, and lines cut to the width without ever wrapping.
// The terminal's streams are passed in (the command hands over process.stdin/stdout), so lib/ stays free
// of process globals.
import type { TtyInput, TtyOutput } from "../cli/context"

export type { TtyInput, TtyOutput }

export type Key = { name: "char"; char: string } | { name: "ctrl-c" | "enter" | "escape" | "tab" | "backspace" | "up" | "down" | "left" | "right" | "other" }

const ESC = "\x1b"
const CSI = `${ESC}[`
// Escape sequences: CSI, OSC and the string kinds (DCS, SOS, PM, APC; terminated or not), any other ESC
// sequence (ESC c resets the terminal, ESC #8 fills it with E, ESC ( 0 switches to line drawing), and a lone
// ESC. SGR (colour) sequences are kept in text; every other one could move the cursor or change the
// terminal, and is dropped.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -/]*[0-~]|\x1b/g
const SGR = /^\x1b\[[0-9;:]*m$/
const ARROWS: Record<string, "up" | "down" | "right" | "left"> = { A: "up", B: "down", C: "right", D: "left" }
const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" })

/** The columns `text` takes in a terminal: ANSI codes count 0, wide (CJK, emoji) characters 2. */
export function textWidth(text: string): number {
  return Bun.stringWidth(text)
}

/**
 * `text` cut to at most `width` columns, ending in `…` when something was cut. ANSI codes are kept (and
 * closed with a reset when the text was cut) and never split; a wide character that would straddle the
 * edge is left out.
 */
export function truncate(text: string, width: number): string {
  if (width <= 0) return ""
  if (textWidth(text) <= width) return text
  let out = ""
  let used = 0
  let styled = false
  let last = 0
  const room = width - 1 // for the ellipsis
  const take = (plain: string): boolean => {
    for (const { segment } of segmenter.segment(plain)) {
      const w = textWidth(segment)
      if (used + w > room) return false
      out += segment
      used += w
    }
    return true
  }
  for (const m of text.matchAll(ANSI)) {
    if (!take(text.slice(last, m.index))) return finish(out, styled)
    out += m[0]
    styled = true
    last = m.index + m[0].length
  }
  take(text.slice(last))
  return finish(out, styled)
}

function finish(out: string, styled: boolean): string {
  return `${out}…${styled ? `${CSI}0m` : ""}`
}

/** `text` padded with spaces (or cut) to exactly `width` columns. */
export function fit(text: string, width: number): string {
  const cut = truncate(text, width)
  return cut + " ".repeat(Math.max(0, width - textWidth(cut)))
}

/**
 * One line of a program's output made safe to draw: tabs become spaces, a carriage return keeps what was
 * drawn over it last (progress bars), colour codes stay, other escape and control codes go.
 */
export function sanitize(line: string): string {
  const afterCr = line.slice(line.lastIndexOf("\r") + 1)
  return afterCr
    .replace(ANSI, (seq) => (SGR.test(seq) ? seq : ""))
    .replaceAll("\t", "    ")
    .replace(/[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]/g, "") // C0 and C1 controls (0x9b is a one-byte CSI)
}

/** The keys in one chunk of raw input. Several keys may arrive in one chunk (typing fast, a paste). */
export function parseKeys(data: string): Key[] {
  const keys: Key[] = []
  for (let i = 0; i < data.length; i++) {
    const c = data[i]
    if (c === ESC) {
      const next = data[i + 1]
      if (next === "[" || next === "O") {
        // A control sequence: parameters, then one final byte in @..~.
        let j = i + 2
        while (j < data.length && !/[@-~]/.test(data[j])) j++
        keys.push({ name: ARROWS[data[j]] ?? "other" })
        i = j
      } else keys.push({ name: "escape" })
    } else if (c === "\x03") keys.push({ name: "ctrl-c" })
    else if (c === "\r" || c === "\n") keys.push({ name: "enter" })
    else if (c === "\t") keys.push({ name: "tab" })
    else if (c === "\x7f" || c === "\b") keys.push({ name: "backspace" })
    else if (c < " ") keys.push({ name: "other" })
    else {
      const cp = data.codePointAt(i)!
      const char = String.fromCodePoint(cp)
      keys.push({ name: "char", char })
      i += char.length - 1
    }
  }
  return keys
}

/**
 * A full-screen terminal: `open` switches to the alternate screen, hides the cursor and reads raw keys;
 * `draw` rewrites only the rows that changed; `close` puts everything back and may be called any number
 * of times, from any exit path.
 */
export class Screen {
  private previous: string[] = []
  private opened = false
  private onData?: (data: string) => void
  private onResize?: () => void

  constructor(
    private readonly input: TtyInput,
    private readonly output: TtyOutput,
  ) {}

  size(): { columns: number; rows: number } {
    return { columns: Math.max(1, this.output.columns || 80), rows: Math.max(1, this.output.rows || 24) }
  }

  open(onKey: (key: Key) => void, onResize: () => void): void {
    if (this.opened) return
    this.opened = true
    this.onData = (data) => {
      for (const key of parseKeys(data)) onKey(key)
    }
    this.onResize = () => {
      this.previous = []
      this.output.write(`${CSI}2J`)
      onResize()
    }
    this.output.write(`${CSI}?1049h${CSI}?25l${CSI}2J`)
    this.input.setRawMode(true)
    this.input.setEncoding("utf8")
    this.input.on("data", this.onData)
    this.input.resume()
    this.output.on("resize", this.onResize)
  }

  /** Draws `lines` from the top, each made safe (`sanitize`) and cut to the width; rows below them are cleared. */
  draw(lines: string[]): void {
    if (!this.opened) return
    const { columns, rows } = this.size()
    // Every line is made safe here, whatever it holds (an agent's output, a title from tasks.yaml).
    const next = Array.from({ length: rows }, (_, row) => (row < lines.length ? truncate(sanitize(lines[row]), columns) : ""))
    let out = ""
    for (const [row, line] of next.entries()) {
      if (this.previous[row] === line) continue
      // Clear first, then write: erasing after a full-width line would take its last cell with it.
      out += `${CSI}${row + 1};1H${CSI}2K${line}${CSI}0m`
    }
    this.previous = next
    // Synchronized output (ignored by terminals that lack it) keeps a frame from showing half drawn.
    if (out) this.output.write(`${CSI}?2026h${out}${CSI}?2026l`)
  }

  close(): void {
    if (!this.opened) return
    this.opened = false
    if (this.onResize) this.output.off("resize", this.onResize)
    if (this.onData) this.input.off("data", this.onData)
    try {
      this.input.setRawMode(false)
    } catch {
      // The terminal may already be gone (closed window): nothing is left to restore.
    }
    this.input.pause()
    this.output.write(`${CSI}0m${CSI}?25h${CSI}?1049l`)
  }
}
