// Starting `flow view` for a test, shared by the view and phases tests.
import { flowArgv, type TempDir } from "./helpers"

/** `flow view --no-open` left running; resolves with its tokened address, stopped on dispose (Ctrl-C). */
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
  const url = out.split("\n")[0]
  const token = new URL(url).searchParams.get("token") ?? ""
  return {
    /** the printed address, with its token */
    url,
    token,
    /** GET of a path of the server, with the token as a script would send it */
    get: (path: string) => fetch(new URL(path, url), { headers: { authorization: `Bearer ${token}` } }),
    proc,
    [Symbol.asyncDispose]: async () => {
      proc.kill("SIGINT")
      await proc.exited
    },
  }
}
