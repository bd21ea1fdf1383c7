// Blocks of free TCP ports for tasks (lib/worktree/ports.ts): consecutive, free on the machine when handed out,
// never held by two at once, a dead holder's lock taken over.
import { expect, test } from "bun:test"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { bindable, leasePorts, portEnv } from "../lib/worktree/ports"

/** A temp folder of port locks, and a stretch of ports that are free now (above what the runs' tests use). */
function setup(length: number) {
  const dir = mkdtempSync(join(tmpdir(), "flow-ports-"))
  let first = 30_000
  while (Array.from({ length }, (_, i) => first + i).some((p) => !bindable(p))) first += length
  return { dir, range: { first, last: first + length - 1 }, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) }
}

test("leases are consecutive blocks, disjoint while held, given again once released", async () => {
  using s = setup(6)
  const a = await leasePorts(s.dir, 2, "test a", s.range)
  const b = await leasePorts(s.dir, 3, "test b", s.range)
  expect([a.ports, b.ports]).toEqual([
    [s.range.first, s.range.first + 1],
    [s.range.first + 2, s.range.first + 3, s.range.first + 4],
  ])
  expect(portEnv(b.ports)).toEqual({ FLOW_PORT: String(b.ports[0]), FLOW_PORT_1: String(b.ports[1]), FLOW_PORT_2: String(b.ports[2]) })
  await expect(leasePorts(s.dir, 2, "test c", s.range)).rejects.toThrow(
    `no block of 2 free TCP ports between ${s.range.first} and ${s.range.last}: each is in use or held by another task`,
  )
  a.release()
  a.release() // twice is once
  expect((await leasePorts(s.dir, 2, "test d", s.range)).ports).toEqual(a.ports)
  b.release()
})

test("a port something listens on is skipped; a lock its dead holder left is taken over", async () => {
  using s = setup(4)
  const listener = Bun.listen({ hostname: "127.0.0.1", port: s.range.first, socket: { data() {} } })
  try {
    const dead = Bun.spawn(["true"])
    await dead.exited
    const lock = { pid: dead.pid, host: hostname(), command: "a run that died", since: "2026-01-01T00:00:00Z", token: "gone" }
    writeFileSync(join(s.dir, `${s.range.first + 1}.lock`), JSON.stringify(lock))
    const lease = await leasePorts(s.dir, 2, "test", s.range)
    expect(lease.ports).toEqual([s.range.first + 1, s.range.first + 2])
    lease.release()
  } finally {
    listener.stop(true)
  }
})
