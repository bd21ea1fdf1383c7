// `flow view`'s server: the app on Bun.serve, bound to the loopback interface only, and the browser.
import { randomBytes } from "node:crypto"
import { existsSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type { Project } from "../cli/project"
import { openExistingState } from "../state/state"
import { openStore } from "../store/open"
import { ensureStateDir } from "../store/valid-cache"
import { createApp } from "./app"
import { serveLoopback, withToken } from "../cli/loopback"
import { startLayoutEngine, stopLayoutEngine } from "./layout-engine"
import { LAYOUT_FILE, PRIVATE_FILE, ViewModel } from "./model"
import { watchProject } from "./watch"
import { recordServing } from "./serving"

export type ViewServer = {
  /** the page's address with the token: what the person opens */
  url: string
  /** the address alone, for messages that may end up in a log */
  address: string
  model: ViewModel
  /** opens the page in the default browser; the reason it could not, or undefined */
  open: (platform: string) => Promise<string | undefined>
  stop: () => Promise<void>
}

/** Reads the project (a FlowError when tasks.yaml is missing or invalid), then serves it on `port` (0: any free one). */
export async function startViewServer(project: Project, opts: { port: number; user: string }): Promise<ViewServer> {
  // Without a saved layout the graph will need ELK: its worker loads and warms up while tasks.yaml is read.
  if (!existsSync(join(project.stateDir, LAYOUT_FILE))) startLayoutEngine()
  const model = new ViewModel(project)
  await model.refresh()
  const token = randomBytes(24).toString("hex")
  let app: ReturnType<typeof createApp> | undefined
  // Bun closes a connection idle for 10 s by default, which would cut a quiet event stream: serveLoopback has none.
  const server = serveLoopback(opts.port, (req) => (app as NonNullable<typeof app>).fetch(req), "pass another --port, or leave it out to take a free one")
  const port = server.port as number
  app = createApp({ model, port, token, user: opts.user })
  const unwatch = watchProject(project, () => void model.refresh())
  const unpoll = await pollShared(project, () => void model.refresh())
  const address = `http://127.0.0.1:${port}/`
  const url = withToken(address, token)
  const redirect = join(project.stateDir, `view-open-${port}.html`)
  const unrecord = recordServing(project.stateDir, address)
  return {
    url,
    address,
    model,
    open: (platform) => openBrowser(redirectFile(redirect, url) ?? url, platform),
    stop: async () => {
      await unwatch()
      unpoll()
      stopLayoutEngine()
      rmSync(redirect, { force: true })
      unrecord()
      await server.stop(true)
    },
  }
}

/**
 * A page only the person can read that sends the browser on to `url`, as notebook servers do: the browser
 * is started with this file's address, since an argv holding the token is in every local user's `ps` for
 * as long as the browser runs. In .flow/ rather than /tmp: a snap browser cannot read /tmp. Undefined when
 * it cannot be written (a read-only project): the address itself is opened then.
 */
function redirectFile(file: string, url: string): string | undefined {
  const html = `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer"><meta http-equiv="refresh" content="0;url=${url}"><title>flow view</title><p><a href="${url}">Open flow view</a></p>\n`
  try {
    ensureStateDir(join(file, ".."))
    rmSync(file, { force: true }) // a leftover keeps its mode: write a new file
    writeFileSync(file, html, { mode: PRIVATE_FILE, flag: "wx" })
    return pathToFileURL(file).href
  } catch {
    return undefined
  }
}

/** Opens `target` (an address or a file:// URL) in the default browser; the reason it could not, or undefined. */
export async function openBrowser(target: string, platform: string): Promise<string | undefined> {
  const argv = platform === "darwin" ? ["open", target] : platform === "win32" ? ["explorer.exe", target] : ["xdg-open", target]
  try {
    const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore" })
    const code = await proc.exited
    return code === 0 ? undefined : `${argv[0]} exited with ${code}`
  } catch (e) {
    return `${argv[0]} could not be started (${(e as Error).message})`
  }
}

/** How often the page of a shared project looks for changes others made (docs/FLEET.md). */
const SHARED_POLL_MS = 2_000

/**
 * A shared project changes in the database, where no file event says so: its graph's version and its run
 * state are looked at every few seconds and `onChange` is called when either moved. Nothing for a project in files.
 */
async function pollShared(project: Project, onChange: () => void): Promise<() => void> {
  const store = await openStore(project)
  if (!store.shared) return () => {}
  const state = await openExistingState(project)
  let version = (await store.read()).version
  await state?.changed()
  let busy = false
  const timer = setInterval(async () => {
    if (busy) return
    busy = true
    try {
      const now = (await store.read()).version
      const moved = (await state?.changed()) === true
      if (now !== version || moved) onChange()
      version = now
    } catch {
      // The database away for a moment: the next look tries again; the page keeps what it shows.
    } finally {
      busy = false
    }
  }, SHARED_POLL_MS)
  return () => clearInterval(timer)
}
