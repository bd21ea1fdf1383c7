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

/** An expected failure: flow.ts prints `error <message>` (and `hint <hint>`) and exits with `exit`. */
export class FlowError extends Error {
  override readonly name = "FlowError"
  constructor(
    message: string,
    readonly exit: Exit = Exit.failure,
    readonly hint?: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/** A usage error (bad flag, missing argument): exit 2. */
export function usage(message: string, hint?: string): FlowError {
  return new FlowError(message, Exit.usage, hint)
}
