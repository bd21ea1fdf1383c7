// `flow` inside a sandbox (FLOW_DOOR set): the command goes through the door to the run (lib/sandbox/door.ts),
// which runs it outside and sends back its output and exit code, printed here as if run here.
import type { Ctx } from "../cli/context"
import { Exit, FlowError } from "../cli/errors"
import type { RunResult } from "../cli/proc"

export async function throughDoor(ctx: Ctx, door: string, args: string[]): Promise<number> {
  const reply = await new Promise<string>((resolve, reject) => {
    let text = ""
    Bun.connect({
      unix: door,
      socket: {
        open: (socket) => void socket.write(`${JSON.stringify({ args, cwd: ctx.cwd })}\n`),
        data: (_socket, chunk) => void (text += Buffer.from(chunk).toString("utf8")),
        close: () => resolve(text),
        error: (_socket, e) => reject(e),
      },
    }).catch(reject)
  }).catch((e: unknown) => {
    throw new FlowError(
      `cannot reach the run through the sandbox's door ${door}: ${(e as Error).message}`,
      Exit.failure,
      "is the run still going? the door closes with the agent's turn",
    )
  })
  let result: RunResult
  try {
    result = JSON.parse(reply) as RunResult
  } catch {
    throw new FlowError(`the run closed the sandbox's door ${door} without an answer`, Exit.failure, "see the run's log ('flow log')")
  }
  ctx.stdout(result.stdout)
  ctx.stderr(result.stderr)
  return result.code
}
