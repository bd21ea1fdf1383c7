// Who may talk to a flow server on loopback (`flow mcp --http`; the inspector's rules, docs/VIEW.md): the
// Host must name this server (a foreign site that resolves its name to 127.0.0.1, DNS rebinding, sends its
// own name), an Origin, when a browser sends one, must be this server's, and the request must carry the
// server's secret. Plain functions of a web Request, so any server can use them.
import { timingSafeEqual } from "node:crypto"

/** The server's loopback port and the secret a client must present. */
export type LocalAccess = { port: number; token: string }

export type Refusal = { status: 401 | 403; message: string }

/** The Host values (and Origins) that name this server. */
export function loopbackHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`]
}

/** Why `req` is refused, or undefined when it may be served: wrong Host or Origin (403), a missing or wrong bearer token (401). */
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
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.get("authorization") ?? "")?.[1]
  if (bearer === undefined || !sameSecret(bearer, access.token)) {
    return { status: 401, message: bearer === undefined ? "missing token: send 'Authorization: Bearer <token>'" : "wrong token" }
  }
  return undefined
}

/** Compares in time independent of where the strings differ, so the token cannot be guessed byte by byte. */
export function sameSecret(given: string, secret: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(secret)
  return a.length === b.length && timingSafeEqual(a, b)
}
