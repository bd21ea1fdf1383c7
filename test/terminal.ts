// A real terminal for tests of prompts and spinners: a private tmux server (its own socket) running one flow
// command, read with capture-pane and driven with send-keys.
import { flowArgv } from "./helpers"

/** A real terminal: a private tmux server running one command in a window of `size` (default 120x60). */
export async function terminal(cwd: string, args: string[], env: Record<string, string> = {}, size = { columns: 120, rows: 60 }) {
  const socket = `flow-test-${process.pid}-${Math.random().toString(36).slice(2)}`
  const tmux = (...a: string[]) => {
    const r = Bun.spawnSync(["tmux", "-L", socket, ...a], { stdout: "pipe", stderr: "pipe" })
    if (r.exitCode !== 0) throw new Error(`tmux ${a[0]} failed: ${r.stderr.toString()}`)
    return r.stdout.toString()
  }
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`
  // CI=1 would make flow non-interactive; the pane stays after flow exits so its last screen can be read.
  const command = `cd ${quote(cwd)} && env -u CI -u FLOW_PROJECT NO_COLOR=1 TZ=${quote(process.env.TZ ?? "Etc/UTC")} ${Object.entries(env)
    .map(([k, v]) => quote(`${k}=${v}`))
    .join(" ")} ${[...flowArgv(), ...args].map(quote).join(" ")}; echo "EXIT=$?"; sleep 600`
  tmux("new-session", "-d", "-s", "t", "-x", String(size.columns), "-y", String(size.rows), command)
  const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "t")
  return {
    screen,
    /** Waits until the screen shows `text` (the terminal has no event to wait on: the screen is polled). */
    async waitFor(text: string, ms = 20_000): Promise<string> {
      const deadline = performance.now() + ms
      for (;;) {
        const s = screen()
        if (s.includes(text)) return s
        if (performance.now() > deadline) throw new Error(`timed out waiting for '${text}'; the screen:\n${s}`)
        await Bun.sleep(50)
      }
    },
    /**
     * Waits until `prompt` shows after the last `after`: a prompt that is drawn is reading keys, while keys
     * sent as soon as `after` (text printed before the prompt) shows may reach the terminal's line mode.
     */
    async waitForPrompt(after: string, prompt: string, ms = 20_000): Promise<string> {
      const deadline = performance.now() + ms
      for (;;) {
        const s = screen()
        const at = s.lastIndexOf(after)
        if (at >= 0 && s.indexOf(prompt, at) >= 0) return s
        if (performance.now() > deadline) throw new Error(`timed out waiting for '${prompt}' after '${after}'; the screen:\n${s}`)
        await Bun.sleep(50)
      }
    },
    /** A tmux format of the pane, e.g. `#{alternate_on}` (1 while the alternate screen is shown). */
    pane: (format: string) => tmux("display-message", "-p", "-t", "t", format).trim(),
    resize: (columns: number, rows: number) => void tmux("resize-window", "-t", "t", "-x", String(columns), "-y", String(rows)),
    keys: (...keys: string[]) => void tmux("send-keys", "-t", "t", ...keys),
    // "--": text starting with "-" (a list item) is text, not a flag.
    type: (text: string) => void tmux("send-keys", "-t", "t", "-l", "--", text),
    [Symbol.dispose]: () => {
      try {
        tmux("kill-server")
      } catch {}
    },
  }
}
