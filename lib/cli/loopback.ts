// flow's servers on loopback (`flow mcp --http`, and the rules of the inspector's, docs/VIEW.md): listening on
// 127.0.0.1 only, and who may talk to them. The Host must name this server (a foreign site that resolves its
// name to 127.0.0.1, DNS rebinding, sends its own name), an Origin, when a browser sends one, must be this
// server's, and the request must carry the server's secret. Plain functions of a web Request, so any of
// flow's servers can use them.
import { timingSafeEqual } from "node:crypto"
import { Exit, FlowError } from "./errors"

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
