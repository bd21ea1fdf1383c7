import { Hint, SHELL } from "./hint"

/** Exit codes of every flow command (STYLE.md section 4). */
export const Exit = {
  ok: 0,
  failure: 1,
  usage: 2,
  invalid: 3,
  tasksFailed: 4,
  cancelled: 130,
} as const
export type Exit = (typeof Exit)[keyof typeof Exit]

/**
 * An expected failure: flow.ts prints `error <message>` (and `hint <hint>`) and exits with `exit`. A hint that
 * names flow commands is given as a Hint (lib/cli/hint.ts): `hint` is it in a shell's words, `parts` for a
 * front end that words commands otherwise (flow mcp names its tools).
 */
export class FlowError extends Error {
  override readonly name = "FlowError"
  readonly hint?: string
  readonly parts?: Hint
  constructor(
    message: string,
    readonly exit: Exit = Exit.failure,
    hint?: string | Hint,
    options?: ErrorOptions,
  ) {
    super(message, options)
    if (hint instanceof Hint) {
      this.parts = hint
      this.hint = hint.in(SHELL)
    } else this.hint = hint
  }
}

/** A usage error (bad flag, missing argument): exit 2. */
export function usage(message: string, hint?: string): FlowError {
  return new FlowError(message, Exit.usage, hint)
}
