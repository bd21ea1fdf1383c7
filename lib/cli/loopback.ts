// flow's servers on loopback (the inspector, `flow view`, and `flow mcp --http`): listening on 127.0.0.1 only,
// and who may talk to them. The Host must name this server (a foreign site that resolves its name to
// 127.0.0.1, DNS rebinding, sends its own name), an Origin, when a browser sends one, must be this server's,
// and the request must carry the server's token. Loopback is no boundary on a shared machine: every local
// user can connect, so without the token another user reads every instruction and prompt (issue 21).
// Notebook servers' rule for the inspector: the address printed at start carries the token (`?token=`); a page
// opened from it keeps it in a cookie named after the port (HttpOnly, SameSite=Strict), and scripts send it as
// `Authorization: Bearer` or in `x-flow-token`. MCP clients send it as `Authorization: Bearer` only, as the MCP
// specification has them send a token: an address with the token in it ends up in logs and histories, and no
// MCP client needs one. Plain functions of a web Request: nothing here knows Hono.
import { createHash, timingSafeEqual } from "node:crypto"
import { Exit, FlowError } from "./errors"

/** The server's loopback port and the secret a client must present. */
export type LocalAccess = { port: number; token: string }

export type Refusal = { status: 401 | 403; message: string }

/** The Host values (and Origins) that name this server. */
export function loopbackHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`]
}

/**
 * Why `req` is refused, or undefined when it may be served: wrong Host or Origin (403), a missing or wrong
 * bearer token (401). The token counts only as `Authorization: Bearer` (`flow mcp --http`).
 */
export function refusal(req: Request, access: LocalAccess): Refusal | undefined {
  const hosts = loopbackHosts(access.port)
  const host = req.headers.get("host")
  if (host === null || !hosts.includes(host)) {
    return {
      status: 403,
      message: `refused a request ${host === null ? "without a Host header" : `for host '${host}'`}: only http://127.0.0.1:${access.port} is served`,
    }
  }
  const origin = req.headers.get("origin")
  if (origin !== null && !hosts.some((h) => origin === `http://${h}`)) return { status: 403, message: `cross-origin request refused (origin ${origin})` }
  const token = checkToken(access.token, req, { only: ["bearer"] })
  if (token.allowed) return undefined
  if (token.reason === "wrong token") return { status: 401, message: "wrong token" }
  const elsewhere = queryToken(req.url) !== undefined || req.headers.get(TOKEN_HEADER) !== null
  return {
    status: 401,
    message: elsewhere
      ? `the token is taken only as 'Authorization: Bearer <token>', not in ?${TOKEN_PARAM}= or ${TOKEN_HEADER}`
      : "missing token: send 'Authorization: Bearer <token>'",
  }
}

/**
 * Bun.serve on 127.0.0.1:`port` (0: any free one), with no idle timeout (an event stream or a waiting call may
 * be quiet for long). A port in use is a FlowError whose hint is `hint`.
 */
export function serveLoopback(port: number, fetch: (req: Request) => Response | Promise<Response>, hint: string): ReturnType<typeof Bun.serve> {
  try {
    return Bun.serve({ hostname: "127.0.0.1", port, idleTimeout: 0, fetch })
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    throw new FlowError(
      code === "EADDRINUSE" ? `port ${port} on 127.0.0.1 is in use` : `cannot listen on 127.0.0.1:${port}: ${(e as Error).message}`,
      Exit.failure,
      hint,
      { cause: e },
    )
  }
}

/** The header the inspector's page sends its token in (writes need it even with the cookie: docs/VIEW.md). */
export const TOKEN_HEADER = "x-flow-token"
/** The query parameter of the address a server prints. */
export const TOKEN_PARAM = "token"

/** Where an accepted token came from. */
export type TokenSource = "query" | "cookie" | "bearer" | "header"
export type Access = { allowed: true; via: TokenSource } | { allowed: false; reason: "no token" | "wrong token" }

/**
 * Whether `req` carries `expected`: in the `?token=` query, the cookie `cookie` (when a name is given), an
 * `Authorization: Bearer` header or the x-flow-token header, or only in the places `only` names. Any one
 * matching is enough; the comparison takes the same time whatever the guess.
 */
export function checkToken(expected: string, req: Request, opts: { cookie?: string; only?: readonly TokenSource[] } = {}): Access {
  const offered: [TokenSource, string | undefined][] = [
    ["query", queryToken(req.url)],
    ["cookie", opts.cookie ? cookieValue(req.headers.get("cookie"), opts.cookie) : undefined],
    ["bearer", /^Bearer\s+(\S+)\s*$/i.exec(req.headers.get("authorization") ?? "")?.[1]],
    ["header", req.headers.get(TOKEN_HEADER) ?? undefined],
  ]
  let any = false
  for (const [via, token] of offered) {
    if (token === undefined || token === "" || (opts.only && !opts.only.includes(via))) continue
    any = true
    if (sameToken(token, expected)) return { allowed: true, via }
  }
  return { allowed: false, reason: any ? "wrong token" : "no token" }
}

/** The cookie of the server on `port`: one per port, since a browser sends 127.0.0.1's cookies to every port. */
export function tokenCookieName(prefix: string, port: number): string {
  return `${prefix}-${port}`
}

/** The Set-Cookie value that keeps `token` for the pages of this origin: not readable by scripts, never sent cross-site. */
export function tokenCookie(name: string, token: string): string {
  return `${name}=${token}; Path=/; HttpOnly; SameSite=Strict`
}

/** `url` with `?token=<token>`: the address a server prints and opens. */
export function withToken(url: string, token: string): string {
  const u = new URL(url)
  u.searchParams.set(TOKEN_PARAM, token)
  return u.href
}

function queryToken(url: string): string | undefined {
  const q = url.indexOf("?")
  if (q < 0) return undefined
  const end = url.indexOf("#", q)
  return new URLSearchParams(url.slice(q + 1, end < 0 ? undefined : end)).get(TOKEN_PARAM) ?? undefined
}

function cookieValue(header: string | null, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=")
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** Whether `given` is `expected`, in a time that tells nothing about how close a guess was. */
export function sameToken(given: string, expected: string): boolean {
  // Hashing first gives both sides one length, which timingSafeEqual needs.
  const digest = (s: string) => createHash("sha256").update(s).digest()
  return timingSafeEqual(digest(given), digest(expected))
}
