// Who may talk to a loopback server of flow's (the inspector, and `flow mcp --http`): only a request that
// carries the server's token. Loopback is no boundary on a shared machine: every local user can connect, so
// without the token another user reads every instruction and prompt (issue 21). Notebook servers' rule: the
// address printed at start carries the token (`?token=`); a page opened from it keeps it in a cookie named
// after the port (HttpOnly, SameSite=Strict), and scripts may send it as `Authorization: Bearer` or in
// `x-flow-token`. Nothing here knows Hono: a plain Request in, a verdict out.
import { createHash, timingSafeEqual } from "node:crypto"

/** The header the inspector's page sends its token in (writes need it even with the cookie: docs/VIEW.md). */
export const TOKEN_HEADER = "x-flow-token"
/** The query parameter of the address a server prints. */
export const TOKEN_PARAM = "token"

/** Where an accepted token came from. */
export type TokenSource = "query" | "cookie" | "bearer" | "header"
export type Access = { allowed: true; via: TokenSource } | { allowed: false; reason: "no token" | "wrong token" }

/**
 * Whether `req` carries `expected`: in the `?token=` query, the cookie `cookie` (when a name is given), an
 * `Authorization: Bearer` header or the x-flow-token header. Any one matching is enough; the comparison
 * takes the same time whatever the guess.
 */
export function checkToken(expected: string, req: Request, cookie?: string): Access {
  const offered: [TokenSource, string | undefined][] = [
    ["query", queryToken(req.url)],
    ["cookie", cookie ? cookieValue(req.headers.get("cookie"), cookie) : undefined],
    ["bearer", /^Bearer\s+(\S+)\s*$/i.exec(req.headers.get("authorization") ?? "")?.[1]],
    ["header", req.headers.get(TOKEN_HEADER) ?? undefined],
  ]
  let any = false
  for (const [via, token] of offered) {
    if (token === undefined || token === "") continue
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
