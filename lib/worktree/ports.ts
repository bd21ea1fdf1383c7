// Free TCP ports for tasks (flow.yaml `ports`): each task gets a block of consecutive ports, as FLOW_PORT,
// FLOW_PORT_1, ..., so that two agents that start the app do not fight over port 3000.
//
// A port is handed out only when two things hold at that moment: nothing on the machine listens on it (a
// bind probe on the IPv4 and IPv6 wildcard addresses, which conflict with any listener on the port), and no
// task of any flow run holds it. The second is a lock file per port in one folder shared by every flow on
// the machine (FLOW_PORTS_DIR, default <tmp>/flow-ports), taken with lib/store/lock.ts: the file names the
// run's pid and start time, so a run that died leaves locks the next one takes over. Two runs of different
// projects therefore never hand out the same port at once. A port stays held until its task's worker ends.
import { chmodSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { FlowError } from "../cli/errors"
import { acquire, lockHolder } from "../store/lock"

/** Where blocks are looked for: above the usual development ports, below the ephemeral range of Linux (32768-60999) and macOS (49152-). */
export const PORT_RANGE = { first: 20_000, last: 32_767 }

/** A task's ports, held until `release` (once is enough; more are no-ops). */
export type PortLease = { ports: number[]; release: () => void }

/** The environment a task's ports are given in: FLOW_PORT (the first), FLOW_PORT_1, FLOW_PORT_2, ... */
export function portEnv(ports: readonly number[]): Record<string, string> {
  return Object.fromEntries(ports.map((p, i) => [i === 0 ? "FLOW_PORT" : `FLOW_PORT_${i}`, String(p)]))
}

/**
 * A block of `count` consecutive ports, each free on this machine when handed out and held by no other task
 * of any flow run (the module comment); `owner` is recorded in the locks (who holds a port, for a person who
 * looks). A FlowError when the range has no such block.
 */
export async function leasePorts(dir: string, count: number, owner: string, range = PORT_RANGE): Promise<PortLease> {
  openFolder(dir)
  let first = range.first
  while (first + count - 1 <= range.last) {
    const held: (() => void)[] = []
    let failed: number | undefined
    for (let port = first; port < first + count; port++) {
      const release = await tryLock(join(dir, String(port)), owner)
      // Locked first, then probed: a port probed free and locked after could have been taken between.
      if (release && bindable(port)) {
        held.push(release)
        continue
      }
      release?.()
      failed = port
      break
    }
    if (failed === undefined) {
      const ports = Array.from({ length: count }, (_, i) => first + i)
      let released = false
      return {
        ports,
        release: () => {
          if (released) return
          released = true
          for (const r of held) r()
        },
      }
    }
    for (const r of held) r()
    first = failed + 1
  }
  throw new FlowError(
    `no block of ${count} free TCP port${count === 1 ? "" : "s"} between ${range.first} and ${range.last}: each is in use or held by another task`,
    undefined,
    "stop what listens there, or ask for fewer ports (flow.yaml ports)",
  )
}

/** The lock of one port, or undefined when a live task of some run holds it. */
async function tryLock(file: string, owner: string): Promise<(() => void) | undefined> {
  try {
    return await acquire(file, { timeoutMs: 0, command: owner })
  } catch (e) {
    if (lockHolder(file)) return undefined
    throw e
  }
}

/**
 * Whether a listener could bind the port now, on IPv4 and IPv6: binding the wildcard address fails while
 * anything listens on the port on any address of that family. A machine without IPv6 is judged on IPv4.
 */
export function bindable(port: number): boolean {
  for (const hostname of ["0.0.0.0", "::"]) {
    try {
      Bun.listen({ hostname, port, socket: { data() {} } }).stop(true)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (hostname === "::" && (code === "EAFNOSUPPORT" || code === "EADDRNOTAVAIL")) continue
      return false
    }
  }
  return true
}

/** The shared folder of port locks; made writable by every user (sticky, like /tmp) when flow makes it. */
function openFolder(dir: string): void {
  try {
    if (mkdirSync(dir, { recursive: true }) !== undefined) chmodSync(dir, 0o1777)
  } catch (e) {
    throw new FlowError(`cannot use ${dir} for the locks of TCP ports: ${(e as Error).message}`, undefined, "set FLOW_PORTS_DIR to a folder you may write", {
      cause: e,
    })
  }
}
