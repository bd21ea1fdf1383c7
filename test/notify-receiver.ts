// A real HTTP receiver on loopback standing in for a webhook, Slack or ntfy in the notification tests: it
// records every request (path, headers, body) and answers as told: at once, after failing `fail` times, or never.
export type Received = { path: string; headers: Record<string, string>; body: string; status: number | "none" }

export type Receiver = {
  url: (path: string) => string
  requests: Received[]
  /** the requests it accepted (2xx) */
  accepted: () => Received[]
  /** resolves once `cond` holds of the requests so far */
  until: (cond: (requests: Received[]) => boolean) => Promise<void>
  [Symbol.asyncDispose]: () => Promise<void>
}

export function receiver(answer: { fail?: number; never?: boolean } = {}): Receiver {
  const requests: Received[] = []
  const waiters: { cond: (r: Received[]) => boolean; resolve: () => void }[] = []
  const hung: (() => void)[] = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body = await req.text()
      const failing = requests.length < (answer.fail ?? 0)
      const status = answer.never ? "none" : failing ? 500 : 200
      requests.push({ path: new URL(req.url).pathname, headers: Object.fromEntries(req.headers), body, status })
      for (const w of waiters.filter((w) => w.cond(requests))) w.resolve()
      if (answer.never) return new Promise<Response>((resolve) => hung.push(() => resolve(new Response("late"))))
      return new Response(failing ? "try later" : "ok", { status: status as number })
    },
  })
  return {
    url: (path) => `http://127.0.0.1:${server.port}${path}`,
    requests,
    accepted: () => requests.filter((r) => r.status === 200),
    until: (cond) =>
      new Promise<void>((resolve) => {
        if (cond(requests)) return resolve()
        waiters.push({ cond, resolve })
      }),
    [Symbol.asyncDispose]: async () => {
      for (const h of hung) h()
      await server.stop(true)
    },
  }
}
