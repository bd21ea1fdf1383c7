// `flow mcp` on stdio: the client starts flow as its subprocess and speaks JSON-RPC lines on its stdin and
// stdout, so nothing else may ever be written to that stdout.
import { Transform, type TransformCallback } from "node:stream"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js"
import type { Ctx } from "../cli/context"
import type { Project } from "../cli/project"
import { createServer } from "./server"

/** The largest message taken on stdio: the SDK's own bound (10 MiB), as the HTTP transport has its own (4 MiB). */
export const STDIO_MAX_MESSAGE = STDIO_DEFAULT_MAX_BUFFER_SIZE

/** Serves the project on `input` and `output` until the client closes `input` or `stop` aborts; in-flight calls are then cancelled. */
export async function serveStdio(
  project: Project,
  env: Ctx["env"],
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; stop: AbortSignal; log?: (line: string) => void },
): Promise<void> {
  const server = createServer(project, env)
  // The SDK's transport closes (and the server exits 0 without a word) on a message over its bound. Lines go
  // through a filter that answers an oversized one with an error, as HTTP answers 413, and serving goes on;
  // what passes it is never over the bound, so the SDK's own is lifted.
  const lines = new MessageLimit(STDIO_MAX_MESSAGE, (id) => {
    io.log?.(`flow mcp: ${tooLarge(STDIO_MAX_MESSAGE)}`)
    io.output.write(`${JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32000, message: tooLarge(STDIO_MAX_MESSAGE) } })}\n`)
  })
  io.input.pipe(lines)
  const transport = new StdioServerTransport(lines as never, io.output as never, { maxBufferSize: Number.POSITIVE_INFINITY })
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve
  })
  // The SDK's transport does not watch for the end of its input: a client that exits closes the pipe. The
  // filter ends after the last line it passed on was read, so that line is still served.
  const end = () => void transport.close()
  lines.once("end", end)
  io.stop.addEventListener("abort", end, { once: true })
  await server.connect(transport)
  await closed
  lines.off("end", end)
  io.input.unpipe(lines)
}

/** The words of the error, after the HTTP transport's (`Payload Too Large: Request body must not exceed ...`). */
function tooLarge(limit: number): string {
  return `Payload Too Large: a message on stdio must not exceed ${limit} bytes; it was dropped, and the server goes on`
}

/** How much of a dropped message's start and end is kept to find its id. */
const EDGE = 512

/**
 * Passes whole lines of at most `limit` bytes; a longer one is dropped as it arrives (never held whole), and
 * `dropped` is called with its request id when its first or last bytes show one (null otherwise: JSON-RPC's
 * id for a request whose id cannot be read).
 */
export class MessageLimit extends Transform {
  private parts: Buffer[] = []
  private size = 0
  private dropping: { head: Buffer; tail: Buffer } | undefined

  constructor(
    private readonly limit: number,
    private readonly dropped: (id: number | string | null) => void,
  ) {
    super()
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let start = 0
    for (;;) {
      const nl = chunk.indexOf(10, start)
      this.collect(chunk.subarray(start, nl < 0 ? chunk.length : nl))
      if (nl < 0) break
      this.endLine()
      start = nl + 1
    }
    done()
  }

  private collect(piece: Buffer): void {
    if (piece.length === 0) return
    if (this.dropping) {
      const end = piece.length >= EDGE ? piece.subarray(-EDGE) : Buffer.concat([this.dropping.tail, piece]).subarray(-EDGE)
      this.dropping.tail = Buffer.from(end)
      return
    }
    if (this.size + piece.length <= this.limit) {
      this.parts.push(piece)
      this.size += piece.length
      return
    }
    const all = Buffer.concat([...this.parts, piece])
    this.dropping = { head: Buffer.from(all.subarray(0, EDGE)), tail: Buffer.from(all.subarray(-EDGE)) }
    this.parts = []
    this.size = 0
  }

  private endLine(): void {
    if (this.dropping) {
      this.dropped(requestId(this.dropping.head.toString("utf8"), this.dropping.tail.toString("utf8")))
      this.dropping = undefined
      return
    }
    this.parts.push(Buffer.from("\n"))
    this.push(Buffer.concat(this.parts))
    this.parts = []
    this.size = 0
  }
}

const STRING = String.raw`"(?:[^"\\]|\\.)*"`
const ID = String.raw`(-?\d+|${STRING})`
const SCALAR = String.raw`(?:${STRING}|-?\d[\d.eE+-]*|true|false|null)`
// The id as the top-level object's first members have it (only scalars before it), or as its last member
// (the line's closing brace right after it). The SDK's clients write it last, after the params.
const FIRST = new RegExp(String.raw`^\s*\{(?:\s*${STRING}\s*:\s*${SCALAR}\s*,)*\s*"id"\s*:\s*${ID}\s*[,}]`)
const LAST = new RegExp(String.raw`,\s*"id"\s*:\s*${ID}\s*\}\s*$`)

/** The id of a JSON-RPC request read from its first and last bytes alone; null when neither shows it. */
export function requestId(head: string, tail: string): number | string | null {
  const found = FIRST.exec(head)?.[1] ?? LAST.exec(tail.replace(/\r$/, ""))?.[1]
  if (found === undefined) return null
  try {
    return JSON.parse(found) as number | string
  } catch {
    return null
  }
}
