// The inspector's HTTP app (Hono): the embedded page, the JSON API and the change events. Served by
// lib/view/server.ts on 127.0.0.1; tests call `createApp(...).request()` in memory.
//
// Security (docs/VIEW.md): a request whose Host is not this server's loopback address and port is refused
// (DNS rebinding: a foreign site resolving its name to 127.0.0.1 would otherwise read the API); the two
// writing endpoints need the per-server token that only the served page carries, in a header a cross-site
// form cannot set, and an Origin equal to the server's own; nothing is read from disk by request path.
import { Hono, type Context } from "hono"
import { randomBytes } from "node:crypto"
import { streamSSE } from "hono/streaming"
import { reviewCheckpoint } from "../store/checkpoint-review"
import { FlowError } from "../cli/errors"
import type { Question, QuestionsReport, RunUsage, ViewQueueReport } from "../model/json-shapes"
import { readProjectQueues } from "../landing/queue-report"
import { openExistingState } from "../state/state"
import { formatChange } from "../store/transitions"
import { readUsage } from "../budget/usage"
import { readRunBudget } from "../budget/budget-report"
import { readBudgetConfig } from "../config/budget-config"
import { FILES, INDEX_HTML } from "./assets"
import { checkToken, loopbackHosts, sameToken, TOKEN_HEADER, tokenCookie, tokenCookieName } from "../cli/loopback"
import type { ViewModel } from "./model"
import { answerCheck } from "../budget/budget-answer"

export type AppOptions = {
  model: ViewModel
  /** the port the server listens on: the Host header must name it */
  port: number
  /** the per-server secret the page sends with every answer */
  token: string
  /** who answers from the page (answered_by) */
  user: string
  /** seconds between SSE keep-alive comments (tests shorten it) */
  heartbeatSeconds?: number
}

export { TOKEN_HEADER }
/** The prefix of the inspector's cookie; the port completes its name. */
export const COOKIE_PREFIX = "flow-view"

// The page loads nothing but its own files: scripts and styles only from this origin, no inline script.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type ApiError = { error: string; hint?: string }

export function createApp(opts: AppOptions): Hono {
  const app = new Hono()
  // Names this server to its pages: a page from an earlier `flow view` on the same port holds a dead token,
  // and reloads when the events it reconnects to come from another instance.
  const instance = randomBytes(8).toString("hex")
  guardRequests(app, opts)
  servePage(app, opts, instance)
  serveReads(app, opts.model)
  serveWrites(app, opts)
  serveEvents(app, opts, instance)
  app.notFound((c) => c.json<ApiError>({ error: `nothing at ${c.req.path}` }, 404))
  return app
}

/** Every request: refused unless for this server's loopback address and carrying its token; safe headers on the answer. */
function guardRequests(app: Hono, opts: AppOptions) {
  const hosts = new Set(loopbackHosts(opts.port))
  const cookie = tokenCookieName(COOKIE_PREFIX, opts.port)
  app.use("*", async (c, next) => {
    const host = c.req.header("host")
    if (host === undefined || !hosts.has(host)) {
      return c.text(
        `flow view: refused a request ${host === undefined ? "without a Host header" : `for host '${host}'`}: only http://127.0.0.1:${opts.port} is served\n`,
        403,
      )
    }
    // Every request, the page and its scripts included: the page holds the token for writes, and the
    // rest is the project's instructions and prompts (issue 21).
    const access = checkToken(opts.token, c.req.raw, { cookie })
    if (!access.allowed) return refuseAccess(c, access.reason, opts.port)
    await next()
    c.header("X-Content-Type-Options", "nosniff")
    c.header("Referrer-Policy", "no-referrer")
    // The tokened address opened the page: the cookie lets its scripts, API calls and events in after the
    // page has taken the token out of the address bar.
    if (access.via === "query") c.header("Set-Cookie", tokenCookie(cookie, opts.token))
  })
}

