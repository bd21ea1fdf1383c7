// Processes that start a piece of work at one instant, for the claims test and the fleet bench: each says
// "ready" once it has done its set-up (connected, read the graph), then waits for its stdin to close; the
// parent closes every stdin once all are ready, so their work overlaps from its first statement.

/** In a child: says it is ready and waits for the go. */
export async function ready(): Promise<void> {
  process.stdout.write("ready\n")
  await Bun.stdin.text()
}

/**
 * Spawns `bun <argv>` for each argv, lets them all go at once when every one is ready, and waits for them:
 * the wall time from the go to the last exit, and what each printed after "ready". A child that fails throws.
 */
export async function together(argvs: string[][]): Promise<{ ms: number; outputs: string[] }> {
  const procs = argvs.map((argv) => Bun.spawn([process.execPath, ...argv], { stdin: "pipe", stdout: "pipe", stderr: "pipe" }))
  const readers = procs.map((p) => p.stdout.getReader())
  const outs = procs.map(() => "")
  const decoder = new TextDecoder()
  const failed = async (i: number) => new Error(`bun ${argvs[i].join(" ")} failed (${await procs[i].exited}): ${await new Response(procs[i].stderr).text()}`)
  const read = async (i: number, until?: string) => {
    while (until === undefined || !outs[i].includes(until)) {
      const { value, done } = await readers[i].read()
      if (done) {
        if (until === undefined) return
        throw await failed(i)
      }
      outs[i] += decoder.decode(value, { stream: true })
    }
  }
  await Promise.all(procs.map((_, i) => read(i, "ready\n")))
  const start = performance.now()
  for (const p of procs) p.stdin.end()
  await Promise.all(procs.map((_, i) => read(i)))
  const codes = await Promise.all(procs.map((p) => p.exited))
  const ms = performance.now() - start
  for (const [i, code] of codes.entries()) if (code !== 0) throw await failed(i)
  return { ms, outputs: outs.map((o) => o.slice(o.indexOf("ready\n") + "ready\n".length)) }
}
