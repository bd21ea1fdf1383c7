// `flow view`'s server: the app on Bun.serve, bound to the loopback interface only, and the browser.
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { Exit, FlowError } from "../cli/errors"
import type { Project } from "../cli/project"
import { createApp } from "./app"
import { startLayoutEngine, stopLayoutEngine } from "./layout-engine"
import { LAYOUT_FILE, ViewModel } from "./model"
import { watchProject } from "./watch"

export type ViewServer = { url: string; model: ViewModel; stop: () => Promise<void> }

/** Reads the project (a FlowError when tasks.yaml is missing or invalid), then serves it on `port` (0: any free one). */
export async function startViewServer(project: Project, opts: { port: number; user: string }): Promise<ViewServer> {
  // Without a saved layout the graph will need ELK: its worker loads and warms up while tasks.yaml is read.
  if (!existsSync(join(project.stateDir, LAYOUT_FILE))) startLayoutEngine()
  const model = new ViewModel(project)
  await model.refresh()
  const token = randomBytes(24).toString("hex")
  let app: ReturnType<typeof createApp> | undefined
  let server: ReturnType<typeof Bun.serve>
  try {
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: opts.port,
      // Bun closes a connection idle for 10 s by default, which would cut a quiet event stream.
      idleTimeout: 0,
      fetch: (req) => (app as NonNullable<typeof app>).fetch(req),
    })
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    throw new FlowError(
      code === "EADDRINUSE" ? `port ${opts.port} on 127.0.0.1 is in use` : `cannot listen on 127.0.0.1:${opts.port}: ${(e as Error).message}`,
      Exit.failure,
      "pass another --port, or leave it out to take a free one",
      { cause: e },
    )
  }
  const port = server.port as number
  app = createApp({ model, port, token, user: opts.user })
  const unwatch = watchProject(project, () => void model.refresh())
  return {
    url: `http://127.0.0.1:${port}/`,
    model,
    stop: async () => {
      await unwatch()
      stopLayoutEngine()
      await server.stop(true)
    },
  }
}

/** Opens `url` in the default browser; the reason it could not, or undefined. */
export async function openBrowser(url: string, platform: string): Promise<string | undefined> {
  const argv = platform === "darwin" ? ["open", url] : platform === "win32" ? ["explorer.exe", url] : ["xdg-open", url]
  try {
    const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore" })
    const code = await proc.exited
    return code === 0 ? undefined : `${argv[0]} exited with ${code}`
  } catch (e) {
    return `${argv[0]} could not be started (${(e as Error).message})`
  }
}