/** The page, with its token and instance, and its files. */
function servePage(app: Hono, opts: AppOptions, instance: string) {
  app.get("/", (c) => {
    c.header("Content-Security-Policy", CSP)
    c.header("Cache-Control", "no-store")
    return c.html(INDEX_HTML.replace("{{TOKEN}}", opts.token).replace("{{INSTANCE}}", instance))
  })
  for (const [path, file] of FILES) app.get(path, (c) => asset(c, file.body, file.type))
}

/** The JSON API's reads: tasks, a task, a layout, questions, usage and the merge queues. */
function serveReads(app: Hono, model: ViewModel) {
  app.get("/api/tasks", (c) => guarded(c, () => c.json(model.tasks())))
  app.get("/api/tasks/:id", (c) =>
    guarded(c, async () => {
      const id = c.req.param("id")
      const report = await model.task(id)
      return report ? c.json(report) : c.json<ApiError>({ error: `no task '${id}'`, hint: "it may have been removed from tasks.yaml" }, 404)
    }),
  )
  app.get("/api/layout/:key", (c) =>
    guarded(c, async () => {
      const layout = model.layout(c.req.param("key"))
      if (!layout)
        return c.json<ApiError>(
          { error: `no layout '${c.req.param("key")}': the graph has changed since`, hint: "fetch /api/tasks for the current layout_key" },
          404,
        )
      c.header("Cache-Control", "private, max-age=31536000, immutable")
      return c.json(await layout)
    }),
  )
  app.get("/api/questions", (c) =>
    guarded(c, async () => {
      const db = await openExistingState(model.project)
      let questions: Question[] = []
      if (db) {
        using open = db
        questions = await open.questions.pending()
      }
      return c.json<QuestionsReport>({ questions })
    }),
  )

  app.get("/api/usage", (c) =>
    guarded(c, async () => {
      const { run, total } = await readUsage(model.project)
      return c.json<RunUsage>({ run, total, budget: await readRunBudget(model.project, await readBudgetConfig(model.project.dir)) })
    }),
  )

  app.get("/api/queue", (c) => guarded(c, async () => c.json<ViewQueueReport>({ queue: await readProjectQueues(model.project) })))
}

/** The two writes, from the page only (checkWriter): a question's answer and a checkpoint's review. */
function serveWrites(app: Hono, opts: AppOptions) {
  const { model } = opts
  app.post("/api/questions/:id/answer", async (c) => {
    const refused = checkWriter(c, opts)
    if (refused) return refused
    const body = await jsonBody(c)
    if (body instanceof Response) return body
    const text = typeof body.answer === "string" ? body.answer.trim() : ""
    if (!text) return c.json<ApiError>({ error: "the answer is empty", hint: 'send {"answer": "<text>"}' }, 400)
    const id = c.req.param("id")
    return guarded(c, async () => {
      const db = await openExistingState(model.project)
      if (!db) return c.json<ApiError>({ error: `no question '${id}': no question has been asked in this project` }, 404)
      using open = db
      const { before, after } = await open.questions.answer(id, text, opts.user, { accept: await answerCheck(model.project, open, id) })
      if (!before) return c.json<ApiError>({ error: `no question '${id}'` }, 404)
      if (!after)
        return c.json<ApiError>(
          { error: `${id} was already answered${before.answered_by ? ` by ${before.answered_by}` : ""}`, hint: "reload the questions" },
          409,
        )
      return c.json({ question: after })
    })
  })

  // A checkpoint's review (SPEC 3.2 rule 5): the reviewer marks it done, or blocked with a note.
  app.post("/api/tasks/:id/review", async (c) => {
    const refused = checkWriter(c, opts)
    if (refused) return refused
    const body = await jsonBody(c)
    if (body instanceof Response) return body
    const id = c.req.param("id")
    const decision = body.decision
    const reason = typeof body.reason === "string" ? body.reason.trim() : ""
    if (decision !== "done" && decision !== "block") return c.json<ApiError>({ error: "decision must be 'done' or 'block'" }, 400)
    if (decision === "block" && !reason) return c.json<ApiError>({ error: "blocking a checkpoint needs a reason", hint: "say what the review found" }, 400)
    return guarded(c, async () => {
      const changes = await reviewCheckpoint(model.project, id, decision, reason, "flow view")
      return c.json({ changes: changes.map(formatChange) })
    })
  })
}

