// The agent CLIs flow can drive, by their flow.yaml name.
import { Exit, FlowError } from "../errors"
import { closest } from "../suggest"
import type { Adapter } from "./types"

const ADAPTERS: Record<string, Adapter> = {}

/** Every CLI name flow.yaml may use: the adapters and the built-in offline `script` agent. */
export const KNOWN_CLIS = ["script", ...Object.keys(ADAPTERS)]

export function adapterFor(cli: string): Adapter {
  const adapter = Object.hasOwn(ADAPTERS, cli) ? ADAPTERS[cli] : undefined
  if (adapter) return adapter
  const near = closest(cli, KNOWN_CLIS)
  throw new FlowError(`no agent CLI named '${cli}'`, Exit.usage, `${near ? `did you mean '${near}'? ` : ""}known: ${KNOWN_CLIS.join(", ")}`)
}
