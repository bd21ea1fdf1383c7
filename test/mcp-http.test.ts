// `flow mcp --http`: loopback only, and the inspector's rules (docs/VIEW.md, docs/MCP.md): a request must name
// this server in its Host (DNS rebinding), come from no foreign Origin, and carry the bearer token printed at
// start (or FLOW_MCP_TOKEN). Tested with plain requests, and with the SDK's client where a session is needed.
import { expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { call, startHttp } from "./mcp-helpers"
import { flow, tasksYaml, tempRepo } from "./helpers"

const project = () => tempRepo({ "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "x" }]) })

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
}

/** A raw initialize request with these headers (a Host header replaces the one fetch would send). */
function post(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(INIT),
  })
}

test.concurrent("it prints the address and a fresh token; requests without the token, with another Host or a foreign Origin are refused", async () => {
  await using dir = await project()
  const server = await startHttp(dir.path)
  try {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    expect(server.token).toMatch(/^[0-9a-f]{64}$/)
    const port = new URL(server.url).port
    const good = { authorization: `Bearer ${server.token}` }

    const none = await post(server.url, {})
    expect([none.status, none.headers.get("www-authenticate"), ((await none.json()) as { error: { message: string } }).error.message]).toEqual([
      401,
      'Bearer realm="flow mcp"',
      "missing token: send 'Authorization: Bearer <token>'",
    ])
    expect((await post(server.url, { authorization: `Bearer ${"0".repeat(64)}` })).status).toBe(401)
    expect((await post(server.url, { authorization: server.token })).status).toBe(401)
    // The right token anywhere but the Authorization header (the inspector's other places) does not count.
    for (const elsewhere of [post(`${server.url}?token=${server.token}`, {}), post(server.url, { "x-flow-token": server.token })]) {
      const r = await elsewhere
      expect([r.status, ((await r.json()) as { error: { message: string } }).error.message]).toEqual([
        401,
        "the token is taken only as 'Authorization: Bearer <token>', not in ?token= or x-flow-token",
      ])
    }
    // DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 sends its own Host.
    const rebound = await post(server.url, { ...good, host: `evil.example:${port}` })
    expect(rebound.status).toBe(403)
    expect(((await rebound.json()) as { error: { message: string } }).error.message).toBe(
      `refused a request for host 'evil.example:${port}': only http://127.0.0.1:${port} is served`,
    )
    expect((await post(server.url, { ...good, origin: "http://evil.example" })).status).toBe(403)
    expect((await post(server.url, { ...good, origin: `http://localhost:${port}`, host: `localhost:${port}` })).status).toBe(200)
    expect((await post(server.url.replace("/mcp", "/other"), good)).status).toBe(404)
    expect((await post(server.url, good)).status).toBe(200)
  } finally {
    expect(await server.stop()).toBe(0)
  }
  expect(server.stderr()).toContain("flow mcp: missing token: send 'Authorization: Bearer <token>'\n")
})

test.concurrent("FLOW_MCP_TOKEN is used as the token and not printed; a short one is refused", async () => {
  await using dir = await project()
  const token = "s3cret-".repeat(6)
  const server = await startHttp(dir.path, { FLOW_MCP_TOKEN: token })
  const client = new Client({ name: "flow-test", version: "1" })
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }))
    expect(await call(client, "flow_done", { task_id: "api" })).toMatchObject({ changes: [{ id: "api", from: "todo", to: "done" }] })
    await client.close()
  } finally {
    expect(await server.stop()).toBe(0)
  }
  expect(server.stderr()).not.toContain(token)
  const short = await flow(dir.path, ["mcp", "--http", "0"], { env: { FLOW_MCP_TOKEN: "short" } })
  expect(short).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: FLOW_MCP_TOKEN is shorter than 32 characters\nhint: use a long random secret, for example: openssl rand -hex 32\n",
  })
})

test.concurrent("a bad --http port is a usage error; a port in use is said", async () => {
  await using dir = await project()
  expect(await flow(dir.path, ["mcp", "--http", "80a"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: --http must be a port number from 0 to 65535 (was '80a')\n",
  })
  const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") })
  try {
    const r = await flow(dir.path, ["mcp", "--http", String(taken.port)])
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 1,
      stderr: `error: port ${taken.port} on 127.0.0.1 is in use\nhint: pass another port to --http, or 0 for any free one\n`,
    })
  } finally {
    taken.stop(true)
  }
})
