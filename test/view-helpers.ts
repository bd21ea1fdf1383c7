// Starting `flow view` for a test, shared by the view and phases tests.
import { flowArgv, type TempDir } from "./helpers"

/** `flow view --no-open` left running; resolves with its address, stopped on dispose (Ctrl-C). */
export async function startView(dir: TempDir, args: string[] = []) {
  const proc = Bun.spawn([...flowArgv(), "view", "--no-open", ...args], {
    cwd: dir.path,
    env: { ...process.env, NO_COLOR: "1" },
    stdout: "pipe",
    stderr: "pipe",
  })
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  let out = ""
  while (!out.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`flow view ended early: ${await new Response(proc.stderr).text()}`)
    out += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return {
    url: out.split("\n")[0],
    proc,
    [Symbol.asyncDispose]: async () => {
      proc.kill("SIGINT")
      await proc.exited
    },
  }
}
