// A real PostgreSQL server for the tests of the shared store (docs/FLEET.md): one server per test process,
// started on first use by the files that need it, in a temp folder, listening only on a Unix socket there
// (no TCP port), with fsync off; a fresh database per test; stopped when the process exits. As root the
// server runs as the `postgres` user (PostgreSQL refuses to run as root). A test that takes the server away
// (the database lost mid-run) gets one of its own (`ownServer`), so the other tests' server stays up.
//
// Where the binaries are missing the tests that need them are skipped, except in CI (CI=1): there a missing
// server is a failure (.ci/run and scripts/test-deps.sh install Debian's postgresql).
import { SQL } from "bun"
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The role every test connects as (trust on the socket), and one that must give a password. */
export const USER = "flow"
export const PASSWORD_USER = "flow_pw"
export const PASSWORD = "pw-Zq8v-never-printed"

/** The folder of initdb and pg_ctl: PG_BIN, else Debian's newest /usr/lib/postgresql/<n>/bin. */
function binaries(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a))
  return versions.length ? join(root, versions[0], "bin") : undefined
}

const BIN = binaries()

/** Whether the tests of the shared store run here; in CI they always do (a missing server fails them). */
export const HAVE_POSTGRES = BIN !== undefined || process.env.CI === "1"

export type Server = {
  dir: string
  url: (database: string, user?: string) => string
  admin: SQL
  /** `pg_ctl stop -m fast`: the server ends every session and stops listening (its data stays) */
  stop: () => void
  /** the server again, on the same data, socket and settings */
  start: () => void
  /** whether it runs (not stopped) */
  running: () => boolean
}

/** A server and its end: stopped at once and its folder removed. */
type Launched = Server & { destroy: () => void }

let started: Promise<Server> | undefined
let count = 0

/** argv as the server's user: `postgres` when this process is root, else this user. */
function asServerUser(argv: string[]): string[] {
  return process.getuid?.() === 0 ? ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", ...argv] : argv
}

function check(argv: string[]): void {
  const p = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" })
  if (p.exitCode !== 0) throw new Error(`${argv.join(" ")} failed (${p.exitCode}): ${p.stderr.toString()}${p.stdout.toString()}`)
}

/** What a server is started with: `maxConnections`, the server's max_connections (400 unless said). */
type ServerSettings = { maxConnections?: number }

async function start(settings: ServerSettings = {}): Promise<Launched> {
  if (!BIN) throw new Error("PostgreSQL is not installed (no /usr/lib/postgresql/<n>/bin/pg_ctl, and PG_BIN is unset): run scripts/test-deps.sh")
  const dir = mkdtempSync(join(tmpdir(), "flow-pg-"))
  // Private to the server's user: the socket there trusts whoever can reach it.
  chmodSync(dir, 0o700)
  if (process.getuid?.() === 0) chownSync(dir, Number(Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString()), 0)
  const data = join(dir, "data")
  check(asServerUser([join(BIN, "initdb"), "-D", data, "-U", USER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"]))
  // The password role must authenticate; everyone else is trusted on the private socket.
  writeFileSync(join(data, "pg_hba.conf"), `local all ${PASSWORD_USER} scram-sha-256\nlocal all all trust\n`)
  const options = [
    "-k",
    dir,
    "-c",
    "listen_addresses=",
    "-c",
    "fsync=off",
    "-c",
    "synchronous_commit=off",
    "-c",
    "full_page_writes=off",
    "-c",
    `max_connections=${settings.maxConnections ?? 400}`,
  ]
  const pgCtl = join(BIN, "pg_ctl")
  let running = false
  const startServer = () => {
    check(asServerUser([pgCtl, "-D", data, "-l", join(dir, "server.log"), "-w", "-o", options.map(quoteOption).join(" "), "start"]))
    running = true
  }
  startServer()
  const destroy = () => {
    Bun.spawnSync(asServerUser([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]), { stdout: "ignore", stderr: "ignore" })
    rmSync(dir, { recursive: true, force: true })
  }
  process.on("exit", destroy)
  // `bun test` runs no exit handler, nor does a process killed outright: a watchdog stops the server and
  // removes its folder once this pid is gone (seen through /proc: as the server's user it may not signal root).
  Bun.spawn(
    asServerUser([
      "sh",
      "-c",
      'while [ -e "/proc/$1" ]; do sleep 1; done; "$2" -D "$3" -m immediate -w stop >/dev/null 2>&1; rm -rf "$4"',
      "watchdog",
      String(process.pid),
      join(BIN, "pg_ctl"),
      data,
      dir,
    ]),
    { stdout: "ignore", stderr: "ignore", stdin: "ignore" },
  ).unref()
  const url = (database: string, user = USER) => `postgres://${user}@localhost/${database}?host=${dir}`
  // One connection on a server of few (a pool opens several at once, each a slot taken from the test).
  const admin = new SQL({ url: url("postgres"), ...(settings.maxConnections !== undefined ? { max: 1 } : {}) })
  await admin.unsafe(`CREATE ROLE ${PASSWORD_USER} LOGIN SUPERUSER PASSWORD '${PASSWORD}'`)
  return {
    dir,
    url,
    admin,
    stop: () => {
      running = false
      check(asServerUser([pgCtl, "-D", data, "-m", "fast", "-w", "stop"]))
    },
    start: startServer,
    running: () => running,
    destroy,
  }
}

/** pg_ctl -o takes one string that the server splits on spaces; the values here hold none but the empty one. */
function quoteOption(o: string): string {
  return o.endsWith("=") ? `${o}''` : o
}

/** The shared server, started on first use. */
export function server(): Promise<Server> {
  started ??= start()
  return started
}

/** A server of the caller's own, which it may stop and start again; gone when disposed. */
export async function ownServer(settings: ServerSettings = {}): Promise<Server & AsyncDisposable> {
  const { destroy, ...s } = await start(settings)
  return {
    ...s,
    [Symbol.asyncDispose]: async () => {
      await s.admin.close()
      destroy()
    },
  }
}

export type TestDatabase = {
  /** a URL without a password, for the trusted role */
  url: string
  /** the same database as the role that needs a password, without it */
  passwordUrl: string
  name: string
  /** a client for the test's own checks */
  sql: SQL
  [Symbol.asyncDispose]: () => Promise<void>
}

/** A fresh, empty database on the shared server (or on `on`), dropped when disposed. */
export async function freshDatabase(on?: Server): Promise<TestDatabase> {
  const s = on ?? (await server())
  const name = `t_${process.pid}_${++count}`
  await s.admin.unsafe(`CREATE DATABASE ${name}`)
  const sql = new SQL(s.url(name))
  return {
    url: s.url(name),
    passwordUrl: s.url(name, PASSWORD_USER),
    name,
    sql,
    [Symbol.asyncDispose]: async () => {
      await sql.close()
      // A server a failed test left stopped goes as a whole (ownServer), with its databases.
      if (s.running()) await s.admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    },
  }
}