/** The change events (SSE): the model's version first, then every change, with a keep-alive comment. */
function serveEvents(app: Hono, opts: AppOptions, instance: string) {
  const { model } = opts
  app.get("/api/events", (c) =>
    streamSSE(c, async (stream) => {
      const closed = Promise.withResolvers<void>()
      stream.onAbort(() => closed.resolve())
      // Events are written in order, one at a time, whatever the pace of the model.
      let chain: Promise<unknown> = stream.writeSSE({ event: "version", data: JSON.stringify({ version: model.version, instance }) })
      const off = model.subscribe((e) => {
        chain = chain.then(() => stream.writeSSE({ event: e.type, data: JSON.stringify(e) })).catch(() => closed.resolve())
      })
      // A comment now and then keeps proxies and the browser from taking a quiet stream for a dead one.
      const ping = setInterval(
        () => {
          chain = chain.then(() => stream.write(": ping\n\n")).catch(() => closed.resolve())
        },
        (opts.heartbeatSeconds ?? 15) * 1000,
      )
      await closed.promise
      clearInterval(ping)
      off()
    }),
  )
}

function asset(c: Context, body: string, type: string): Response {
  c.header("Content-Type", type)
  c.header("Cache-Control", "no-cache")
  return c.body(body)
}

/** A FlowError (an invalid tasks.yaml, a refused change) becomes a JSON error; anything else is a bug. */
async function guarded(c: Context, fn: () => Response | Promise<Response>): Promise<Response> {
  try {
    return await fn()
  } catch (e) {
    if (!(e instanceof FlowError)) throw e
    return c.json<ApiError>({ error: e.message, ...(e.hint ? { hint: e.hint } : {}) }, 409)
  }
}

/** The token and same-origin checks of the writing endpoints; a Response when the request is refused. */
function checkWriter(c: Context, opts: AppOptions): Response | undefined {
  if (!sameToken(c.req.header(TOKEN_HEADER) ?? "", opts.token)) {
    return c.json<ApiError>({ error: "missing or wrong token", hint: "answer from the page 'flow view' opened, or with 'flow answer'" }, 403)
  }
  const origin = c.req.header("origin")
  const host = c.req.header("host") // checked against this server's address by the first middleware
  const site = c.req.header("sec-fetch-site")
  if (origin !== `http://${host}` || (site !== undefined && site !== "same-origin")) {
    return c.json<ApiError>({ error: `cross-origin request refused (origin ${origin ?? "missing"})` }, 403)
  }
  return undefined
}

/** A request without the token: no data, only what to do. JSON for the API, text for a browser's address bar. */
function refuseAccess(c: Context, reason: string, port: number): Response {
  c.header("WWW-Authenticate", 'Bearer realm="flow view"')
  c.header("Cache-Control", "no-store")
  const error = `${reason === "no token" ? "this request has no token" : "wrong token"}: flow view answers only requests with the token of the address it printed`
  const hint = `open the address 'flow view' printed (http://127.0.0.1:${port}/?token=...); a restarted flow view has a new token`
  if (c.req.path.startsWith("/api/")) return c.json<ApiError>({ error, hint }, 401)
  return c.text(`flow view: ${error}.\nHint: ${hint}.\n`, 401)
}

/** The request's JSON object, or the 400 answer for a body that is not one. */
async function jsonBody(c: Context): Promise<Record<string, unknown> | Response> {
  let body: unknown
  try {
    body = await c.req.json()
  } catch {
    return c.json<ApiError>({ error: "the request body is not JSON", hint: "send a JSON object with Content-Type: application/json" }, 400)
  }
  if (typeof body === "object" && body !== null && !Array.isArray(body)) return body as Record<string, unknown>
  return c.json<ApiError>({ error: "the request body is not a JSON object", hint: 'send a JSON object such as {"answer": "<text>"}' }, 400)
}
