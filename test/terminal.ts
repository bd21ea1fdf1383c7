// A real terminal for tests of prompts and spinners: a private tmux server (its own socket) running one flow
// command, read with capture-pane and driven with send-keys.
import { flowArgv } from "./helpers"

/** A real terminal: a private tmux server running one command in a window of `size` (120x60 by default). */
export async function terminal(cwd: string, args: string[], env: Record<string, string> = {}, size = { columns: 120, rows: 60 }) {
  const socket = `flow-test-${process.pid}-${Math.random().toString(36).slice(2)}`
  const tmux = (...a: string[]) => {
    const r = Bun.spawnSync(["tmux", "-L", socket, ...a], { stdout: "pipe", stderr: "pipe" })
    if (r.exitCode !== 0) throw new Error(`tmux ${a[0]} failed: ${r.stderr.toString()}`)
    return r.stdout.toString()
  }
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`
  // CI=1 would make flow non-interactive; the pane stays after flow exits so its last screen can be read.
  const command = `cd ${quote(cwd)} && env -u CI -u FLOW_PROJECT NO_COLOR=1 TZ=Etc/UTC ${Object.entries(env).map(([k, v]) => quote(`${k}=${v}`)).join(" ")} ${[...flowArgv(), ...args].map(quote).join(" ")}; echo "EXIT=$?"; sleep 600`
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
    keys: (...keys: string[]) => void tmux("send-keys", "-t", "t", ...keys),
    type: (text: string) => void tmux("send-keys", "-t", "t", "-l", text),
    [Symbol.dispose]: () => {
      try {
        tmux("kill-server")
      } catch {}
    },
  }
}
