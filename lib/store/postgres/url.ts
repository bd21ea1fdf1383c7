// PostgreSQL connection URLs as flow reads them: `postgres://user:password@host:port/database?options`, the
// Unix socket form `postgres://user@/database?host=/run/postgresql` included (WHATWG's URL parser refuses an
// empty host with a user, so flow reads it itself). The password is what must never be printed: `shown` is the URL without it, the form flow.yaml
// and every message carry. The query (sslmode, sslrootcert, application_name, ...) is kept as written and
// passed to the client as it is.
import { Exit, FlowError } from "../../cli/errors"

export type DatabaseUrl = {
  /** `postgres:` or `postgresql:` */
  scheme: string
  user: string
  /** the password in the URL (user:password@ or ?password=), decoded; undefined without one */
  password: string | undefined
  /** host[:port], empty for the default (a Unix socket named by ?host=, or localhost) */
  hostPort: string
  /** the path: /database */
  path: string
  /** the query string without `password`, with its `?` (or empty) */
  query: string
}

const SCHEME = /^(postgres(?:ql)?):\/\//

/** Whether `text` looks like a PostgreSQL URL (the `state:` setting's values, FLOW_DATABASE_URL). */
export function isPostgresUrl(text: string): boolean {
  return SCHEME.test(text)
}

/**
 * Parses a postgres:// URL; `where` names its source in the error (it never quotes a URL that may hold a
 * password: a string that does not parse cannot be shown safely).
 */
export function parseUrl(text: string, where: string): DatabaseUrl {
  const scheme = SCHEME.exec(text)?.[1]
  if (!scheme) {
    throw new FlowError(
      `${where} is not a PostgreSQL URL (it must start with postgres:// or postgresql://)`,
      Exit.invalid,
      "write it as postgres://user@host:5432/database (the password goes in FLOW_DATABASE_URL or PGPASSWORD)",
    )
  }
  const rest = text.slice(scheme.length + 3)
  // The user part ends at the last '@' before the query: a password with an unescaped '/' or '@' stays
  // a password (libpq would misread it; showing a piece of it would be worse).
  const queryStart = rest.indexOf("?")
  const at = (queryStart >= 0 ? rest.slice(0, queryStart) : rest).lastIndexOf("@")
  const userInfo = at >= 0 ? rest.slice(0, at) : ""
  const server = rest.slice(at + 1)
  const pathAt = firstOf(server, "/?#")
  const hostPort = server.slice(0, pathAt)
  const after = server.slice(pathAt)
  const colon = userInfo.indexOf(":")
  let password = colon >= 0 ? decode(userInfo.slice(colon + 1), where) : undefined
  const user = decode(colon >= 0 ? userInfo.slice(0, colon) : userInfo, where)
  const queryAt = after.indexOf("?")
  const path = queryAt >= 0 ? after.slice(0, queryAt) : after
  const params = queryAt >= 0 ? after.slice(queryAt + 1).split("&") : []
  const kept: string[] = []
  for (const p of params) {
    if (p.startsWith("password=")) password = decode(p.slice("password=".length), where)
    else if (p !== "") kept.push(p)
  }
  return { scheme, user, password: password === "" ? undefined : password, hostPort, path, query: kept.length ? `?${kept.join("&")}` : "" }
}

/** The URL without its password: the form that is shown, logged and written to flow.yaml. */
export function shownUrl(u: DatabaseUrl): string {
  return `${u.scheme}://${u.user ? `${encodeURIComponent(u.user)}@` : ""}${u.hostPort}${u.path}${u.query}`
}

/** The server and database a URL names (scheme aliases and the password aside), to tell two settings apart. */
export function sameDatabase(a: DatabaseUrl, b: DatabaseUrl): boolean {
  const target = (u: DatabaseUrl) => [u.user, u.hostPort, u.path, socketHost(u)].join("\n")
  return target(a) === target(b)
}

/** Every appearance of `secret` in `text` replaced: for messages a client library built from what it was given. */
export function scrub(text: string, secret: string | undefined): string {
  if (!secret) return text
  let out = text
  for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join("***")
  return out
}

function socketHost(u: DatabaseUrl): string {
  return /(?:^\?|&)host=([^&]*)/.exec(u.query)?.[1] ?? ""
}

function firstOf(text: string, chars: string): number {
  for (let i = 0; i < text.length; i++) if (chars.includes(text[i])) return i
  return text.length
}

function decode(part: string, where: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    throw new FlowError(`${where} has a badly escaped user or password`, Exit.invalid, "percent-encode special characters: @ as %40, : as %3A, / as %2F")
  }
}
